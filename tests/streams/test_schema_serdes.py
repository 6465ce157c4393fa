"""Streams apps with schema-aware serdes, through the real broker and the real schema registry.

Inputs are written and outputs read with confluent-kafka's own serializers and deserializers;
the Protobuf output is decoded with a message class that ``protoc`` generated, not with Sluice's.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.dsl import App, JoinWindows
from sluice.schemas.serdes import AvroSerde, ProtobufSerde
from sluice.serde import JSON, SerdeError
from sluice.streams.errors import StreamsError
from sluice.streams.operators.serdes import windowed_binary
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.schema_registry.conftest import RegistryProcess

ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "amount", "type": "double"},
        ],
    }
)
CUSTOMER = json.dumps(
    {
        "type": "record",
        "name": "Customer",
        "namespace": "shop",
        "fields": [
            {"name": "name", "type": "string"},
            {
                "name": "tier",
                "type": {"type": "enum", "name": "Tier", "symbols": ["GOLD", "BASIC"]},
            },
        ],
    }
)
TOTALS = json.dumps(
    {
        "type": "record",
        "name": "Totals",
        "namespace": "shop",
        "fields": [
            {"name": "count", "type": "int"},
            {"name": "sum", "type": "double"},
        ],
    }
)
ENRICHED = """syntax = "proto3";
package shop.out;

