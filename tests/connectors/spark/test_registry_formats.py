"""``spark.read.format("sluice")`` with ``valueFormat``: registry-encoded values as typed columns.

A real local Spark, the session's broker and a real ``sluice schema-registry`` process; records
are written by confluent-kafka's own serializers (through Sluice's serdes).
"""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fastavro
import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no type information
import pytest
from confluent_kafka import Producer
from pyspark.sql.types import StructType

from sluice.connect import ConnectError, TopicPartition
from sluice.connectors.spark._registry_decode import ColumnDecoder
from sluice.connectors.spark._registry_schema import FieldFormat, resolve
from sluice.connectors.spark._sink_commit import TableDir
from sluice.connectors.spark._sink_config import SinkSettings
from sluice.connectors.spark.source import register
from sluice.errors import ConfigError
from sluice.schemas.protobuf_messages import descriptor_pool_of
from sluice.schemas.serdes import AvroSerde, JsonSchemaSerde, ProtobufSerde, for_topic
from sluice.serde import Serde
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.connectors.spark import sink_fixtures
from tests.connectors.spark.sink_fixtures import TaskFactory, records
from tests.schema_registry.conftest import RegistryFactory, RegistryProcess

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

sink_task = sink_fixtures.sink_task  # the fixture, for the sink's test


@pytest.fixture(scope="module")
def session(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


@pytest.fixture(scope="module")
def registry(
    shared_broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistryProcess]:
    """One registry for the module (each test uses subjects of its own topics)."""
    factory = RegistryFactory(shared_broker.bootstrap, tmp_path_factory.mktemp("registry"))
    try:
        yield factory()
    finally:
        for proc in factory.started:
            proc.stop()


def _produce(
    bootstrap: str, topic: str, serde: Serde, values: list[Any], keys: Serde | None = None
) -> None:
    """Each value serialized by *serde* (bytes as they are); with *keys*, the key is the
    value's ``id`` serialized by it."""
    bound = for_topic(serde, topic, is_key=False)
    key_serde = None if keys is None else for_topic(keys, topic, is_key=True)
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        key = None if key_serde is None else key_serde.serialize(value["id"])
        data = value if isinstance(value, bytes) else bound.serialize(value)
        producer.produce(topic, data, key)
    assert producer.flush(CLIENT_TIMEOUT) == 0


def _read(spark: SparkSession, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (
        spark.read.format("sluice")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "price",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        },
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tag", "type": ["int", "string"]},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["NEW", "OLD"]}},
        {"name": "items", "type": {"type": "array", "items": "string"}},
    ],
}
ORDER_V2 = {
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "qty", "type": "int", "default": 1}],
}


