"""The JSON format: drafts and metaschema checks, references, canonical and normalized texts, and
Confluent's SchemaDiff rules (reader = the new schema, writer = the old one)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.schemas.formats import InvalidSchemaError, format_named
from sluice.schemas.formats.json_schema import FORMAT, JsonSchema


def js(schema: Any, references: dict[str, str] | None = None) -> JsonSchema:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return FORMAT.parse(text, references or {})


def diffs(reader: Any, writer: Any) -> list[tuple[str, str]]:
    return [(e.kind, e.path) for e in FORMAT.read_errors(js(reader), js(writer))]


def obj(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **extra}


STRING = {"type": "string"}
INTEGER = {"type": "integer"}


def test_format_named_finds_json() -> None:
    assert format_named("JSON") is FORMAT
    assert js(STRING).schema_type == "JSON"


# --- parsing -------------------------------------------------------------------------------------


def test_canonical_is_compact_json_in_the_order_given() -> None:
    parsed = js(
        '{ "type" : "object",\n  "properties": {"b": {"type": "string"}, "a": {} },'
        ' "title": "Ünï" }'
    )
    assert parsed.canonical == (
        '{"type":"object","properties":{"b":{"type":"string"},"a":{}},"title":"Ünï"}'
    )
    assert js(parsed.canonical) == parsed


def test_normalized_sorts_keys_and_keeps_arrays_in_order() -> None:
    one = js({"type": "object", "required": ["b", "a"], "properties": {"b": STRING, "a": INTEGER}})
    other = js(
        {"properties": {"a": INTEGER, "b": STRING}, "required": ["b", "a"], "type": "object"}
    )
    assert one != other
    assert one.normalized() == other.normalized()
    assert one.normalized().canonical == (
        '{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["b","a"],'
        '"type":"object"}'
    )


def test_record_names_is_the_title() -> None:
    assert js({"title": "Order", "type": "object"}).record_names() == ["Order"]
    assert js(STRING).record_names() == []


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "string"},
        {"$schema": "http://json-schema.org/draft-06/schema#", "type": "string"},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"},
        {"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "string"},
        {"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": [STRING]},
        True,
        {},
    ],
)
def test_every_supported_draft_parses(schema: Any) -> None:
    assert js(schema).canonical == json.dumps(schema, separators=(",", ":"))


def test_the_draft_decides_what_is_valid() -> None:
    # draft 4's exclusiveMaximum is a boolean, draft 7's a number
    draft4 = "http://json-schema.org/draft-04/schema#"
    js({"$schema": draft4, "maximum": 3, "exclusiveMaximum": True})
    with pytest.raises(InvalidSchemaError, match="True is not of type 'number'"):
        js({"maximum": 3, "exclusiveMaximum": True})


def test_a_validator_checks_instances_with_references_resolved() -> None:
    money = '{"type": "number", "minimum": 0}'
    order = js(obj({"total": {"$ref": "money.json"}}), {"money.json": money})
    validator = order.validator()
    assert validator.is_valid({"total": 3})
    assert not validator.is_valid({"total": -3})


INVALID = [
    ("", "Invalid JSON"),
    ("[]", "object or a boolean"),
    ('"string"', "object or a boolean"),
    ('{"type": "strin"}', "'strin' is not valid"),
    ('{"type": "object", "properties": {"a": {"type": 5}}}', "at #/properties/a/type"),
    ('{"minLength": -1}', "minLength"),
    ('{"required": "a"}', "required"),
    ('{"$ref": "missing.json"}', "cannot resolve $ref missing.json"),
    ('{"$ref": "#/definitions/nope"}', "cannot resolve $ref"),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_schemas_are_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError) as refused:
        FORMAT.parse(text, {})
    assert message in str(refused.value), f"expected {message!r} in {str(refused.value)!r}"


def test_a_schema_nested_too_deep_is_refused() -> None:
    deep: Any = STRING
    for _ in range(300):
        deep = {"type": "array", "items": deep}
    with pytest.raises(InvalidSchemaError, match="nested too deeply"):
        js(deep)
    with pytest.raises(InvalidSchemaError, match="Invalid JSON"):
        FORMAT.parse("[" * 100_000, {})


def test_an_invalid_reference_is_named() -> None:
    with pytest.raises(InvalidSchemaError, match=r"reference a\.json"):
        FORMAT.parse('{"$ref": "a.json"}', {"a.json": '{"type": 1}'})


@settings(max_examples=300, deadline=None)
@given(st.text() | st.from_regex(r'\A[\[\]{}":, a-z0-9$#/]*\Z'))
def test_garbage_never_raises_anything_but_invalid_schema(text: str) -> None:
    with contextlib.suppress(InvalidSchemaError):
        FORMAT.parse(text, {})


KEYWORDS = [
    "type",
    "properties",
    "items",
    "$ref",
    "enum",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "required",
    "additionalProperties",
    "minLength",
    "maxLength",
    "const",
    "definitions",
]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=4)
    | st.sampled_from(["string", "object", "#", "#/definitions/a", "a.json"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYWORDS), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, JSON_VALUES)
def test_almost_schemas_never_raise_anything_else(one: Any, other: Any) -> None:
    parsed = []
    for candidate in (one, other):
        with contextlib.suppress(InvalidSchemaError):
            parsed.append(FORMAT.parse(json.dumps(candidate), {}))
    if len(parsed) == 2:  # comparing any two valid schemas answers, never raises
        FORMAT.read_errors(parsed[0], parsed[1])
        FORMAT.read_errors(parsed[1], parsed[0])


# --- compatibility: Confluent's SchemaDiff --------------------------------------------------------

CASES: list[tuple[str, Any, Any, list[tuple[str, str]]]] = [
    ("same", obj({"a": STRING}), obj({"a": STRING}), []),
    ("title and description changed", {**STRING, "title": "x"}, {**STRING, "description": "y"}, []),
    ("type changed", obj({"a": INTEGER}), obj({"a": STRING}), [("TYPE_CHANGED", "#/properties/a")]),
    ("number narrowed to integer", INTEGER, {"type": "number"}, [("TYPE_NARROWED", "#/")]),
    ("integer extended to number", {"type": "number"}, INTEGER, []),
    ("type made nullable", {"type": ["string", "null"]}, STRING, []),
    ("nullable made required", STRING, {"type": ["string", "null"]}, [("TYPE_CHANGED", "#/")]),
    ("anything read as anything", {}, STRING, []),
    (
        "property added to an open content model",
        obj({"a": STRING, "b": INTEGER}),
        obj({"a": STRING}),
        [("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "#/properties/b")],
    ),
    (
        "property with an empty schema added to an open content model",
        obj({"a": STRING, "b": {}}),
        obj({"a": STRING}),
        [],
    ),
    ("property removed from an open content model", obj({}), obj({"a": STRING}), []),
    (
        "property removed from a closed content model",
        obj({}, additionalProperties=False),
        obj({"a": STRING}, additionalProperties=False),
        [("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", "#/properties/a")],
    ),
    (
        "optional property added to a closed content model",
        obj({"a": STRING, "b": INTEGER}, additionalProperties=False),
        obj({"a": STRING}, additionalProperties=False),
        [],
    ),
    (
        "required property added to a closed content model",
        obj({"a": STRING, "b": INTEGER}, additionalProperties=False, required=["b"]),
        obj({"a": STRING}, additionalProperties=False),
        [("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", "#/properties/b")],
    ),
    (
        "required property with a default added to a closed content model",
        obj({"b": {**INTEGER, "default": 0}}, additionalProperties=False, required=["b"]),
        obj({}, additionalProperties=False),
        [],
    ),
    (
        "property removed, covered by a partially open content model",
        obj({}, additionalProperties=STRING),
        obj({"a": STRING}, additionalProperties=STRING),
        [],
    ),
    (
        "property removed, not covered by a partially open content model",
        obj({}, additionalProperties=STRING),
        obj({"a": INTEGER}, additionalProperties=STRING),
        [
            ("TYPE_CHANGED", "#/properties/a"),
            ("PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/properties/a"),
        ],
    ),
    (
        "additional properties closed",
        obj({}, additionalProperties=False),
        obj({}),
        [("ADDITIONAL_PROPERTIES_REMOVED", "#/additionalProperties")],
    ),
    ("additional properties opened", obj({}), obj({}, additionalProperties=False), []),
    (
        "additional properties narrowed to a schema",
        obj({}, additionalProperties=STRING),
        obj({}),
        [("ADDITIONAL_PROPERTIES_NARROWED", "#/additionalProperties")],
    ),
    (
        "required attribute added",
        obj({"a": STRING}, required=["a"]),
        obj({"a": STRING}),
        [("REQUIRED_ATTRIBUTE_ADDED", "#/required/a")],
    ),
    ("required attribute removed", obj({"a": STRING}), obj({"a": STRING}, required=["a"]), []),
    (
        "max length decreased",
        {**STRING, "maxLength": 3},
        {**STRING, "maxLength": 5},
        [("MAX_LENGTH_DECREASED", "#/maxLength")],
    ),
    ("max length increased", {**STRING, "maxLength": 5}, {**STRING, "maxLength": 3}, []),
    (
        "min length added",
        {**STRING, "minLength": 1},
        STRING,
        [("MIN_LENGTH_ADDED", "#/minLength")],
    ),
    ("pattern removed", STRING, {**STRING, "pattern": "^a"}, []),
    (
        "pattern changed",
        {**STRING, "pattern": "^b"},
        {**STRING, "pattern": "^a"},
        [("PATTERN_CHANGED", "#/pattern")],
    ),
    (
        "maximum decreased",
        {**INTEGER, "maximum": 5},
        {**INTEGER, "maximum": 10},
        [("MAXIMUM_DECREASED", "#/maximum")],
    ),
    (
        "minimum increased",
        {**INTEGER, "minimum": 5},
        {**INTEGER, "minimum": 0},
        [("MINIMUM_INCREASED", "#/minimum")],
    ),
    ("minimum decreased", {**INTEGER, "minimum": 0}, {**INTEGER, "minimum": 5}, []),
    ("enum extended", {"enum": ["a", "b"]}, {"enum": ["a"]}, []),
    ("enum narrowed", {"enum": ["a"]}, {"enum": ["a", "b"]}, [("ENUM_ARRAY_NARROWED", "#/enum")]),
    ("enum changed", {"enum": ["c"]}, {"enum": ["a"]}, [("ENUM_ARRAY_CHANGED", "#/enum")]),
    (
        "array items changed",
        {"type": "array", "items": INTEGER},
        {"type": "array", "items": STRING},
        [("TYPE_CHANGED", "#/items")],
    ),
    (
        "max items decreased",
        {"type": "array", "maxItems": 2},
        {"type": "array", "maxItems": 3},
        [("MAX_ITEMS_DECREASED", "#/maxItems")],
    ),
    (
        "unique items added",
        {"type": "array", "uniqueItems": True},
        {"type": "array"},
        [("UNIQUE_ITEMS_ADDED", "#/uniqueItems")],
    ),
    (
        "tuple item added to an open array",
        {"type": "array", "items": [STRING, INTEGER]},
        {"type": "array", "items": [STRING]},
        [("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", "#/items/1")],
    ),
    (
        "oneOf extended",
        {"oneOf": [STRING, INTEGER]},
        {"oneOf": [STRING]},
        [],
    ),
    (
        "oneOf narrowed",
        {"oneOf": [STRING]},
        {"oneOf": [STRING, INTEGER]},
        [("SUM_TYPE_NARROWED", "#/")],
    ),
    (
        "anyOf subschema changed",
        {"anyOf": [STRING, {"type": "boolean"}]},
        {"anyOf": [STRING, INTEGER]},
        [("COMBINED_TYPE_SUBSCHEMAS_CHANGED", "#/")],
    ),
    ("oneOf relaxed to anyOf", {"anyOf": [STRING, INTEGER]}, {"oneOf": [STRING, INTEGER]}, []),
    (
        "anyOf tightened to allOf",
        {"allOf": [STRING, INTEGER]},
        {"anyOf": [STRING, INTEGER]},
        [("COMBINED_TYPE_CHANGED", "#/")],
    ),
    ("a type widened into a union", {"oneOf": [STRING, INTEGER]}, STRING, []),
    (
        "definitions through $ref",
        {"definitions": {"a": INTEGER}, **obj({"x": {"$ref": "#/definitions/a"}})},
        {"definitions": {"a": STRING}, **obj({"x": {"$ref": "#/definitions/a"}})},
        [("TYPE_CHANGED", "#/properties/x")],
    ),
    (
        "recursive definitions",
        {
            "definitions": {"n": obj({"next": {"$ref": "#/definitions/n"}, "v": INTEGER})},
            "$ref": "#/definitions/n",
        },
        {
            "definitions": {
                "n": obj({"next": {"$ref": "#/definitions/n"}, "v": {"type": "number"}})
            },
            "$ref": "#/definitions/n",
        },
        [("TYPE_NARROWED", "#/properties/v")],
    ),
    ("an enum constraint dropped", STRING, {**STRING, "enum": ["red"]}, []),
    (
        "an enum constraint added (everit reads it as a synthetic allOf)",
        {**STRING, "enum": ["red"]},
        STRING,
        [("TYPE_CHANGED", "#/")],
    ),
    ("duplicate subschemas collapse", {"allOf": [STRING, STRING]}, {"allOf": [STRING]}, []),
    ("a singleton oneOf becomes allOf", {"allOf": [STRING]}, {"oneOf": [STRING]}, []),
    (
        "items schema added",
        {"type": "array", "items": STRING},
        {"type": "array"},
        [("SCHEMA_ADDED", "#/items")],
    ),
    (
        "property added, covered by a pattern",
        obj(
            {"I_1": {"type": "number"}},
            additionalProperties=False,
            patternProperties={"^I_": {"type": "number"}},
        ),
        obj({}, additionalProperties=False, patternProperties={"^I_": {"type": "number"}}),
        [],
    ),
    (
        "property added, not covered by a pattern",
        obj({"I_1": STRING}, additionalProperties=False, patternProperties={"^I_": INTEGER}),
        obj({}, additionalProperties=False, patternProperties={"^I_": INTEGER}),
        [
            ("TYPE_CHANGED", "#/properties/I_1"),
            ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "#/properties/I_1"),
        ],
    ),
    (
        "a false property removed from a closed content model",
        obj({}, additionalProperties=False),
        obj({"gone": False}, additionalProperties=False),
        [],
    ),
    (
        "dependencies changed",
        {"dependencies": {"b": ["a"]}},
        {"dependencies": {"a": ["b"]}},
        [("DEPENDENCY_ARRAY_ADDED", "#/dependencies/b")],
    ),
    (
        "not narrowed",
        {"not": {"type": ["string", "integer"]}},
        {"not": STRING},
        [("NOT_TYPE_EXTENDED", "#/not")],
    ),
]


@pytest.mark.parametrize(
    ("reader", "writer", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_read_errors(reader: Any, writer: Any, expected: list[tuple[str, str]]) -> None:
    assert diffs(reader, writer) == expected


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {
            "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
            "$ref": "#/definitions/a",
        },
        {"anyOf": [{"$ref": "#"}, STRING]},
        obj({"self": {"$ref": "#"}}),
    ],
)
def test_self_references_are_compared_without_end(schema: Any) -> None:
    assert FORMAT.read_errors(js(schema), js(schema)) == []


def test_references_are_compared_through() -> None:
    refs_old = {"a.json": json.dumps(STRING)}
    refs_new = {"a.json": json.dumps(INTEGER)}
    old = js(obj({"x": {"$ref": "a.json"}}), refs_old)
    new = js(obj({"x": {"$ref": "a.json"}}), refs_new)
    assert [(e.kind, e.path) for e in FORMAT.read_errors(new, old)] == [
        ("TYPE_CHANGED", "#/properties/x")
    ]
    assert FORMAT.read_errors(new, js(new.canonical, refs_new)) == []


def test_messages_are_confluents() -> None:
    found = FORMAT.read_errors(js({**STRING, "maxLength": 3}), js({**STRING, "maxLength": 5}))
    assert [str(e) for e in found] == [
        'Found incompatible change: {errorType:"MAX_LENGTH_DECREASED", description:"The value at '
        "path '#/maxLength' in the reader schema is less than its value in the writer schema\"}"
    ]


# --- generated object schemas --------------------------------------------------------------------

LEAF = st.sampled_from([STRING, INTEGER, {"type": "number"}, {"type": "boolean"}, {}])
PROPERTIES = st.dictionaries(st.from_regex(r"\A[a-z]{1,6}\Z"), LEAF, max_size=6)


@settings(max_examples=100, deadline=None)
@given(PROPERTIES, st.booleans(), st.data())
def test_generated_objects_are_compatible_with_themselves(
    properties: dict[str, Any], closed: bool, data: st.DataObject
) -> None:
    required = data.draw(
        st.lists(st.sampled_from(sorted(properties)), unique=True) if properties else st.just([])
    )
    schema = obj(
        properties, required=required, **({"additionalProperties": False} if closed else {})
    )
    parsed = js(schema)
    assert FORMAT.read_errors(parsed, parsed) == []
    assert FORMAT.read_errors(parsed.normalized(), parsed) == []
    assert parsed.normalized().normalized() == parsed.normalized()


@settings(max_examples=100, deadline=None)
@given(PROPERTIES, LEAF)
def test_a_new_optional_property_is_forward_but_not_backward_on_an_open_model(
    properties: dict[str, Any], leaf: Any
) -> None:
    old = js(obj(properties))
    new = js(obj({**properties, "zz_new": leaf}))
    backward = [e.kind for e in FORMAT.read_errors(new, old)]
    assert backward == ([] if leaf == {} else ["PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"])
    assert FORMAT.read_errors(old, new) == []  # the old reader: the property was removed
