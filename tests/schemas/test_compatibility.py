"""Compatibility levels as Confluent's CompatibilityChecker applies them, message for message."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.schemas.compatibility import (
    MAX_SCHEMA_SIZE_FOR_LOGGING,
    CompatibilityLevel,
    InvalidCompatibilityLevelError,
    check,
)
from sluice.schemas.formats import ParsedSchema, format_named

AVRO = format_named("AVRO")
JSON = format_named("JSON")
L = CompatibilityLevel


def avro(*fields: dict[str, Any]) -> ParsedSchema:
    return AVRO.parse(json.dumps({"type": "record", "name": "R", "fields": list(fields)}), {})


A = {"name": "a", "type": "int"}
B_DEFAULT = {"name": "b", "type": "string", "default": ""}
B_REQUIRED = {"name": "b", "type": "string"}

V1 = avro(A)
V2_ADDS_WITH_DEFAULT = avro(A, B_DEFAULT)
V2_ADDS_REQUIRED = avro(A, B_REQUIRED)
V2_DROPS_A = avro()
V2_DROPS_A_WITH_DEFAULT = avro({**A, "default": 0})


@pytest.mark.parametrize("name", [level.value for level in L])
def test_every_level_parses_in_any_case(name: str) -> None:
    assert L.parse(name) is L(name)
    assert L.parse(name.lower()) is L(name)


@pytest.mark.parametrize("name", ["", "sideways", "FULLTRANSITIVE", "backward-transitive"])
def test_an_unknown_level_is_refused_with_confluents_message(name: str) -> None:
    with pytest.raises(InvalidCompatibilityLevelError, match="Valid values are none, backward"):
        L.parse(name)


def test_blanks_around_a_level_are_forgiven() -> None:
    assert L.parse(" backward\n") is L.BACKWARD


def enum(*symbols: str) -> dict[str, Any]:
    return {"name": "e", "type": {"type": "enum", "name": "E", "symbols": list(symbols)}}


Found = list[tuple[str, str]]
OK: Found = []

# (old schema, new schema, what each level finds: (errorType, path) of every incompatibility)
TABLE: list[tuple[str, ParsedSchema, ParsedSchema, dict[CompatibilityLevel, Found]]] = [
    (
        "add a field with a default",
        V1,
        V2_ADDS_WITH_DEFAULT,
        {L.BACKWARD: OK, L.FORWARD: OK, L.FULL: OK},
    ),
    (
        "add a field without a default",
        V1,
        V2_ADDS_REQUIRED,
        {
            L.BACKWARD: [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
            L.FORWARD: OK,
            L.FULL: [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")],
        },
    ),
    (
        "remove a field without a default",
        V1,
        V2_DROPS_A,
        {
            L.BACKWARD: OK,
            L.FORWARD: [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")],
            L.FULL: [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")],
        },
    ),
    (
        "remove a field that had a default",
        V2_DROPS_A_WITH_DEFAULT,
        V2_DROPS_A,
        {L.BACKWARD: OK, L.FORWARD: OK, L.FULL: OK},
    ),
    (
        "promote int to long",
        V1,
        avro({"name": "a", "type": "long"}),
        {
            L.BACKWARD: OK,
            L.FORWARD: [("TYPE_MISMATCH", "/fields/0/type")],
            L.FULL: [("TYPE_MISMATCH", "/fields/0/type")],
        },
    ),
    (
        "add an enum symbol",
        avro(enum("A")),
        avro(enum("A", "B")),
        {
            L.BACKWARD: OK,
            L.FORWARD: [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")],
            L.FULL: [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")],
        },
    ),
    (
        "widen a union",
        avro({"name": "u", "type": ["null", "int"]}),
        avro({"name": "u", "type": ["null", "int", "string"]}),
        {
            L.BACKWARD: OK,
            L.FORWARD: [("MISSING_UNION_BRANCH", "/fields/0/type/2")],
            L.FULL: [("MISSING_UNION_BRANCH", "/fields/0/type/2")],
        },
    ),
    (
        "change a type both ways",
        V1,
        avro({"name": "a", "type": "string"}),
        {
            L.BACKWARD: [("TYPE_MISMATCH", "/fields/0/type")],
            L.FORWARD: [("TYPE_MISMATCH", "/fields/0/type")],
            L.FULL: [("TYPE_MISMATCH", "/fields/0/type"), ("TYPE_MISMATCH", "/fields/0/type")],
        },
    ),
]


def found(lines: list[str]) -> Found:
    """The (errorType, path) of each incompatibility line of a 409 answer."""
    pairs = []
    for line in lines:
        kind, path = re.search(r"errorType:['\"](\w+)", line), re.search(r"path '([^']*)'", line)
        if kind and path:
            pairs.append((kind[1], path[1]))
    return pairs


@pytest.mark.parametrize(
    ("old", "new", "expected"), [case[1:] for case in TABLE], ids=[case[0] for case in TABLE]
)
def test_levels(
    old: ParsedSchema, new: ParsedSchema, expected: dict[CompatibilityLevel, Found]
) -> None:
    for level, incompatibilities in expected.items():
        for variant in (level, L(f"{level.value}_TRANSITIVE")):
            lines = check(AVRO, new, [old], variant)
            assert found(lines) == incompatibilities, f"{variant}: {lines}"
            assert bool(lines) == bool(incompatibilities), f"{variant}: {lines}"
    assert check(AVRO, new, [old], L.NONE) == []


def test_json_schema_levels() -> None:
    old = JSON.parse('{"type": "object", "properties": {"a": {"type": "string"}}}', {})
    new = JSON.parse(
        '{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}', {}
    )
    added = [("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "#/properties/b")]
    assert found(check(JSON, new, [old], L.BACKWARD)) == added
    assert check(JSON, new, [old], L.FORWARD) == []
    assert found(check(JSON, new, [old], L.FULL_TRANSITIVE)) == added
    assert found(check(JSON, old, [new], L.FORWARD)) == added


def test_the_409_lines_are_confluents() -> None:
    lines = check(AVRO, V2_ADDS_REQUIRED, [V1], L.BACKWARD, versions=[1])
    assert lines == [
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path "
        "'/fields/1' in the new schema has no default value and is missing in the old schema', "
        "additionalInfo:'b'}",
        "{oldSchemaVersion: 1}",
        '{oldSchema: \'{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}\'}',
        "{validateFields: 'false', compatibility: 'BACKWARD'}",
    ]


def test_forward_names_the_old_schema_as_the_reader() -> None:
    lines = check(AVRO, V2_DROPS_A, [V1], L.FORWARD, versions=[4], validate_fields=True)
    assert lines[0] == (
        "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'a' at path "
        "'/fields/0' in the old schema has no default value and is missing in the new schema', "
        "additionalInfo:'a'}"
    )
    assert lines[1:] == [
        "{oldSchemaVersion: 4}",
        '{oldSchema: \'{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}\'}',
        "{validateFields: 'true', compatibility: 'FORWARD'}",
    ]


def test_full_reports_forward_first_and_the_old_schema_once_after_backward() -> None:
    old = AVRO.parse('"int"', {})
    new = AVRO.parse('"string"', {})
    lines = check(AVRO, new, [old], L.FULL, versions=[2])
    assert [line.split(",")[0] for line in lines] == [
        "{errorType:'TYPE_MISMATCH'",
        "{errorType:'TYPE_MISMATCH'",
        "{oldSchemaVersion: 2}",
        "{oldSchema: '\"int\"'}",
        "{validateFields: 'false'",
    ]
    assert "in the old schema does not match with the new schema" in lines[0]
    assert "in the new schema does not match with the old schema" in lines[1]


def test_non_transitive_levels_look_at_the_latest_version_only() -> None:
    # v1 has a required field that v2 dropped; v3 reads v2 but not v1
    v1 = avro(A)
    v2 = avro()
    v3 = avro({"name": "a", "type": "string", "default": ""})
    assert check(AVRO, v3, [v1, v2], L.BACKWARD) == []
    transitive = check(AVRO, v3, [v1, v2], L.BACKWARD_TRANSITIVE, versions=[1, 2])
    assert transitive[0].startswith("{errorType:'TYPE_MISMATCH'")
    assert "{oldSchemaVersion: 1}" in transitive
    assert transitive[-1] == "{validateFields: 'false', compatibility: 'BACKWARD_TRANSITIVE'}"


def test_transitive_stops_at_the_newest_failing_version() -> None:
    v1, v2 = avro(A), avro(A)
    lines = check(AVRO, V2_ADDS_REQUIRED, [v1, v2], L.BACKWARD_TRANSITIVE, versions=[1, 2])
    assert "{oldSchemaVersion: 2}" in lines and "{oldSchemaVersion: 1}" not in lines


def test_nothing_to_compare_with_is_compatible() -> None:
    assert check(AVRO, V1, [], L.FULL_TRANSITIVE) == []


def test_versions_must_match_the_schemas() -> None:
    with pytest.raises(ValueError, match="parallel"):
        check(AVRO, V1, [V1], L.BACKWARD, versions=[1, 2])


def test_a_different_schema_type_is_incompatible() -> None:
    old = JSON.parse('{"type": "string"}', {})
    assert check(AVRO, V1, [old], L.BACKWARD)[0] == "Incompatible because of different schema type"


def test_json_schema_lines_are_confluents() -> None:
    old = JSON.parse('{"type": "object", "properties": {"a": {"type": "string"}}}', {})
    new = JSON.parse('{"type": "object", "properties": {"a": {"type": "integer"}}}', {})
    assert check(JSON, new, [old], L.BACKWARD, versions=[3]) == [
        'Found incompatible change: {errorType:"TYPE_CHANGED", description:"A type at path '
        "'#/properties/a' is different between the new schema and the old schema\"}",
        "{oldSchemaVersion: 3}",
        '{oldSchema: \'{"type":"object","properties":{"a":{"type":"string"}}}\'}',
        "{validateFields: 'false', compatibility: 'BACKWARD'}",
    ]


def test_a_long_old_schema_is_truncated_as_confluent_does() -> None:
    fields = [{"name": f"f{i}", "type": "string", "doc": "x" * 50} for i in range(300)]
    old = AVRO.parse(json.dumps({"type": "record", "name": "R", "fields": fields}), {})
    new = AVRO.parse(
        json.dumps({"type": "record", "name": "R", "fields": [*fields, B_REQUIRED]}), {}
    )
    about = [line for line in check(AVRO, new, [old], L.BACKWARD) if line.startswith("{oldSchema")]
    assert about == [
        f"{{oldSchema: <truncated to {MAX_SCHEMA_SIZE_FOR_LOGGING} characters> "
        f"'{old.canonical[:MAX_SCHEMA_SIZE_FOR_LOGGING]}'}}"
    ]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.from_regex(r"\A[a-z]{1,5}\Z"), st.sampled_from(["int", "long", "string"])),
        max_size=5,
        unique_by=lambda f: f[0],
    ),
    st.sampled_from(list(L)),
)
def test_a_schema_is_compatible_with_itself_at_every_level(
    fields: list[tuple[str, str]], level: CompatibilityLevel
) -> None:
    schema = avro(*({"name": n, "type": t} for n, t in fields))
    assert check(AVRO, schema, [schema, schema], level) == []
