"""Confluent's ``AvroConverter`` against a real ``sluice schema-registry`` process (on the
session's broker): Connect schema + value → Confluent wire-format bytes → Connect schema + value,
for every Connect type; the Avro schemas registered as Confluent's ``AvroData`` writes them;
refused settings; bytes that are not the wire format. Then whole pipelines of real processes
(PostgreSQL, a ``sluice connect standalone`` worker): ``postgres-cdc`` → Avro → ``jdbc-sink``,
and Avro records → ``spark-sink`` (Parquet), keeping decimals, dates and timestamps.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg2
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice import clients
from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import date_schema, decimal_schema, time_schema, timestamp_schema
from sluice.connect.converters import converter_from
from sluice.connect.converters.schema_registry.avro_data import AvroData
from sluice.connect.converters.schema_registry.converters import (
    AvroConverter,
    ProtobufConverter,
    SchemaRegistryConverter,
)
from sluice.connect.converters.schema_registry.json_schema_data import JsonSchemaData
from sluice.errors import ConfigError
from tests.conftest import SLUICE, BrokerProcess, create_topic, stop_process
from tests.connect.worker_helpers import standalone_worker
from tests.pg import PostgresServer, shared_postgres  # noqa: F401  (fixture)
from tests.schema_registry.conftest import RegistryFactory, RegistryProcess

AVRO = "io.confluent.connect.avro.AvroConverter"
JSON_SCHEMA = "io.confluent.connect.json.JsonSchemaConverter"
FORMATS = pytest.mark.parametrize("kind", [AVRO, JSON_SCHEMA], ids=["avro", "json-schema"])


@pytest.fixture(scope="module")
def registry(
    shared_broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistryProcess]:
    """One ``sluice schema-registry start`` process for the module's tests, stopped by PID."""
    factory = RegistryFactory(shared_broker.bootstrap, tmp_path_factory.mktemp("registry"))
    try:
        yield factory()
    finally:
        for proc in factory.started:
            proc.stop()


_MADE: list[SchemaRegistryConverter] = []


@pytest.fixture(autouse=True)
def _close_converters() -> Iterator[None]:
    """Every converter a test made closes its registry client at teardown."""
    yield
    while _MADE:
        _MADE.pop().close()


def _avro(
    url: str, settings: dict[str, str] | None = None, *, is_key: bool = False
) -> AvroConverter:
    converter = _converter(AVRO, url, settings, is_key=is_key)
    assert isinstance(converter, AvroConverter)
    return converter


def _converter(
    name: str, url: str, settings: dict[str, str] | None = None, *, is_key: bool = False
) -> SchemaRegistryConverter:
    converter = converter_from(name, {"schema.registry.url": url, **(settings or {})}, is_key)
    assert isinstance(converter, SchemaRegistryConverter)
    _MADE.append(converter)
    return converter


# -- every Connect type, one round trip each

PRICE = decimal_schema(2)
PRICE_10_2 = Schema(
    "bytes",
    name="org.apache.kafka.connect.data.Decimal",
    version=1,
    parameters=(("scale", "2"), ("connect.decimal.precision", "10")),
)
CASES: list[tuple[str, Schema, Any]] = [
    ("int8", Schema("int8"), -8),
    ("int16", Schema("int16"), 300),
    ("int32", Schema("int32"), -70_000),
    ("int64", Schema("int64"), 2**40),
    ("float32", Schema("float32"), 1.5),
    ("float64", Schema("float64"), 2.25e300),
    ("boolean", Schema("boolean"), True),
    ("string", Schema("string"), "héllo"),
    ("bytes", Schema("bytes"), b"\x00\xff"),
    ("decimal", PRICE, Decimal("-1.29")),
    ("decimal-precision", PRICE_10_2, Decimal("12345678.90")),
    ("date", date_schema(), dt.date(2024, 2, 29)),
    ("time", time_schema(), dt.time(13, 14, 15, 123000)),
    ("timestamp", timestamp_schema(), dt.datetime(2024, 2, 29, 1, 2, 3, 456000, tzinfo=dt.UTC)),
    ("array", Schema("array", value_schema=Schema("int32")), [1, 2, 3]),
    (
        "map-string",
        Schema("map", key_schema=Schema("string"), value_schema=Schema("int64")),
        {"a": 1, "b": 2},
    ),
    (
        "map-int",
        Schema("map", key_schema=Schema("int32"), value_schema=Schema("string")),
        {1: "one", 2: "two"},
    ),
    ("optional-string", Schema("string", optional=True), None),
    ("named-primitive", Schema("string", name="my.Name", version=3, doc="d"), "x"),
]