def test_avro_values_become_typed_columns_by_their_own_schema(
    session: SparkSession, shared_broker: BrokerProcess, registry: RegistryProcess
) -> None:
    """Records of two schema versions are read into the latest one's Spark type (Avro schema
    resolution fills the field v1 lacks with its default); a record that is not in the wire
    format fails the query naming topic, partition and offset, or is null with PERMISSIVE."""
    boot = shared_broker.bootstrap
    topic = create_topic(boot)
    config = {"schema.registry.url": registry.url}
    at = dt.datetime(2024, 2, 28, 12, 0, 1, 123000, tzinfo=dt.UTC)
    v1 = {
        "id": 1, "price": Decimal("12.50"), "day": dt.date(2024, 2, 28), "at": at,
        "note": None, "tag": 7, "kind": "NEW", "items": ["a", "b"],
    }  # fmt: skip
    _produce(boot, topic, AvroSerde(json.dumps(ORDER_V1), config), [v1])
    v2 = {**v1, "id": 2, "note": "n", "tag": "t", "kind": "OLD", "items": [], "qty": 5}
    _produce(boot, topic, AvroSerde(json.dumps(ORDER_V2), config), [v2])

    df = _read(session, boot, topic, valueFormat="avro", **config)
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,price:decimal(9,2),day:date,at:timestamp,note:string,"
        "tag:struct<member0:int,member1:string>,kind:string,items:array<string>,qty:int>"
    )
    got = [r.asDict(recursive=True) for r in df.orderBy("offset").select("value.*").collect()]
    assert got == [
        {**v1, "tag": {"member0": 7, "member1": None}, "qty": 1, "at": at.replace(tzinfo=None)},
        {**v2, "tag": {"member0": None, "member1": "t"}, "at": at.replace(tzinfo=None)},
    ]
    # pinned to version 1: the v2 record is projected onto v1 (qty dropped)
    pinned = _read(session, boot, topic, valueFormat="avro", valueSchemaVersion="1", **config)
    assert "qty" not in pinned.schema["value"].dataType.fieldNames()
    assert pinned.select("value.id").orderBy("id").collect()[1][0] == 2

    bad = create_topic(boot)
    _produce(boot, bad, AvroSerde(json.dumps(ORDER_V2), config), [v2, b"not avro", v2])
    options = {"valueFormat": "avro", "valueSubject": f"{topic}-value", **config}
    with pytest.raises(Exception, match=rf"value of {bad}-0 at offset 1 as avro: not in Conf"):
        _read(session, boot, bad, **options).collect()
    permissive = _read(session, boot, bad, mode="PERMISSIVE", **options)
    assert [r[0] for r in permissive.orderBy("offset").select("value.id").collect()] == [2, None, 2]