message EnrichedOrder {
  int64 id = 1;
  string customer = 2;
  double amount = 3;
  Tier tier = 4;
  enum Tier { UNKNOWN = 0; GOLD = 1; BASIC = 2; }
}
"""
TIMEOUT = 60.0


def _app_id() -> str:
    return f"app-{uuid.uuid4().hex[:8]}"


def _produce_avro(
    bootstrap: str, client: SchemaRegistryClient, topic: str, schema: str, records: list[Any]
) -> None:
    serializer = AvroSerializer(client, schema)
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value, timestamp in records:
        data = serializer(value, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, data, key.encode(), timestamp=timestamp)
    assert producer.flush(CLIENT_TIMEOUT) == 0


def _read(
    bootstrap: str, topic: str, decode: Callable[[bytes], Any], count: int
) -> list[tuple[str, Any]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: list[tuple[str, Any]] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while len(got) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.2):
                assert message.error() is None, message.error()
                value = message.value()
                key = message.key()
                assert key is not None and value is not None
                got.append((key.decode(), decode(value)))
    finally:
        consumer.close()
    assert len(got) >= count, f"expected {count} records on {topic}, got {got}"
    return got


def _protoc_class(tmp_path: Path) -> Any:
    """EnrichedOrder as protoc generates it (a module imported from tmp_path)."""
    (tmp_path / "enriched.proto").write_text(ENRICHED)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
         "enriched.proto"],
        check=True,
    )  # fmt: skip
    spec = importlib.util.spec_from_file_location("enriched_pb2", tmp_path / "enriched_pb2.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.EnrichedOrder


def test_join_two_avro_topics_into_a_protobuf_topic(
    shared_broker: BrokerProcess,
    schema_registry: RegistryProcess,
    sr_client: Callable[[str], SchemaRegistryClient],
    tmp_path: Path,
) -> None:
    bootstrap = shared_broker.bootstrap
    orders, customers, enriched = (create_topic(bootstrap) for _ in range(3))
    client = sr_client(schema_registry.url)
    _produce_avro(
        bootstrap,
        client,
        customers,
        CUSTOMER,
        [("c1", {"name": "Ada", "tier": "GOLD"}, 1_000),
         ("c2", {"name": "Bob", "tier": "BASIC"}, 1_000)],
    )  # fmt: skip
    _produce_avro(
        bootstrap,
        client,
        orders,
        ORDER,
        [("c1", {"id": 1, "amount": 9.5}, 2_000), ("c2", {"id": 2, "amount": 3.25}, 2_001),
         ("c1", {"id": 3, "amount": 1.0}, 2_002)],
    )  # fmt: skip

    app = App(
        _app_id(),
        bootstrap,
        stores="memory",
        state_dir=tmp_path / "state",
        commit_interval_ms=200,
        schema_registry_url=schema_registry.url,
    )
    table = app.table(customers, value_serde=AvroSerde(CUSTOMER))
    (
        app.stream(orders, value_serde=AvroSerde(ORDER))
        .join(
            table,
            lambda order, customer: {
                "id": order["id"],
                "customer": customer["name"],
                "amount": order["amount"],
                "tier": customer["tier"],
            },
        )
        .to(enriched, value_serde=ProtobufSerde(ENRICHED))
    )
    app.start()
    try:
        deserializer = ProtobufDeserializer(
            _protoc_class(_fresh(tmp_path)), {"use.deprecated.format": False}
        )
        context = SerializationContext(enriched, MessageField.VALUE)
        got = _read(bootstrap, enriched, lambda data: deserializer(data, context), 3)
    finally:
        app.close()
    rows = sorted((key, m.id, m.customer, m.amount, m.Tier.Name(m.tier)) for key, m in got)
    assert rows == [
        ("c1", 1, "Ada", 9.5, "GOLD"),
        ("c1", 3, "Ada", 1.0, "GOLD"),
        ("c2", 2, "Bob", 3.25, "BASIC"),
    ], rows
    latest = client.get_latest_version(f"{enriched}-value")
    assert latest.schema.schema_type == "PROTOBUF", latest.schema.schema_type


def _fresh(tmp_path: Path) -> Path:
    folder = tmp_path / "protoc"
    folder.mkdir()
    return folder


def test_keyed_aggregation_keeps_avro_state_with_a_registered_changelog(
    shared_broker: BrokerProcess,
    schema_registry: RegistryProcess,
    sr_client: Callable[[str], SchemaRegistryClient],
    tmp_path: Path,
) -> None:
    bootstrap = shared_broker.bootstrap
    orders, totals = create_topic(bootstrap), create_topic(bootstrap)
    client = sr_client(schema_registry.url)
    _produce_avro(
        bootstrap,
        client,
        orders,
        ORDER,
        [("c1", {"id": 1, "amount": 2.5}, 1_000), ("c2", {"id": 2, "amount": 4.0}, 1_001),
         ("c1", {"id": 3, "amount": 1.5}, 1_002)],
    )  # fmt: skip
    application_id = _app_id()
    app = App(
        application_id,
        bootstrap,
        stores="rocksdb",
        state_dir=tmp_path / "state",
        commit_interval_ms=200,
        schema_registry_url=schema_registry.url,
        statestore_cache_max_bytes=0,  # every update of c1 is read below
    )
    totals_serde = AvroSerde(TOTALS)
    (
        app.stream(orders, value_serde=AvroSerde(ORDER))
        .group_by_key()
        .aggregate(
            lambda: {"count": 0, "sum": 0.0},
            lambda key, order, total: {
                "count": total["count"] + 1,
                "sum": total["sum"] + order["amount"],
            },
            name="totals",
            value_serde=totals_serde,
        )
        .to_stream()
        .to(totals)
    )
    app.start()
    try:
        deserializer = AvroDeserializer(sr_client(schema_registry.url))
        context = SerializationContext(totals, MessageField.VALUE)
        got = _read(bootstrap, totals, lambda data: deserializer(data, context), 3)
        assert dict(got) == {"c1": {"count": 2, "sum": 4.0}, "c2": {"count": 1, "sum": 4.0}}, got
        assert app.store("totals").get("c1") == {"count": 2, "sum": 4.0}
    finally:
        app.close()
    changelog = f"{application_id}-totals-changelog"
    subject = client.get_latest_version(f"{changelog}-value")
    assert json.loads(subject.schema.schema_str)["name"] == "Totals", subject.schema.schema_str
    # the changelog holds Confluent-framed Avro that confluent-kafka's deserializer reads
    context = SerializationContext(changelog, MessageField.VALUE)
    logged = _read(bootstrap, changelog, lambda data: deserializer(data, context), 2)
    assert dict(logged) == {"c1": {"count": 2, "sum": 4.0}, "c2": {"count": 1, "sum": 4.0}}


def test_the_topology_binds_schema_serdes_to_their_topics() -> None:
    app = App("shop", schema_registry_url="http://registry.invalid:8081")
    value = AvroSerde(ORDER)
    counts = app.stream("orders", value_serde=value).group_by_key().aggregate(
        lambda: {"count": 0, "sum": 0.0},
        lambda key, order, total: total,
        name="totals",
        value_serde=AvroSerde(TOTALS),
    )  # fmt: skip
    counts.to_stream().to("totals")
    nodes = app.topology.nodes
    bound = {
        (getattr(serde, "topic", None), getattr(serde, "is_key", None))
        for node in nodes.values()
        for serde in (getattr(node, "value_serde", None),)
        if serde is not None
    }
    assert bound == {("orders", False), ("totals", False)}, bound
    store = app.topology.stores["totals"].build()
    assert store.value_serde.subject_for()  # type: ignore[attr-defined] == "shop-totals-changelog-value"
    assert value.topic is None  # what the user holds stays unbound


def test_an_unbound_serde_inside_a_windowed_key_says_what_to_do() -> None:
    windowed = windowed_binary(AvroSerde(ORDER, {"schema.registry.url": "http://x.invalid"}))
    from sluice.streams.record import Windowed

    with pytest.raises(SerdeError, match=r"not bound to a topic.*RecordNameStrategy"):
        windowed.serialize(Windowed({"id": 1, "amount": 1.0}, 0, 10))
    assert JSON.serialize({"a": 1}) == b'{"a":1}'


def test_an_outer_join_of_two_avro_streams_buffers_avro_under_its_changelog_subjects(
    shared_broker: BrokerProcess,
    schema_registry: RegistryProcess,
    sr_client: Callable[[str], SchemaRegistryClient],
    tmp_path: Path,
) -> None:
    bootstrap = shared_broker.bootstrap
    left, right, out = (create_topic(bootstrap) for _ in range(3))
    client = sr_client(schema_registry.url)
    # whichever side is read first waits in the buffers for the other
    # (z has no partner: it stays in the outer buffer, which its changelog records at commit)
    _produce_avro(
        bootstrap,
        client,
        left,
        ORDER,
        [("a", {"id": 1, "amount": 1.0}, 1_000), ("z", {"id": 9, "amount": 9.0}, 1_002)],
    )
    _produce_avro(bootstrap, client, right, ORDER, [("a", {"id": 2, "amount": 2.0}, 1_001)])
    application_id = _app_id()
    app = App(
        application_id,
        bootstrap,
        stores="memory",
        state_dir=tmp_path / "state",
        commit_interval_ms=200,
        schema_registry_url=schema_registry.url,
    )
    orders = AvroSerde(ORDER)
    (
        app.stream(left, value_serde=orders)
        .outer_join(
            app.stream(right, value_serde=orders),
            lambda mine, theirs: {"left": mine and mine["id"], "right": theirs and theirs["id"]},
            JoinWindows.of(5),
            name="j",
        )
        .to(out, value_serde=JSON)
    )
    app.start()
    try:
        got = _read(bootstrap, out, json.loads, 1)
    finally:
        app.close()
    assert got == [("a", {"left": 1, "right": 2})], got
    subjects = set(client.get_subjects())
    for store in ("j-this-store", "j-other-store", "j-outer-store"):
        assert f"{application_id}-{store}-changelog-value" in subjects, subjects


def test_schema_registry_url_is_a_streams_setting_under_confluents_name() -> None:
    dotted = App("urls", **{"schema.registry.url": "http://registry:8081"})
    assert dotted.config.schema_registry_url == "http://registry:8081"
    assert App("urls", schema_registry_url="http://r:1").config.schema_registry_url == "http://r:1"
    with pytest.raises(StreamsError, match="given twice"):
        App("urls", schema_registry_url="http://a:1", **{"schema.registry.url": "http://b:2"})