@FORMATS
@pytest.mark.parametrize(("name", "schema", "value"), CASES, ids=[c[0] for c in CASES])
def test_every_connect_type_round_trips(
    registry: RegistryProcess, kind: str, name: str, schema: Schema, value: Any
) -> None:
    converter = _converter(kind, registry.url)
    topic = f"types-{name}-{kind.rsplit('.', 1)[1]}"
    data = converter.from_connect(topic, schema, value)
    if value is None:
        assert data is None
        return
    assert data is not None and data[0] == 0  # Confluent's magic byte, then the schema id
    back_schema, back = _converter(kind, registry.url).to_connect(topic, data)  # a fresh one
    # A schema without a Connect version gets the subject's version (1 here), as Confluent's do.
    assert back_schema == _versioned(schema)
    assert back == value


def _versioned(schema: Schema, version: int = 1) -> Schema:
    return schema if schema.version is not None else dataclasses.replace(schema, version=version)


ADDRESS = Schema.struct(
    [Field("street", Schema("string")), Field("zip", Schema("string", optional=True))],
    name="shop.Address",
)
ORDER = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("amount", PRICE_10_2),
        Field("day", date_schema()),
        Field("at", timestamp_schema(optional=True)),
        Field("note", Schema("string", optional=True, doc="free text")),
        Field("qty", Schema("int32", default=1)),
        Field("home", ADDRESS),
        Field("work", Schema("struct", optional=True, name="shop.Address", fields=ADDRESS.fields)),
        Field(
            "lines", Schema("array", value_schema=Schema.struct([Field("sku", Schema("string"))]))
        ),
        Field(
            "tags",
            Schema(
                "map", key_schema=Schema("string"), value_schema=Schema("string", optional=True)
            ),
        ),
    ],
    name="shop.Order",
)


def _order() -> Struct:
    line = Struct(ORDER.fields[8].schema.value_schema, {"sku": "A-1"})  # type: ignore[arg-type]
    return Struct(
        ORDER,
        {
            "id": 7,
            "amount": Decimal("10.50"),
            "day": dt.date(2024, 1, 2),
            "at": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            "note": None,
            "qty": 3,
            "home": Struct(ADDRESS, {"street": "Main", "zip": None}),
            "work": Struct(ORDER.fields[7].schema, {"street": "Dock", "zip": "123"}),
            "lines": [line, line],
            "tags": {"a": None, "b": "x"},
        },
    )


@FORMATS
def test_nested_structs_optional_fields_and_defaults_round_trip(
    registry: RegistryProcess, kind: str
) -> None:
    topic = f"nested-{kind.rsplit('.', 1)[1]}"
    data = _converter(kind, registry.url).from_connect(topic, ORDER, _order())
    schema, value = _converter(kind, registry.url).to_connect(topic, data)
    assert schema == _versioned(ORDER)
    assert value == dataclasses.replace(_order(), schema=_versioned(ORDER))


def test_registered_schema_is_confluents_avro_data_form(registry: RegistryProcess) -> None:
    converter = _avro(registry.url)
    converter.from_connect("orders", ORDER, _order())
    client = SchemaRegistryClient({"url": registry.url})
    registered = client.get_latest_version("orders-value")  # TopicNameStrategy
    avro = json.loads(registered.schema.schema_str or "null")
    assert (avro["type"], avro["name"], avro["namespace"]) == ("record", "Order", "shop")
    assert avro["connect.name"] == "shop.Order"
    fields = {f["name"]: f for f in avro["fields"]}
    assert fields["amount"]["type"] == {
        "type": "bytes",
        "scale": 2,
        "precision": 10,
        "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal",
    }
    assert fields["day"]["type"]["logicalType"] == "date"
    assert fields["at"]["type"][0] == "null" and fields["at"]["default"] is None
    assert fields["at"]["type"][1]["logicalType"] == "timestamp-millis"
    assert fields["note"]["doc"] == "free text"
    assert fields["qty"] == {
        "name": "qty",
        "type": {"type": "int", "connect.default": 1},
        "default": 1,
    }
    # Defined once, then referred to by name (relative to the namespace "shop", or not).
    assert fields["work"]["type"][0] == "null"
    assert fields["work"]["type"][1] in ("shop.Address", "Address")
    assert fields["lines"]["type"]["items"]["name"] == "ConnectDefault"
    assert fields["tags"]["type"]["type"] == "map"
    client.close()