PROTO = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  repeated string tags = 2;
  map<string, int32> counts = 3;
  google.protobuf.Timestamp at = 4;
  enum Kind { NEW = 0; OLD = 1; }
  Kind kind = 5;
  Line line = 6;
  uint64 big = 7;
}
message Line { string sku = 1; double price = 2; }
"""


def test_protobuf_values_become_typed_columns(
    session: SparkSession, shared_broker: BrokerProcess, registry: RegistryProcess
) -> None:
    boot = shared_broker.bootstrap
    topic = create_topic(boot)
    config = {"schema.registry.url": registry.url}
    at = dt.datetime(2024, 2, 28, 12, 0, 1, 250000, tzinfo=dt.UTC)
    first = {
        "id": 1, "tags": ["a"], "counts": {"x": 2}, "at": "2024-02-28T12:00:01.250Z",
        "kind": "OLD", "line": {"sku": "s1", "price": 2.5}, "big": 2**63 + 1,
    }  # fmt: skip
    _produce(boot, topic, ProtobufSerde(PROTO, config), [first, {"id": 2}])

    df = _read(session, boot, topic, valueFormat="protobuf", **config)
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,tags:array<string>,counts:map<string,int>,at:timestamp,kind:string,"
        "line:struct<sku:string,price:double>,big:decimal(20,0)>"
    )
    got = [r.asDict(recursive=True) for r in df.orderBy("offset").select("value.*").collect()]
    assert got == [
        {
            "id": 1, "tags": ["a"], "counts": {"x": 2}, "at": at.replace(tzinfo=None),
            "kind": "OLD", "line": {"sku": "s1", "price": 2.5}, "big": Decimal(2**63 + 1),
        },
        {
            "id": 2, "tags": [], "counts": {}, "at": None, "kind": "NEW", "line": None,
            "big": Decimal(0),
        },
    ]  # fmt: skip


JSON_SCHEMA = {
    "type": "object",
    "title": "Order",
    "properties": {
        "id": {"type": "integer"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "price": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "line": {"$ref": "#/definitions/Line"},
        "extra": {},
    },
    "required": ["id"],
    "definitions": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}}}},
}


def test_json_schema_values_become_typed_columns(
    session: SparkSession, shared_broker: BrokerProcess, registry: RegistryProcess
) -> None:
    boot = shared_broker.bootstrap
    topic = create_topic(boot)
    config = {"schema.registry.url": registry.url}
    first = {
        "id": 1, "at": "2024-02-28T12:00:01.5Z", "day": "2024-02-28", "price": 3,
        "tags": ["a"], "line": {"sku": "s1"}, "extra": {"any": [1]},
    }  # fmt: skip
    values = JsonSchemaSerde(json.dumps(JSON_SCHEMA), config)
    keys = AvroSerde('"long"', config)  # keys in another format: subject <topic>-key
    _produce(boot, topic, values, [first, {"id": 2}], keys)

    df = _read(session, boot, topic, valueFormat="json-schema", keyFormat="avro", **config)
    assert df.schema["value"].dataType.simpleString() == (
        "struct<id:bigint,at:timestamp,day:date,price:double,tags:array<string>,"
        "line:struct<sku:string>,extra:string>"
    )
    assert df.schema["key"].dataType.simpleString() == "bigint"
    assert [r[0] for r in df.orderBy("offset").select("key").collect()] == [1, 2]
    got = [r.asDict(recursive=True) for r in df.orderBy("offset").select("value.*").collect()]
    assert got == [
        {
            "id": 1, "at": dt.datetime(2024, 2, 28, 12, 0, 1, 500000), "day": dt.date(2024, 2, 28),
            "price": 3.0, "tags": ["a"], "line": {"sku": "s1"}, "extra": '{"any": [1]}',
        },
        {"id": 2, "at": None, "day": None, "price": None, "tags": None, "line": None,
         "extra": None},
    ]  # fmt: skip


def test_load_fails_on_a_subject_that_cannot_be_read(
    session: SparkSession, shared_broker: BrokerProcess, registry: RegistryProcess
) -> None:
    """Checked at load() (through Spark): a subject the registry lacks, a subject of another
    format. Options checked without the registry are in test_registry_types.py."""
    boot = shared_broker.bootstrap
    topic = create_topic(boot)
    url = {"schema.registry.url": registry.url}
    with pytest.raises(Exception, match=rf"latest version of subject '{topic}-value'.*40401"):
        _read(session, boot, topic, valueFormat="avro", **url)
    _produce(boot, topic, JsonSchemaSerde(json.dumps(JSON_SCHEMA), url), [{"id": 1}])
    with pytest.raises(Exception, match="is a JSON schema, not avro"):
        _read(session, boot, topic, valueFormat="avro", **url)


def test_spark_sink_takes_its_columns_from_the_subject(
    registry: RegistryProcess, sink_task: TaskFactory, tmp_path: Path
) -> None:
    """``value.subject``: the table holds the subject's types as soon as its partition is
    assigned, and schemaless (JSON) records land in them; with ``schema`` too it is refused."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    topic = f"orders_{uuid.uuid4().hex[:8]}"
    client = SchemaRegistryClient({"url": registry.url})
    try:
        version = {**ORDER_V1, "fields": ORDER_V1["fields"][:5]}  # id, price, day, at, note
        client.register_schema(f"{topic}-value", Schema(json.dumps(version), "AVRO"))
    finally:
        client.close()
    task = sink_task(value_subject=f"{topic}-value", schema_registry_url=registry.url)
    partition = TopicPartition(topic, 0)
    task.open({partition})
    meta = TableDir(tmp_path / "warehouse" / topic).read_meta()
    assert meta is not None
    assert StructType.fromJson(meta["schema"]).simpleString() == (
        "struct<id:bigint,price:decimal(9,2),day:date,at:timestamp,note:string>"
    )
    task.put(
        records(
            [
                {"id": 1, "price": "12.5", "day": "2024-02-28", "at": "2024-02-28T12:00:00Z"},
                '{"id": 2, "price": 3, "day": "2024-02-29", "at": 1709208000000, "note": "n"}',
            ],
            topic,
        )
    )
    task.pre_commit({partition: 2})
    table = pq.read_table(sorted((tmp_path / "warehouse" / topic).rglob("part-*.parquet")))
    assert table.schema.field("price").type == pa.decimal128(9, 2)
    assert table.schema.field("day").type == pa.date32()
    assert [(r["id"], r["price"], r["note"]) for r in table.to_pylist()] == [
        (1, Decimal("12.50"), None),
        (2, Decimal("3.00"), "n"),
    ]
    with pytest.raises(ConfigError, match="leave 'schema' empty"):
        SinkSettings.parse(
            {"warehouse.path": str(tmp_path), "value.subject": "s", "schema": "id bigint"}
        )
    with pytest.raises(ConnectError, match=r"subject 'missing-value'.*40401"):
        sink_task(value_subject="missing-value", schema_registry_url=registry.url)


