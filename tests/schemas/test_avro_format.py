"""The AVRO format: parsing as Java's Schema.Parser, Java's toString, Confluent's normalization,
and the schemas it refuses (Avro's resolution rules: test_avro_compatibility.py)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.schemas.formats import InvalidSchemaError, format_named
from sluice.schemas.formats.avro import FORMAT
from tests.schemas.avro_schemas import PRIMITIVES, avro, record


def test_format_named_finds_avro() -> None:
    assert format_named("avro") is FORMAT
    assert FORMAT.name == "AVRO"
    assert avro('"int"').schema_type == "AVRO"


# --- canonical text: Java's Schema.toString() ---------------------------------------------------

CANONICAL = [
    ('  "int" ', '"int"'),
    ('{"type": "int"}', '"int"'),
    ('{"type": "string", "logicalType": "uuid"}', '{"type":"string","logicalType":"uuid"}'),
    (
        '{"fields": [{"type": "int", "name": "a", "doc": "A", "default": 1, "order": "descending",'
        ' "aliases": ["b"], "x-prop": true}], "name": "com.acme.R", "type": "record",'
        ' "doc": "R doc", "aliases": ["com.acme.Old", "other.Older"], "custom": {"k": [1]}}',
        '{"type":"record","name":"R","namespace":"com.acme","doc":"R doc","fields":[{"name":"a",'
        '"type":"int","doc":"A","default":1,"order":"descending","aliases":["b"],"x-prop":true}],'
        '"custom":{"k":[1]},"aliases":["Old","other.Older"]}',
    ),
    (  # a named type in full once, then by name; the namespace written where it changes
        {
            "type": "record",
            "name": "a.R",
            "fields": [
                {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}},
                {"name": "f", "type": ["null", "E"], "default": None},
                {"name": "g", "type": {"type": "fixed", "name": "b.F", "size": 2}},
                {"name": "h", "type": {"type": "array", "items": "b.F"}},
            ],
        },
        '{"type":"record","name":"R","namespace":"a","fields":[{"name":"e","type":{"type":"enum",'
        '"name":"E","symbols":["X"]}},{"name":"f","type":["null","E"],"default":null},{"name":"g",'
        '"type":{"type":"fixed","name":"F","namespace":"b","size":2}},{"name":"h","type":'
        '{"type":"array","items":"b.F"}}]}',
    ),
    (
        '{"type": "enum", "name": "E", "symbols": ["A", "B"], "default": "A", "doc": "d"}',
        '{"type":"enum","name":"E","doc":"d","symbols":["A","B"],"default":"A"}',
    ),
    ('{"type": "map", "values": "long"}', '{"type":"map","values":"long"}'),
    ('["null", "string"]', '["null","string"]'),
    (
        '{"type": "record", "name": "Ünï", "fields": []}',
        '{"type":"record","name":"Ünï","fields":[]}',
    ),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL)
def test_canonical_is_javas_to_string(text: Any, canonical: str) -> None:
    parsed = avro(text)
    assert parsed.canonical == canonical
    assert avro(parsed.canonical).canonical == canonical, "the canonical text is a fixed point"


def test_a_referenced_type_is_written_by_name_and_used() -> None:
    refs = {"com.acme.Money": '{"type":"fixed","name":"Money","namespace":"com.acme","size":8}'}
    order = avro(record("Order", {"name": "total", "type": "com.acme.Money"}), refs)
    assert order.canonical == (
        '{"type":"record","name":"Order","fields":[{"name":"total","type":"com.acme.Money"}]}'
    )
    assert order.record_names() == ["Order"]
    assert order.references == refs
    # the referenced type is the same in both: comparing two versions sees through it
    assert FORMAT.read_errors(order, avro(order.canonical, refs)) == []


def test_references_may_use_one_another_in_any_order() -> None:
    refs = {
        "B": json.dumps(record("B", {"name": "c", "type": "C"})),
        "C": '{"type":"enum","name":"C","symbols":["X"]}',
    }
    parsed = avro(record("A", {"name": "b", "type": "B"}), refs)
    assert parsed.record_names() == ["A"]


def test_record_names_lists_the_defined_named_types_top_level_first() -> None:
    parsed = avro(
        record("n.Top", {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A"]}})
    )
    assert parsed.record_names() == ["n.Top", "n.E"]
    assert avro('["null", "int"]').record_names() == []


# --- normalization: Confluent's AvroSchema.normalize() ------------------------------------------

SAME_WHEN_NORMALIZED = [
    (
        '{"type":"record","name":"R","namespace":"n","fields":[{"name":"a","type":"int"}]}',
        '{"fields":[{"type":{"type":"int"},"name":"a"}],"type":"record","name":"n.R"}',
    ),
    (
        '{"type":"record","name":"R","fields":[],"b":1,"a":2,"aliases":["Y","X"]}',
        '{"a":2,"type":"record","aliases":["X","Y"],"name":"R","b":1,"fields":[]}',
    ),
    (
        '{"type":"bytes","logicalType":"decimal","precision":4,"scale":2}',
        '{"scale":2,"precision":4,"type":"bytes","logicalType":"decimal"}',
    ),
]


@pytest.mark.parametrize(("one", "other"), SAME_WHEN_NORMALIZED)
def test_semantically_equal_schemas_normalize_to_one_text(one: str, other: str) -> None:
    assert avro(one).normalized().canonical == avro(other).normalized().canonical
    assert avro(one).normalized() == avro(other).normalized()


def test_normalized_keeps_docs_defaults_and_aliases() -> None:
    text = (
        '{"type":"record","name":"R","doc":"d","fields":[{"name":"a","type":["null","int"],'
        '"default":null,"doc":"fd","aliases":["z"]}],"aliases":["Q"]}'
    )
    normalized = json.loads(avro(text).normalized().canonical)
    assert normalized["doc"] == "d"
    assert normalized["aliases"] == ["Q"]
    assert normalized["fields"][0] == {
        "name": "a",
        "type": ["null", "int"],
        "doc": "fd",
        "default": None,
        "aliases": ["z"],
    }


def test_different_schemas_stay_different_when_normalized() -> None:
    one = avro(record("R", {"name": "a", "type": "int"})).normalized()
    other = avro(record("R", {"name": "a", "type": "long"})).normalized()
    assert one != other


# --- invalid schemas ---------------------------------------------------------------------------

INVALID = [
    ("", "Invalid JSON"),
    ('{"type":', "Invalid JSON"),
    ("3", "Not a schema"),
    ('"nope"', 'Undefined name: "nope"'),
    ('{"type": "record", "fields": []}', "No name in schema"),
    ('{"type": "record", "name": "R"}', "Record has no fields"),
    ('{"type": "record", "name": "1R", "fields": []}', "Illegal initial character: 1R"),
    ('{"type": "record", "name": "R", "fields": [{"name": "a-b", "type": "int"}]}', "a-b"),
    ('{"type": "record", "name": "R", "fields": [{"name": "a"}]}', "No field type"),
    (
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"},'
        ' {"name": "a", "type": "long"}]}',
        "Duplicate field a in record R",
    ),
    (
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]}',
        "Invalid default for field a",
    ),
    (
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["null", "int"],'
        ' "default": "x"}]}',
        'Invalid default for field a: "x" not a ["null","int"]',
    ),
    (
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int",'
        ' "order": "sideways"}]}',
        "Invalid order",
    ),
    ('{"type": "enum", "name": "E", "symbols": ["A", "A"]}', "Duplicate enum symbol: A"),
    ('{"type": "enum", "name": "E", "symbols": ["A"], "default": "B"}', "Enum Default: B"),
    ('{"type": "enum", "name": "E"}', "Enum has no symbols"),
    ('{"type": "fixed", "name": "F"}', "Invalid or no size"),
    ('{"type": "array"}', "Array has no items type"),
    ('{"type": "map"}', "Map has no values type"),
    ('["int", "int"]', "Duplicate in union:int"),
    ('["null", ["int"]]', "Nested union"),
    ('{"type": ["int"]}', "No type"),
    (
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": '
        '{"type": "record", "name": "R", "fields": []}}]}',
        "Can't redefine: R",
    ),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_invalid_schemas_are_refused_with_the_parsers_reason(text: str, message: str) -> None:
    with pytest.raises(InvalidSchemaError) as refused:
        FORMAT.parse(text, {})
    assert message in str(refused.value), f"expected {message!r} in {str(refused.value)!r}"


def test_a_union_default_may_be_of_any_branch_as_in_avro_1_12() -> None:
    parsed = avro(record("R", {"name": "a", "type": ["null", "int"], "default": 1}))
    assert parsed.canonical.endswith('"default":1}]}')


def test_a_null_enum_default_is_no_default() -> None:
    parsed = avro({"type": "enum", "name": "E", "symbols": ["A"], "default": None})
    assert parsed.canonical == '{"type":"enum","name":"E","symbols":["A"]}'


def test_a_schema_nested_too_deep_is_refused() -> None:
    deep: Any = "int"
    for _ in range(150):
        deep = {"type": "array", "items": deep}
    with pytest.raises(InvalidSchemaError, match="nested deeper than 100"):
        avro(deep)
    with pytest.raises(InvalidSchemaError, match="Invalid JSON"):
        FORMAT.parse("[" * 100_000, {})


def test_an_invalid_reference_is_named() -> None:
    with pytest.raises(InvalidSchemaError, match="Invalid reference B"):
        FORMAT.parse('"B"', {"B": '{"type": "fixed", "name": "B"}'})


def test_a_missing_reference_is_an_undefined_name() -> None:
    with pytest.raises(InvalidSchemaError, match='Undefined name: "B"'):
        FORMAT.parse(json.dumps(record("A", {"name": "b", "type": "B"})), {})


@settings(max_examples=300, deadline=None)
@given(st.text() | st.from_regex(r'\A[\[\]{}":, a-z0-9]*\Z'))
def test_garbage_never_raises_anything_but_invalid_schema(text: str) -> None:
    with contextlib.suppress(InvalidSchemaError):
        FORMAT.parse(text, {})


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.text(max_size=5)
        | st.sampled_from(PRIMITIVES),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "type",
                        "name",
                        "fields",
                        "items",
                        "values",
                        "symbols",
                        "size",
                        "default",
                        "namespace",
                        "aliases",
                        "order",
                        "doc",
                    ]
                ),
                inner | st.sampled_from(["record", "enum", "fixed", "array", "map", "R", "int"]),
                max_size=5,
            )
        ),
        max_leaves=12,
    )
)
def test_json_that_is_almost_a_schema_never_raises_anything_else(decoded: Any) -> None:
    with contextlib.suppress(InvalidSchemaError):
        FORMAT.parse(json.dumps(decoded), {})