def test_confluent_serializer_and_converter_agree(registry: RegistryProcess) -> None:
    """Bytes written by confluent-kafka's own AvroSerializer read through the converter, and the
    converter's bytes read by its AvroDeserializer (logical types as Python values)."""
    client = SchemaRegistryClient({"url": registry.url})
    avro = {
        "type": "record",
        "name": "Payment",
        "namespace": "bank",
        "doc": "a payment",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal",
                                        "precision": 12, "scale": 3}},
            {"name": "currency", "type": {"type": "enum", "name": "Currency",
                                          "symbols": ["EUR", "USD"]}},
            {"name": "memo", "type": ["null", "string"], "default": None},
        ],
    }  # fmt: skip
    ctx = SerializationContext("payments", MessageField.VALUE)
    data = AvroSerializer(client, json.dumps(avro))(
        {"id": 1, "amount": Decimal("2.500"), "currency": "USD", "memo": None}, ctx
    )
    schema, value = _avro(registry.url).to_connect("payments", data)
    assert schema is not None and (schema.name, schema.version) == ("bank.Payment", 1)
    assert dict(schema.parameters) == {"connect.record.doc": "a payment"}
    assert schema.field("amount").schema.parameters == (  # type: ignore[union-attr]
        ("scale", "3"),
        ("connect.decimal.precision", "12"),
    )
    currency = schema.field("currency").schema  # type: ignore[union-attr]
    assert (currency.type, currency.name) == ("string", "bank.Currency")
    assert dict(currency.parameters)["io.confluent.connect.avro.Enum.USD"] == "USD"
    assert schema.field("memo").schema.optional  # type: ignore[union-attr]
    assert value.values == {"id": 1, "amount": Decimal("2.500"), "currency": "USD", "memo": None}
    # Back out with enhanced support: the enum is an enum again, readable by Confluent's reader.
    enhanced = _avro(registry.url, {"enhanced.avro.schema.support": "true"})
    again = enhanced.from_connect("payments-copy", schema, value)
    read = AvroDeserializer(client)(
        again, SerializationContext("payments-copy", MessageField.VALUE)
    )
    assert read == {"id": 1, "amount": Decimal("2.500"), "currency": "USD", "memo": None}
    client.close()


def test_keys_use_the_key_subject_and_record_name_strategy(registry: RegistryProcess) -> None:
    key_schema = Schema.struct([Field("id", Schema("int32"))], name="shop.OrderKey")
    converter = _avro(
        registry.url,
        {"key.subject.name.strategy": "io.confluent.kafka.serializers.subject.RecordNameStrategy"},
        is_key=True,
    )
    data = converter.from_connect("orders", key_schema, Struct(key_schema, {"id": 5}))
    client = SchemaRegistryClient({"url": registry.url})
    assert "shop.OrderKey" in client.get_subjects()
    client.close()
    assert _avro(registry.url, is_key=True).to_connect("orders", data)[1].values == {"id": 5}


def test_without_auto_register_a_missing_schema_is_an_error(registry: RegistryProcess) -> None:
    converter = _avro(registry.url, {"auto.register.schemas": "false"})
    with pytest.raises(ConverterError, match="Failed to serialize Avro data"):
        converter.from_connect("unregistered", Schema("string"), "x")


@FORMATS
def test_bytes_not_in_the_wire_format_are_a_converter_error(
    registry: RegistryProcess, kind: str
) -> None:
    converter = _converter(kind, registry.url)
    with pytest.raises(ConverterError, match="Unknown magic byte"):
        converter.to_connect("t", b'{"json": true}')
    with pytest.raises(ConverterError, match="schema id 99999"):
        converter.to_connect("t", b"\x00\x00\x01\x86\x9f\x02")
    assert converter.to_connect("t", None) == (None, None)


@FORMATS
def test_null_for_a_required_field_is_a_converter_error(
    registry: RegistryProcess, kind: str
) -> None:
    schema = Schema.struct([Field("id", Schema("int64"))], name="R")
    with pytest.raises(ConverterError, match=r"id: .*null value for"):
        _converter(kind, registry.url).from_connect("t", schema, Struct(schema, {}))