def test_schema_references_are_resolved_through_the_registry(registry: RegistryProcess) -> None:
    """No Spark: planning's :func:`resolve` and a worker's decoder against the registry, for
    an Avro record using a named type of another subject and a Protobuf file importing one."""
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
    from google.protobuf import message_factory

    client = SchemaRegistryClient({"url": registry.url})
    name = uuid.uuid4().hex[:8]
    money = {"type": "record", "name": "Money", "namespace": "shop",
             "fields": [{"name": "cents", "type": "long"}]}  # fmt: skip
    order = {"type": "record", "name": "Order", "namespace": "shop",
             "fields": [{"name": "total", "type": "shop.Money"}]}  # fmt: skip
    common = 'syntax = "proto3"; package shop; message Cents { int64 n = 1; }'
    line = 'syntax = "proto3"; package shop; import "common.proto"; message Line { Cents c = 1; }'
    try:
        client.register_schema(f"money-{name}", Schema(json.dumps(money), "AVRO"))
        avro_id = client.register_schema(
            f"{name}-value",
            Schema(json.dumps(order), "AVRO", [SchemaReference("shop.Money", f"money-{name}", 1)]),
        )
        client.register_schema(f"common-{name}", Schema(common, "PROTOBUF"))
        proto_id = client.register_schema(
            f"{name}p-value",
            Schema(line, "PROTOBUF", [SchemaReference("common.proto", f"common-{name}", 1)]),
        )
    finally:
        client.close()

    avro = resolve(
        FieldFormat("value", "avro", None, None, None, None), (name,), registry.url, None
    )
    assert avro.spark_type.simpleString() == "struct<total:struct<cents:bigint>>"
    decoder = ColumnDecoder(avro, registry.url, None, permissive=False)
    payload = io.BytesIO()
    payload.write(b"\x00" + avro_id.to_bytes(4, "big"))
    parsed = fastavro.parse_schema(
        order, named_schemas={"shop.Money": fastavro.parse_schema(money)}
    )
    fastavro.schemaless_writer(payload, parsed, {"total": {"cents": 250}})
    column = pa.array([payload.getvalue()], pa.binary())
    assert decoder.decode(column, name, 0, [0]).to_pylist() == [{"total": {"cents": 250}}]
    decoder.close()

    proto = resolve(
        FieldFormat("value", "protobuf", f"{name}p-value", 1, None, "Line"), (), registry.url, None
    )
    assert proto.spark_type.simpleString() == "struct<c:struct<n:bigint>>"
    pool, _ = descriptor_pool_of(proto.schema, dict(proto.references))
    message = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Line"))()
    message.c.n = 42
    data = b"\x00" + proto_id.to_bytes(4, "big") + b"\x00" + message.SerializeToString()
    decoder = ColumnDecoder(proto, registry.url, None, permissive=True)
    unknown = b"\x00" + (10**6).to_bytes(4, "big") + b"\x00"
    column = pa.array([data, unknown], pa.binary())
    assert decoder.decode(column, name, 0, [0, 1]).to_pylist() == [{"c": {"n": 42}}, None]
    decoder.close()
