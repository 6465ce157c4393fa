"""The JSON converter's compiled encoders give the generic walk's bytes, and its errors, exactly."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.converters import JsonConverter, converter_from
from sluice.connect.converters.json_compiled import dumps
from tests.connect.test_converters import schemas, values_of

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=2),
)


def wrong_or_right(schema: Schema) -> st.SearchStrategy[Any]:
    """A value of ``schema``, sometimes with a wrong value somewhere inside."""
    if schema.type == "struct":
        fields = st.fixed_dictionaries({f.name: wrong_or_right(f.schema) for f in schema.fields})
        equal = dataclasses.replace(schema)  # equal, not the same object
        return st.one_of(
            junk,
            fields.map(lambda values: Struct(schema, values)),
            fields.map(lambda values: Struct(equal, values)),
        )
    return st.one_of(values_of(schema), junk)


def converter(**config: str) -> JsonConverter:
    made = converter_from("json", config, False)
    assert isinstance(made, JsonConverter)
    return made


def generic(conv: JsonConverter, schema: Schema, value: Any) -> Any:
    """What ``from_connect`` wrote before the compiled path: the generic walk and json.dumps."""
    try:
        payload = conv._to_json(schema, value)
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        if not conv.schemas_enable:
            return text.encode()
        return f'{{"schema":{conv._schema_text_of(schema)},"payload":{text}}}'.encode()
    except Exception as error:
        return type(error), str(error)


def written(conv: JsonConverter, schema: Schema, value: Any) -> Any:
    try:
        return conv.from_connect("t", schema, value)
    except Exception as error:
        return type(error), str(error)


CONVERTERS = [
    converter(),
    converter(**{"schemas.enable": "false"}),
    converter(**{"replace.null.with.default": "false"}),
]


@pytest.mark.parametrize("conv", CONVERTERS, ids=["enveloped", "plain", "keep-nulls"])
@settings(max_examples=400)
@given(schemas.flatmap(lambda schema: st.tuples(st.just(schema), st.lists(wrong_or_right(schema)))))
def test_compiled_path_writes_what_the_generic_walk_writes(
    conv: JsonConverter, case: tuple[Schema, list[Any]]
) -> None:
    schema, values = case
    for value in values * 2:  # the first sight goes the generic way, the next ones compiled
        assert written(conv, schema, value) == generic(conv, schema, value), value


DEFAULTS = Schema.struct(
    [
        Field("mode", Schema("string", optional=True, default="auto")),
        Field("count", Schema("int32", optional=True, default=7)),
        Field("inner", Schema.struct([Field("x", Schema("float64"))], optional=True)),
        Field("xs", Schema("array", value_schema=Schema("int8"))),
    ],
    name="D",
)


@pytest.mark.parametrize("conv", CONVERTERS, ids=["enveloped", "plain", "keep-nulls"])
@pytest.mark.parametrize(
    "values",
    [
        {"mode": None, "count": None, "inner": None, "xs": [1]},
        {"mode": "m", "count": 2**31, "inner": None, "xs": [1]},
        {"mode": "m", "count": 1, "inner": Struct(DEFAULTS.fields[2].schema, {"x": 1}), "xs": []},
        {"mode": "m", "count": 1, "inner": None, "xs": [300]},
        {"mode": 5, "count": True, "inner": None, "xs": [1]},
        {"mode": "é\u2028\x00", "count": -1, "inner": None, "xs": [-128]},
    ],
)
def test_defaults_ranges_and_wrong_types(conv: JsonConverter, values: dict[str, Any]) -> None:
    value = Struct(DEFAULTS, values)
    for _ in range(3):
        assert written(conv, DEFAULTS, value) == generic(conv, DEFAULTS, value)


@pytest.mark.parametrize(
    ("payload", "floats"),
    [
        ({"a": 'x\u2028\x7f\x1f"\\', "b": [1, None, True]}, False),
        ({"big": 2**64}, False),  # past orjson's integers
        ({"s": "\ud800"}, False),  # a lone surrogate: UTF-8 cannot hold it
        ([1e-07, 1e16, 0.1], True),  # floats: json.dumps writes them (orjson: 1e-7)
    ],
)
def test_dumps_is_json_dumps(payload: Any, floats: bool) -> None:
    def outcome(write: Any) -> Any:
        try:
            return write()
        except Exception as error:
            return type(error)

    expected = outcome(
        lambda: json.dumps(
            payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        ).encode()
    )
    assert outcome(lambda: dumps(payload, floats)) == expected


@pytest.mark.parametrize("conv", CONVERTERS, ids=["enveloped", "plain", "keep-nulls"])
@settings(max_examples=200)
@given(schemas.flatmap(lambda schema: st.tuples(st.just(schema), st.lists(wrong_or_right(schema)))))
def test_bulk_writes_what_one_by_one_writes(
    conv: JsonConverter, case: tuple[Schema, list[Any]]
) -> None:
    schema, values = case
    expected = [generic(conv, schema, value) for value in values]
    failures = [e for e in expected if isinstance(e, tuple)]
    try:
        got: Any = conv.from_connect_all("t", schema, values)
    except Exception as error:
        assert failures, f"no value fails alone, the bulk raised {error!r}"
        assert (type(error), str(error)) == failures[0]
        return
    assert not failures, f"{failures[0]} expected, the bulk gave {got!r}"
    assert got == expected