def test_json_schema_registered_as_confluents_json_schema_data_form(
    registry: RegistryProcess,
) -> None:
    converter = _converter(JSON_SCHEMA, registry.url)
    data = converter.from_connect("orders-json", ORDER, _order())
    client = SchemaRegistryClient({"url": registry.url})
    try:
        registered = client.get_latest_version("orders-json-value").schema
    finally:
        client.close()
    assert registered.schema_type == "JSON"
    document = json.loads(registered.schema_str or "null")
    assert (document["type"], document["title"]) == ("object", "shop.Order")
    props = document["properties"]
    assert props["id"] == {"type": "integer", "connect.type": "int64", "connect.index": 0}
    assert props["amount"] == {
        "type": "number",
        "title": "org.apache.kafka.connect.data.Decimal",
        "connect.type": "bytes",
        "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.index": 1,
    }
    assert props["at"]["oneOf"][0] == {"type": "null"} and props["at"]["connect.index"] == 3
    assert props["tags"]["connect.type"] == "map"
    # The payload is plain JSON after the 5-byte header; BASE64 decimals (Confluent's default).
    payload = json.loads(data[5:])  # type: ignore[index]
    assert payload["amount"] == "BBo="  # 1050 unscaled, scale 2
    assert payload["day"] == (dt.date(2024, 1, 2) - dt.date(1970, 1, 1)).days


def test_json_schema_numeric_decimals_and_confluents_json_serializer(
    registry: RegistryProcess,
) -> None:
    schema = Schema.struct([Field("price", PRICE), Field("n", Schema("int32"))], name="P")
    numeric = _converter(JSON_SCHEMA, registry.url, {"decimal.format": "NUMERIC"})
    data = numeric.from_connect(
        "prices", schema, Struct(schema, {"price": Decimal("-1.20"), "n": 1})
    )
    assert data is not None and json.loads(data[5:]) == {"price": -1.2, "n": 1}
    assert b'"price":-1.20' in data
    back = numeric.to_connect("prices", data)[1]
    assert back.values == {"price": Decimal("-1.20"), "n": 1}
    # A value written by confluent-kafka's own JSONSerializer with a hand-written schema.
    client = SchemaRegistryClient({"url": registry.url})
    try:
        document = {
            "type": "object",
            "title": "shop.Item",
            "properties": {
                "sku": {"type": "string"},
                "qty": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "price": {"oneOf": [{"type": "null"}, {"$ref": "#/definitions/money"}]},
            },
            "definitions": {"money": {"type": "number"}},
        }
        ctx = SerializationContext("items", MessageField.VALUE)
        written = JSONSerializer(json.dumps(document), client)(
            {"sku": "A-1", "qty": 2, "tags": ["x"], "price": 2.5}, ctx
        )
    finally:
        client.close()
    schema_read, value = _converter(JSON_SCHEMA, registry.url).to_connect("items", written)
    assert schema_read is not None and (schema_read.name, schema_read.version) == ("shop.Item", 1)
    assert [(f.name, f.schema.type, f.schema.optional) for f in schema_read.fields] == [
        ("sku", "string", False),
        ("qty", "int64", False),
        ("tags", "array", False),
        ("price", "float64", True),
    ]
    assert value.values == {"sku": "A-1", "qty": 2, "tags": ["x"], "price": 2.5}


def test_json_schema_with_validation_refuses_a_value_off_its_schema(
    registry: RegistryProcess,
) -> None:
    schema = Schema.struct([Field("price", PRICE)], name="Q")
    strict = _converter(JSON_SCHEMA, registry.url, {"json.fail.invalid.schema": "true"})
    # BASE64 decimals are text, which the schema's "type": "number" refuses when validating.
    with pytest.raises(ConverterError, match="Failed to serialize JSON data"):
        strict.from_connect("strict", schema, Struct(schema, {"price": Decimal("1.00")}))


def test_json_schema_combinations_without_connect_form_are_refused() -> None:
    with pytest.raises(ConverterError, match="oneOf of several types"):
        JsonSchemaData().to_connect_schema({"oneOf": [{"type": "string"}, {"type": "integer"}]})
    with pytest.raises(ConverterError, match="allOf"):
        JsonSchemaData().to_connect_schema({"allOf": [{"type": "string"}]})


