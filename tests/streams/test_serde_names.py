"""Serdes by name in the Streams DSL (``key_serde="long"``, ``value_serde="avro"``…): the plain
names in the test driver, the schema formats bound like the objects, unknown names refused, and
one app through the real broker and registry with ``value_serde="avro"`` on both ends."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.dsl import App, TimeWindows
from sluice.schemas.serdes import SchemaSerde
from sluice.serde import FLOAT64, INT64, JSON, STRING, SerdeError, serde_from
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.schema_registry.conftest import RegistryProcess

ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "double"}],
    }
)
BIG_ORDER = json.dumps(
    {
        "type": "record",
        "name": "BigOrder",
        "namespace": "shop",
        "fields": [{"name": "id", "type": "long"}, {"name": "cents", "type": "long"}],
    }
)


def test_plain_names_are_kafkas_encodings_in_the_driver() -> None:
    app = App("names")
    (
        app.stream("amounts", key_serde="string", value_serde="long")
        .map_values(lambda cents: cents / 100, value_serde="double")
        .to("euros")
    )
    with app.test_driver() as driver:
        driver.pipe("amounts", "a", 250)
        raw = driver.read_raw("euros")
    assert [(k, v) for k, v, _, _ in raw] == [(b"a", FLOAT64.serialize(2.5))], raw
    sources = [n for name, n in app.topology.nodes.items() if name.startswith("KSTREAM-SOURCE")]
    assert [(s.key_serde, s.value_serde) for s in sources] == [(STRING, INT64)]  # type: ignore[union-attr]


def test_names_reach_aggregations_tables_and_state_stores() -> None:
    app = App("names")
    counts = (
        app.stream("clicks", value_serde="json")
        .group_by_key(key_serde="string")
        .windowed_by(TimeWindows.of(1000))
        .aggregate(lambda: 0, lambda k, v, total: total + 1, name="counts", value_serde="long")
    )
    counts.to_stream().map(lambda wk, n: (wk.key, n), value_serde="int64").to("counts")
    users = app.table("users", value_serde="json", name="users")
    assert (users.key_serde, users.value_serde) == (STRING, JSON)
    app.state_store("seen", key_serde="bytes", value_serde="float64")
    with app.test_driver() as driver:
        driver.pipe("clicks", "u1", {"page": 1}, timestamp=10)
        driver.pipe("clicks", "u1", {"page": 2}, timestamp=20)
        raw = [(k, v) for k, v, _, _ in driver.read_raw("counts")]
        assert raw == [(b"u1", INT64.serialize(1)), (b"u1", INT64.serialize(2))], raw
        driver.pipe("users", "u1", {"name": "Ada"})
        assert driver.store("users").get("u1") == {"name": "Ada"}


def test_schema_format_names_are_bound_to_their_topics_like_the_objects() -> None:
    app = App("shop", schema_registry_url="http://registry.invalid:8081")
    app.stream("orders", key_serde="string", value_serde="avro").to(
        "checked", value_serde="json-schema"
    )
    bound = {
        (serde.name, serde.topic, serde.is_key)
        for node in app.topology.nodes.values()
        for serde in (getattr(node, "value_serde", None),)
        if isinstance(serde, SchemaSerde)
    }
    assert bound == {("avro", "orders", False), ("json-schema", "checked", False)}, bound
    made = serde_from("avro")
    assert isinstance(made, SchemaSerde) and made.spec is not None
    assert made.spec.options == {"use.latest.version": True, "auto.register.schemas": False}
    assert serde_from("avro") is not made  # each use its own: bound to its own topic


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("yaml", r"unknown serde 'yaml' \(known: avro, bytes, double, float64, int64, json, "
                 r"json-schema, long, protobuf, string\)"),
        ("Avro", r"unknown serde 'Avro'"),
        ("protobuf", r"protobuf serde needs its message: pass .*ProtobufSerde"),
    ],
)  # fmt: skip
def test_an_unknown_or_incomplete_name_is_a_clear_error(name: str, message: str) -> None:
    app = App("names")
    with pytest.raises(SerdeError, match=message):
        app.stream("in", value_serde=name)
    with pytest.raises(SerdeError, match=message):
        app.stream("in").map_values(str, value_serde=name)


def test_a_serde_that_is_neither_object_nor_name_is_refused() -> None:
    with pytest.raises(SerdeError, match="a Serde or its name, not int"):
        serde_from(3)  # type: ignore[arg-type]


def test_avro_by_name_reads_and_writes_the_subjects_registered_schemas(
    shared_broker: BrokerProcess,
    schema_registry: RegistryProcess,
    sr_client: Callable[[str], SchemaRegistryClient],
    tmp_path: Path,
) -> None:
    bootstrap = shared_broker.bootstrap
    orders, big = create_topic(bootstrap), create_topic(bootstrap)
    client = sr_client(schema_registry.url)
    # the output subject's schema is registered up front: "avro" writes with its latest version
    client.register_schema(f"{big}-value", Schema(BIG_ORDER, "AVRO"))
    serializer = AvroSerializer(client, ORDER)
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, order in [("c1", {"id": 1, "amount": 250.0}), ("c2", {"id": 2, "amount": 5.5})]:
        value = serializer(order, SerializationContext(orders, MessageField.VALUE))
        producer.produce(orders, value, key.encode())
    assert producer.flush(CLIENT_TIMEOUT) == 0

    app = App(
        f"app-{uuid.uuid4().hex[:8]}",
        bootstrap,
        stores="memory",
        state_dir=tmp_path / "state",
        commit_interval_ms=200,
        schema_registry_url=schema_registry.url,
    )
    (
        app.stream(orders, key_serde="string", value_serde="avro")
        .filter(lambda key, order: order["amount"] > 100)
        .map_values(lambda o: {"id": o["id"], "cents": round(o["amount"] * 100)})
        .to(big, value_serde="avro")
    )
    app.start()
    try:
        deserializer = AvroDeserializer(client)
        context = SerializationContext(big, MessageField.VALUE)
        got = _read(bootstrap, big, lambda data: deserializer(data, context), 1)
    finally:
        app.close()
    assert got == [("c1", {"id": 1, "cents": 25000})], got
    versions = client.get_versions(f"{big}-value")
    assert versions == [1], versions  # written with the registered schema, nothing new


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
    deadline = time.monotonic() + 60.0
    try:
        while len(got) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.2):
                assert message.error() is None, message.error()
                key, value = message.key(), message.value()
                assert key is not None and value is not None
                got.append((key.decode(), decode(value)))
    finally:
        consumer.close()
    assert len(got) >= count, f"expected {count} records on {topic}, got {got}"
    return got
