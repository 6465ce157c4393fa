"""The Avro converter's compiled mapping gives what ``AvroData``'s generic one gives (value for
value, on random Connect schemas), and the converter's bytes are confluent-kafka's
``AvroSerializer``'s on the Avro schema it registers."""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import json
from decimal import Decimal
from typing import Any

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.logical import date_schema, decimal_schema, time_schema, timestamp_schema
from sluice.connect.converters.schema_registry.avro_compiled import (
    compile_to_avro,
    compile_to_connect,
)
from sluice.connect.converters.schema_registry.avro_data import AvroData
from sluice.schemas.avro_codec import AvroCodec
from tests.connect.converters.converter_fixtures import avro_converter
from tests.schema_registry.conftest import RegistryProcess

_names = itertools.count()

LEAVES: dict[str, st.SearchStrategy[Any]] = {
    "int8": st.integers(-128, 127),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "float32": st.floats(width=32, allow_nan=False),
    "float64": st.floats(allow_nan=False),
    "boolean": st.booleans(),
    "string": st.text(max_size=8),
    "bytes": st.binary(max_size=8) | st.binary(max_size=8).map(bytearray),
}
LOGICAL: list[tuple[Schema, st.SearchStrategy[Any]]] = [
    (
        timestamp_schema(),
        st.datetimes(
            min_value=dt.datetime(1900, 1, 1),
            max_value=dt.datetime(2200, 1, 1),
            timezones=st.just(dt.UTC),
        ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
    ),
    (date_schema(), st.dates(min_value=dt.date(1900, 1, 1))),
    (time_schema(), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (decimal_schema(2), st.decimals(-(10**6), 10**6, places=2, allow_nan=False)),
]


def _optional(schema: Schema, optional: bool) -> Schema:
    return dataclasses.replace(schema, optional=True) if optional else schema


@st.composite
def schema_and_value(draw: st.DrawFn, depth: int = 0) -> tuple[Schema, Any]:
    """A Connect schema (optional or not, sometimes with a default) and a value of it, or now
    and then ``None`` or a value of another type (which the mapping must refuse alike)."""
    choice = draw(st.integers(0, 5 if depth < 2 else 2))
    if choice <= 1:
        kind = draw(st.sampled_from(sorted(LEAVES)))
        schema, values = Schema(kind), LEAVES[kind]
    elif choice == 2:
        schema, values = draw(st.sampled_from(LOGICAL))
    elif choice == 3:
        count = draw(st.integers(0, 4))
        parts = [draw(schema_and_value(depth + 1)) for _ in range(count)]
        schema = Schema.struct(
            [Field(f"f{i}", s) for i, (s, _) in enumerate(parts)], name=f"n.S{next(_names)}"
        )
        value = Struct(schema, {f"f{i}": v for i, (_, v) in enumerate(parts)})
        if draw(st.booleans()):
            value.values.pop("f0", None)
        values = st.just(value)
    elif choice == 4:
        item, item_value = draw(schema_and_value(depth + 1))
        schema, values = Schema("array", value_schema=item), st.just([item_value])
    else:
        key_kind = draw(st.sampled_from(["string", "int32"]))
        item, item_value = draw(schema_and_value(depth + 1))
        key = draw(LEAVES[key_kind])
        schema = Schema("map", key_schema=Schema(key_kind), value_schema=item)
        values = st.just({key: item_value})
    value = draw(values | st.none() | st.just("odd"))
    optional = draw(st.booleans())
    schema = _optional(schema, optional)
    if optional and schema.type in LEAVES and draw(st.booleans()) and schema.name is None:
        default = draw(LEAVES[schema.type].filter(lambda v: not isinstance(v, bytearray)))
        schema = dataclasses.replace(schema, default=default)
    return schema, value


def _generic(data: AvroData, schema: Schema, value: Any) -> tuple[str, Any]:
    try:
        return "ok", data.from_connect_data(schema, value)
    except Exception as error:
        return "error", f"{type(error).__name__}: {error}"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_value())
def test_compiled_mapping_gives_the_generic_ones(case: tuple[Schema, Any]) -> None:
    field, value = case
    schema = Schema.struct([Field("x", field), Field("y", Schema("int32"))], name="t.Top")
    record = Struct(schema, {"x": value, "y": 1})
    data = AvroData()
    expected = _generic(data, schema, record)
    try:
        mapped = compile_to_avro(schema, data.from_connect_data)(record)
    except Exception:
        mapped = None
    else:
        assert ("ok", mapped) == expected, f"{schema}: {record}"
    if expected[0] != "ok":
        assert mapped is None
        return
    codec = AvroCodec(data.from_connect_schema(schema))
    try:
        datum = codec.decode(codec.encode(expected[1]))
    except Exception:
        return
    assert compile_to_connect(schema, data.to_connect_data)(datum) == data.to_connect_data(
        schema, datum
    )


ORDER = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("qty", Schema("int16")),
        Field("price", decimal_schema(2)),
        Field("at", timestamp_schema()),
        Field("note", Schema("string", optional=True)),
        Field("tags", Schema("map", key_schema=Schema("string"), value_schema=Schema("int32"))),
        Field("ok", Schema("boolean")),
    ],
    name="shop.Order",
)
ORDER_VALUE = Struct(
    ORDER,
    {
        "id": 2**40,
        "qty": 3,
        "price": Decimal("12.50"),
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 6000, tzinfo=dt.UTC),
        "note": None,
        "tags": {"a": 1},
        "ok": True,
    },
)


def test_the_bytes_are_avro_serializers_and_confluents_read_back(
    registry: RegistryProcess,
) -> None:
    converter = avro_converter(registry.url)
    data = converter.from_connect("compiled", ORDER, ORDER_VALUE)
    assert data is not None
    client = SchemaRegistryClient({"url": registry.url})
    try:
        text = json.dumps(converter.avro_data.from_connect_schema(ORDER), separators=(",", ":"))
        context = SerializationContext("compiled", MessageField.VALUE)
        datum = converter.avro_data.from_connect_data(ORDER, ORDER_VALUE)
        assert AvroSerializer(client, text)(datum, context) == data
        assert AvroDeserializer(client)(data, context)["at"] == ORDER_VALUE.values["at"]
        schema, value = converter.to_connect("compiled", data)
        assert schema is not None and value.values == ORDER_VALUE.values
        assert (
            converter.to_connect("compiled", AvroSerializer(client, text)(datum, context))[1]
            == value
        )
    finally:
        client.close()