# -- settings (no registry needed: the client connects on first use)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "schema.registry.url: is required"),
        ({"schema.registry.url": "localhost:8081"}, "not an http"),
        ({"schema.registry.url": "http://x", "scrub.invalid.names": "true"}, "not supported"),
        ({"schema.registry.url": "http://x", "schemas.enable": "false"}, "schemas.enable"),
        ({"schema.registry.url": "http://x", "latest.compatibility.strict": "false"}, "latest"),
        (
            {"schema.registry.url": "http://x", "value.subject.name.strategy": "my.Strategy"},
            "unknown strategy",
        ),
        (
            {"schema.registry.url": "http://x", "basic.auth.credentials.source": "SASL_INHERIT"},
            "SASL_INHERIT is not supported",
        ),
        (
            {"schema.registry.url": "http://x", "basic.auth.credentials.source": "USER_INFO"},
            "must be user:password",
        ),
        ({"schema.registry.url": "http://x", "use.latest.version": "true"}, "auto.register"),
        ({"schema.registry.url": "http://x", "connect.meta.data": "maybe"}, "true or false"),
        ({"schema.registry.url": "http://x", "schemas.cache.config": "0"}, "at least 1"),
    ],
)
def test_unsupported_or_bad_settings_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        converter_from(AVRO, settings, is_key=False)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"decimal.format": "HEX"}, "BASE64 or NUMERIC"),
        ({"connect.meta.data": "true"}, "not supported by Sluice's JsonSchemaConverter"),
        ({"object.additional.properties": "false"}, "not supported"),
        ({"json.fail.invalid.schema": "yes"}, "true or false"),
    ],
)
def test_json_schema_converter_refuses_what_it_does_not_implement(
    settings: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        converter_from(JSON_SCHEMA, {"schema.registry.url": "http://x", **settings}, False)


def test_connect_meta_data_false_leaves_out_connect_properties() -> None:
    schema = Schema.struct([Field("d", date_schema())], name="x.R")
    plain = AvroData(connect_meta_data=False).from_connect_schema(schema)
    assert plain == {
        "type": "record",
        "name": "R",
        "namespace": "x",
        "fields": [{"name": "d", "type": {"type": "int", "logicalType": "date"}}],
    }
    full = AvroData().from_connect_schema(schema)
    assert full["connect.name"] == "x.R"
    assert full["fields"][0]["type"]["connect.name"] == "org.apache.kafka.connect.data.Date"


def test_avro_unions_of_several_types_are_refused_clearly() -> None:
    with pytest.raises(ConverterError, match="unions of several types"):
        AvroData().to_connect_schema(["null", "string", "long"])


# -- pipelines of real processes

CATCH_UP_S = 120.0


def _execute(dsn: str, *statements: str) -> None:
    connection = psycopg2.connect(dsn)
    try:
        with connection, connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
    finally:
        connection.close()


def _query(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    connection = psycopg2.connect(dsn)
    try:
        with connection, connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def _pipeline(
    path: Path, server: PostgresServer, source: str, target: str, prefix: str, url: str
) -> None:
    converters = f"""\
    key.converter: {AVRO}
    key.converter.schema.registry.url: {url}
    value.converter: {AVRO}
    value.converter.schema.registry.url: {url}
"""
    path.write_text(
        f"""\
- name: capture
  class: postgres-cdc
  config:
    database.hostname: 127.0.0.1
    database.port: {server.port}
    database.user: sluice
    database.password: sluice
    database.dbname: {source}
    topic.prefix: {prefix}
    table.include.list: public.orders
    slot.name: {prefix}_slot
    publication.name: {prefix}_publication
    slot.drop.on.stop: true
    time.precision.mode: connect
{converters}
- name: replicate
  class: jdbc-sink
  config:
    topics: {prefix}.public.orders
    connection.url: {server.url(target)}
    insert.mode: upsert
    pk.mode: record_key
    auto.create: true
{converters}
  transforms:
    - name: unwrap
      type: unwrap
    - name: route
      type: org.apache.kafka.connect.transforms.RegexRouter
      regex: '{prefix}\\.public\\.(.*)'
      replacement: '$1'
"""
    )


def test_cdc_through_the_avro_converter_keeps_column_types(
    shared_broker: BrokerProcess,
    shared_postgres: PostgresServer,  # noqa: F811
    registry: RegistryProcess,
    tmp_path: Path,
) -> None:
    """postgres-cdc (``time.precision.mode=connect``) → AvroConverter → jdbc-sink, real
    processes: numeric(10,2) arrives as a numeric(10,2) column, date as a date, timestamp(3) as
    a timestamp; the topic holds Confluent wire-format Avro whose registered schema gives back
    the connector's Connect schema."""
    prefix = f"avro{uuid.uuid4().hex[:8]}"
    source, target = f"{prefix}_src", f"{prefix}_dst"
    shared_postgres.create_database(source)
    shared_postgres.create_database(target)
    source_dsn, target_dsn = shared_postgres.dsn(source), shared_postgres.dsn(target)
    _execute(
        source_dsn,
        "CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10,2) NOT NULL, "
        "day date NOT NULL, placed_at timestamp(3) NOT NULL, note text)",
        "INSERT INTO orders VALUES (1, 12345678.90, '2024-02-29', '2024-02-29 13:14:15.123', "
        "'first'), (2, -0.05, '1969-12-31', '1970-01-01 00:00:00', NULL)",
    )
    topic = create_topic(shared_broker.bootstrap, name=f"{prefix}.public.orders")
    pipeline = tmp_path / "pipeline.yaml"
    _pipeline(pipeline, shared_postgres, source, target, prefix, registry.url)
    log = tmp_path / "worker.log"
    command = [
        *(str(SLUICE), "connect", "standalone", str(pipeline), "-b", shared_broker.bootstrap),
        *("--offsets", str(tmp_path / "offsets.json"), "--rest", ""),
        *("-X", "offset.flush.interval.ms=500"),
    ]
    with log.open("ab") as out:
        worker = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for_rows(target_dsn, 2, worker, log)
        _execute(
            source_dsn,
            "INSERT INTO orders VALUES "
            "(3, 0.01, '2000-01-01', '2000-01-01 00:00:00.5', 'streamed')",
            "UPDATE orders SET amount = 99999999.99 WHERE id = 1",
        )
        _wait_for(
            lambda: (
                _query(target_dsn, "SELECT amount FROM orders WHERE id IN (1, 3) ORDER BY id")
                == [(Decimal("99999999.99"),), (Decimal("0.01"),)]
            ),
            "the streamed changes in the target",
            worker,
            log,
        )
    finally:
        stop_process(worker)

    columns = dict(
        (name, (kind, precision, scale))
        for name, kind, precision, scale in _query(
            target_dsn,
            "SELECT column_name, data_type, numeric_precision, numeric_scale "
            "FROM information_schema.columns WHERE table_name = 'orders'",
        )
    )
    assert columns["amount"] == ("numeric", 10, 2)
    assert columns["placed_at"][0] == "timestamp without time zone"
    assert columns["day"][0] == "date"
    assert columns["id"][0] == "bigint"
    assert columns["note"][0] == "text"
    rows = _query(target_dsn, "SELECT id, amount, day, placed_at, note FROM orders ORDER BY id")
    assert rows == [
        (1, Decimal("99999999.99"), dt.date(2024, 2, 29),
         dt.datetime(2024, 2, 29, 13, 14, 15, 123000), "first"),
        (2, Decimal("-0.05"), dt.date(1969, 12, 31), dt.datetime(1970, 1, 1), None),
        (3, Decimal("0.01"), dt.date(2000, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 0, 500000),
         "streamed"),
    ]  # fmt: skip

    # On the topic: Confluent's wire format, the schemas in the registry under the topic's
    # subjects, and the converter gives back the connector's Connect schema (Debezium's names).
    client = SchemaRegistryClient({"url": registry.url})
    try:
        assert {f"{topic}-key", f"{topic}-value"} <= set(client.get_subjects())
        value_schema = json.loads(
            client.get_latest_version(f"{topic}-value").schema.schema_str or ""
        )
    finally:
        client.close()
    assert value_schema["connect.name"] == f"{prefix}.public.orders.Envelope"
    first = _first_value(shared_broker.bootstrap, topic)
    assert first[0] == 0  # the magic byte
    schema, value = _avro(registry.url).to_connect(topic, first)
    assert schema is not None
    after = schema.field("after")
    assert after is not None
    types = {f.name: (f.schema.type, f.schema.name) for f in after.schema.fields}
    assert types == {
        "id": ("int64", None),
        "amount": ("bytes", "org.apache.kafka.connect.data.Decimal"),
        "day": ("int32", "org.apache.kafka.connect.data.Date"),
        "placed_at": ("int64", "org.apache.kafka.connect.data.Timestamp"),
        "note": ("string", None),
    }
    assert dict(after.schema.fields[1].schema.parameters) == {
        "scale": "2",
        "connect.decimal.precision": "10",
    }
    row = value.get("after")
    assert row.get("amount") == Decimal("12345678.90")
    assert row.get("day") == dt.date(2024, 2, 29)


def _first_value(bootstrap: str, topic: str) -> bytes:
    consumer = clients.consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error() and message.value() is not None:
                value = message.value()
                assert isinstance(value, bytes)
                return value
        raise AssertionError(f"no record in {topic}")
    finally:
        consumer.close()


def _wait_for_rows(dsn: str, count: int, worker: subprocess.Popen[bytes], log: Path) -> None:
    def ready() -> bool:
        try:
            return _query(dsn, "SELECT count(*) FROM orders")[0][0] >= count
        except psycopg2.Error:  # the table is not created yet
            return False

    _wait_for(ready, f"{count} rows in the target", worker, log)


def _wait_for(condition: Any, what: str, worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + CATCH_UP_S
    while time.monotonic() < deadline:
        assert worker.poll() is None, log.read_text()
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; worker log:\n{log.read_text()[-6000:]}")


EVENT = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("amount", PRICE_10_2),
        Field("day", date_schema()),
        Field("at", timestamp_schema()),
        Field("note", Schema("string", optional=True)),
    ],
    name="shop.Event",
)


def test_spark_sink_takes_avro_records_with_typed_columns(
    shared_broker: BrokerProcess, registry: RegistryProcess, tmp_path: Path
) -> None:
    """Avro records (written by the converter) → ``spark-sink`` with ``value.converter`` set to
    AvroConverter, in a worker process: the Parquet table's columns are decimal(38, 2), date and
    timestamp, and the values are the ones written."""
    topic = create_topic(shared_broker.bootstrap)
    writer = _avro(registry.url)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap})
    events = [
        Struct(
            EVENT,
            {
                "id": i,
                "amount": Decimal("12345678.90") - i,
                "day": dt.date(2024, 2, 28) + dt.timedelta(days=i),
                "at": dt.datetime(2024, 2, 28, 12, 0, i, 123000, tzinfo=dt.UTC),
                "note": None if i % 2 else f"n{i}",
            },
        )
        for i in range(4)
    ]
    for event in events:
        producer.produce(topic, writer.from_connect(topic, EVENT, event))
    assert producer.flush(30) == 0
    table = tmp_path / "warehouse" / "events"
    config = tmp_path / "deploy.yaml"
    config.write_text(
        f"""\
- name: land-events
  class: spark-sink
  config:
    topics: {topic}
    warehouse.path: {tmp_path / "warehouse"}
    table.name.format: events
    register.table: "false"
    flush.size: "4"
    value.converter: {AVRO}
    value.converter.schema.registry.url: {registry.url}
"""
    )
    worker = standalone_worker(config, shared_broker.bootstrap, tmp_path)
    log = tmp_path / "worker.log"
    try:
        _wait_for(lambda: _parquet_rows(table) >= len(events), "the Parquet table", worker, log)
    finally:
        stop_process(worker)
    landed = pq.read_table(sorted(table.rglob("part-*.parquet")))
    assert landed.schema.field("amount").type == pa.decimal128(38, 2)
    assert landed.schema.field("day").type == pa.date32()
    assert pa.types.is_timestamp(landed.schema.field("at").type)
    assert landed.schema.field("id").type == pa.int64()
    got = sorted(landed.to_pylist(), key=lambda row: row["id"])
    assert [(r["id"], r["amount"], r["day"], r["note"]) for r in got] == [
        (e.get("id"), e.get("amount"), e.get("day"), e.get("note")) for e in events
    ]
    stamps = [r["at"] if r["at"].tzinfo else r["at"].replace(tzinfo=dt.UTC) for r in got]
    assert stamps == [e.get("at") for e in events]


def _parquet_rows(table: Path) -> int:
    files = sorted(table.rglob("part-*.parquet"))
    return sum(pq.read_metadata(f).num_rows for f in files if "_sluice_staging" not in str(f))


# -- Protobuf

PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"
LINE = Schema.struct([Field("sku", Schema("string")), Field("qty", Schema("int32"))], name="Line")
EVERYTHING = Schema.struct(
    [
        Field("i8", Schema("int8")),
        Field("i16", Schema("int16")),
        Field("i32", Schema("int32")),
        Field("i64", Schema("int64")),
        Field("f32", Schema("float32")),
        Field("f64", Schema("float64")),
        Field("flag", Schema("boolean")),
        Field("text", Schema("string")),
        Field("raw", Schema("bytes")),
        Field("amount", PRICE_10_2),
        Field("day", date_schema()),
        Field("clock", time_schema()),
        Field("at", timestamp_schema()),
        Field("tags", Schema("array", value_schema=Schema("string"))),
        Field("lines", Schema("array", value_schema=LINE)),
        Field("counts", Schema("map", key_schema=Schema("string"), value_schema=Schema("int64"))),
        Field("by_id", Schema("map", key_schema=Schema("int32"), value_schema=LINE)),
        Field("first", LINE),
        Field("missing", Schema("struct", optional=True, name="Line", fields=LINE.fields)),
    ],
    name="shop.Everything",
)


def _everything() -> Struct:
    line = Struct(LINE, {"sku": "A-1", "qty": 2})
    return Struct(
        EVERYTHING,
        {
            "i8": -8,
            "i16": 300,
            "i32": -70_000,
            "i64": 2**40,
            "f32": 1.5,
            "f64": 2.25e300,
            "flag": True,
            "text": "héllo",
            "raw": b"\x00\xff",
            "amount": Decimal("12345678.90"),
            "day": dt.date(2024, 2, 29),
            "clock": dt.time(13, 14, 15, 123000),
            "at": dt.datetime(2024, 2, 29, 1, 2, 3, 456000, tzinfo=dt.UTC),
            "tags": ["a", "b"],
            "lines": [line, line],
            "counts": {"a": 1},
            "by_id": {7: line},
            "first": line,
            "missing": None,
        },
    )


def _as_read(schema: Schema, *, root: bool = True) -> Schema:
    """What reading gives for a schema written as Protobuf: every field optional (proto3),
    structs named by their message's full name."""
    return dataclasses.replace(
        schema,
        optional=not root,
        fields=tuple(Field(f.name, _as_read(f.schema, root=False)) for f in schema.fields),
        key_schema=None if schema.key_schema is None else _as_read(schema.key_schema, root=False),
        value_schema=None
        if schema.value_schema is None
        else _as_read(schema.value_schema, root=False),
    )


def test_protobuf_round_trips_every_connect_type(registry: RegistryProcess) -> None:
    data = _converter(PROTOBUF, registry.url).from_connect("everything", EVERYTHING, _everything())
    assert data is not None and data[:1] == b"\x00" and data[5:6] == b"\x00"  # message index [0]
    schema, value = _converter(PROTOBUF, registry.url).to_connect("everything", data)
    assert schema is not None
    line = dataclasses.replace(_as_read(LINE, root=False), name="shop.Everything.Line")
    by_name = {f.name: f.schema for f in schema.fields}
    assert by_name["i8"] == Schema("int8", optional=True)
    assert by_name["i16"] == Schema("int16", optional=True)
    assert by_name["f32"] == Schema("float32", optional=True)
    assert by_name["amount"] == dataclasses.replace(PRICE_10_2, optional=True)
    assert by_name["day"] == date_schema(optional=True)
    assert by_name["clock"] == time_schema(optional=True)
    assert by_name["at"] == timestamp_schema(optional=True)
    assert by_name["lines"] == Schema("array", optional=True, value_schema=line)
    assert by_name["by_id"] == Schema(
        "map", optional=True, key_schema=Schema("int32", optional=True), value_schema=line
    )
    assert (schema.name, schema.version, schema.optional) == ("shop.Everything", 1, False)
    expected = _everything().values
    got = value.values
    for name in ("lines", "first", "by_id"):
        expected[name] = _plain(expected[name])
        got[name] = _plain(got[name])
    assert got == expected


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return {k: _plain(v) for k, v in value.values.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def test_protobuf_registers_a_proto3_schema_readable_by_confluents_deserializer(
    registry: RegistryProcess,
) -> None:
    schema = Schema.struct(
        [Field("id", Schema("int64")), Field("at", timestamp_schema())], name="shop.Tick"
    )
    value = Struct(schema, {"id": 3, "at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)})
    converter = _converter(PROTOBUF, registry.url)
    data = converter.from_connect("ticks", schema, value)
    client = SchemaRegistryClient({"url": registry.url})
    try:
        registered = client.get_latest_version("ticks-value").schema
    finally:
        client.close()
    assert registered.schema_type == "PROTOBUF"
    text = registered.schema_str or ""
    assert "package shop;" in text and "message Tick" in text
    assert "google.protobuf.Timestamp at = 2;" in text
    assert isinstance(converter, ProtobufConverter)
    cls = converter.protobuf_data.message_class(converter.protobuf_data.from_connect_schema(schema))
    read = ProtobufDeserializer(cls, {"use.deprecated.format": False})(
        data, SerializationContext("ticks", MessageField.VALUE)
    )
    assert (read.id, read.at.seconds) == (3, 1_704_067_200)


def test_protobuf_needs_a_struct_root(registry: RegistryProcess) -> None:
    with pytest.raises(ConverterError, match="Unsupported root schema of type string"):
        _converter(PROTOBUF, registry.url).from_connect("t", Schema("string"), "x")
