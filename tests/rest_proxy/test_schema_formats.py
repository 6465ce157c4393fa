"""AVRO, JSONSCHEMA and PROTOBUF through the proxy and Sluice's Schema Registry (a real
``sluice schema-registry start`` process): produced through v3 (inline schema, schema id,
latest version, one record and a stream) and v2, read back with confluent-kafka's own
deserializers, and consumed through a v2 consumer instance of the format."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic, free_port, stop_process
from tests.rest_proxy.fixtures import SLUICE, Proxy, cluster_id

AVRO = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}],
    }
)
JSON_SCHEMA = json.dumps(
    {
        "type": "object",
        "title": "Order",
        "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
        "required": ["id"],
    }
)
PROTO = (
    'syntax = "proto3";\npackage shop;\nmessage Order {\n  int64 id = 1;\n  string item = 2;\n}\n'
)


@pytest.fixture
def registry(broker: BrokerProcess, tmp_path: Path) -> Iterator[str]:
    """``sluice schema-registry start`` in front of the test's broker; its URL."""
    import subprocess

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "registry.log").open("wb") as log:
        proc = subprocess.Popen(
            [
                SLUICE,
                "schema-registry",
                "start",
                "--listen",
                f"127.0.0.1:{port}",
                "--bootstrap-server",
                broker.bootstrap,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "registry.log").read_text()
            try:
                with urllib.request.urlopen(f"{url}/subjects", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the registry did not answer"
                time.sleep(0.2)
        yield url
    finally:
        stop_process(proc)


@pytest.fixture
def schema_proxy(
    broker: BrokerProcess, registry: str, proxy_factory: Callable[..., Proxy]
) -> Proxy:
    return proxy_factory(broker.bootstrap, "--schema-registry", registry)


@pytest.fixture
def registry_client(registry: str) -> Iterator[SchemaRegistryClient]:
    """confluent-kafka's client of the registry."""
    client = SchemaRegistryClient({"url": registry})
    try:
        yield client
    finally:
        client.close()


def _values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"c-{uuid.uuid4().hex}"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        found: list[bytes] = []
        while len(found) < count:
            batch = consumer.consume(count - len(found), timeout=CLIENT_TIMEOUT)
            assert batch, f"{len(found)} of {count} records"
            found += [m.value() or b"" for m in batch]
        return found
    finally:
        consumer.close()


def test_avro_inline_schema_then_by_id_then_latest(
    broker: BrokerProcess, registry_client: SchemaRegistryClient, schema_proxy: Proxy
) -> None:
    topic = create_topic(broker.bootstrap)
    path = f"/v3/clusters/{cluster_id(schema_proxy)}/topics/{topic}/records"
    first = schema_proxy.post(
        path, {"value": {"type": "AVRO", "schema": AVRO, "data": {"id": 1, "item": "pen"}}}
    )
    assert first.status == 200, first.body
    value = first.json()["value"]
    assert value["type"] == "AVRO" and value["subject"] == f"{topic}-value"
    assert value["schema_version"] == 1
    schema_id = value["schema_id"]
    stream = "\n".join(
        [
            json.dumps({"value": {"schema_id": schema_id, "data": {"id": 2, "item": "ink"}}}),
            json.dumps({"value": {"type": "AVRO", "data": {"id": 3, "item": "pad"}}}),
            json.dumps({"value": {"type": "AVRO", "data": {"id": "four"}}}),
        ]
    ).encode()
    results = schema_proxy.post(path, raw=stream).stream()
    assert [r["error_code"] for r in results] == [200, 200, 42203], results
    assert all(r["value"]["schema_id"] == schema_id for r in results[:2])

    read = AvroDeserializer(registry_client)
    ctx = SerializationContext(topic, MessageField.VALUE)
    decoded = [read(v, ctx) for v in _values(broker.bootstrap, topic, 3)]
    assert decoded == [{"id": 1, "item": "pen"}, {"id": 2, "item": "ink"}, {"id": 3, "item": "pad"}]

    bad = schema_proxy.post(
        path, {"value": {"type": "AVRO", "schema": '{"type": "nope"}', "data": 1}}
    )
    assert bad.status == 422 and bad.json()["error_code"] == 42205, bad.body


def test_jsonschema_values(
    broker: BrokerProcess, registry_client: SchemaRegistryClient, schema_proxy: Proxy
) -> None:
    topic = create_topic(broker.bootstrap)
    path = f"/v3/clusters/{cluster_id(schema_proxy)}/topics/{topic}/records"
    answer = schema_proxy.post(
        path,
        {
            "key": {"type": "STRING", "data": "o1"},
            "value": {
                "type": "JSONSCHEMA",
                "schema": JSON_SCHEMA,
                "data": {"id": 7, "item": "cup"},
            },
        },
    )
    assert answer.status == 200, answer.body
    value = answer.json()["value"]
    assert value["type"] == "JSONSCHEMA" and value["subject"] == f"{topic}-value"
    (raw,) = _values(broker.bootstrap, topic, 1)
    assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == value["schema_id"]
    read = JSONDeserializer(None, schema_registry_client=registry_client)
    assert read(raw, SerializationContext(topic, MessageField.VALUE)) == {"id": 7, "item": "cup"}
    wrong = schema_proxy.post(path, {"value": {"type": "JSONSCHEMA", "data": {"id": "x"}}})
    assert wrong.status == 422 and wrong.json()["error_code"] == 42203, wrong.body


def test_protobuf_values(broker: BrokerProcess, schema_proxy: Proxy) -> None:
    from sluice.schemas.protobuf_messages import message_class

    topic = create_topic(broker.bootstrap)
    path = f"/v3/clusters/{cluster_id(schema_proxy)}/topics/{topic}/records"
    answer = schema_proxy.post(
        path,
        {
            "value": {"type": "PROTOBUF", "schema": PROTO, "data": {"id": 7, "item": "cup"}},
        },
    )
    assert answer.status == 200, answer.body
    (raw,) = _values(broker.bootstrap, topic, 1)
    assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == answer.json()["value"]["schema_id"]
    message = message_class(PROTO)()
    message.ParseFromString(raw[6:])  # magic, id, message indexes [0] as one zero byte
    assert (message.id, message.item) == (7, "cup")
    bad = schema_proxy.post(
        path, {"value": {"type": "PROTOBUF", "schema": "message M { int32 a = }", "data": {}}}
    )
    assert bad.status == 422 and bad.json()["error_code"] == 42205, bad.body
    assert "Invalid schema" in bad.json()["message"], bad.body


def test_v2_avro_produce_and_consume(broker: BrokerProcess, schema_proxy: Proxy) -> None:
    topic = create_topic(broker.bootstrap)
    produced = schema_proxy.post(
        f"/topics/{topic}",
        {
            "value_schema": AVRO,
            "records": [{"value": {"id": i, "item": f"i{i}"}} for i in range(3)],
        },
        content_type="application/vnd.kafka.avro.v2+json",
    )
    assert produced.status == 200, produced.body
    assert isinstance(produced.json()["value_schema_id"], int)
    group = f"g-{uuid.uuid4().hex[:8]}"
    created = schema_proxy.post(
        f"/consumers/{group}",
        {"format": "avro", "auto.offset.reset": "earliest"},
        content_type="application/vnd.kafka.v2+json",
    ).json()
    base = created["base_uri"].removeprefix(schema_proxy.url)
    assert (
        schema_proxy.post(
            f"{base}/subscription",
            {"topics": [topic]},
            content_type="application/vnd.kafka.v2+json",
        ).status
        == 204
    )
    found: list[Any] = []
    deadline = time.monotonic() + 30
    while len(found) < 3:
        assert time.monotonic() < deadline
        answer = schema_proxy.get(
            f"{base}/records?timeout=1000", accept="application/vnd.kafka.avro.v2+json"
        )
        assert answer.status == 200, answer.body
        found += answer.json()
    assert [r["value"] for r in found] == [{"id": i, "item": f"i{i}"} for i in range(3)]
    assert schema_proxy.request("DELETE", base).status == 204


def test_v2_protobuf_consumer_decodes_confluent_framed_records(
    broker: BrokerProcess, registry_client: SchemaRegistryClient, schema_proxy: Proxy
) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import Schema

    from sluice.schemas.protobuf_messages import message_class

    topic = create_topic(broker.bootstrap)
    schema_id = registry_client.register_schema(f"{topic}-value", Schema(PROTO, "PROTOBUF"))
    message = message_class(PROTO)(id=9, item="mug")
    framed = b"\x00" + schema_id.to_bytes(4, "big") + b"\x00" + message.SerializeToString()
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(topic, framed)
    assert producer.flush(CLIENT_TIMEOUT) == 0
    found = read_protobuf(schema_proxy, topic, 1)
    assert found[0]["value"] == {"id": "9", "item": "mug"}  # proto3 JSON: int64 as a string


def read_protobuf(schema_proxy: Proxy, topic: str, count: int) -> list[Any]:
    """``count`` records of ``topic`` through a new v2 consumer instance (format protobuf),
    deleted after."""
    v2 = "application/vnd.kafka.v2+json"
    created = schema_proxy.post(
        f"/consumers/g-{uuid.uuid4().hex[:8]}",
        {"format": "protobuf", "auto.offset.reset": "earliest"},
        content_type=v2,
    ).json()
    base = created["base_uri"].removeprefix(schema_proxy.url)
    assert (
        schema_proxy.post(f"{base}/subscription", {"topics": [topic]}, content_type=v2).status
        == 204
    )
    found: list[Any] = []
    deadline = time.monotonic() + 30
    while len(found) < count:
        assert time.monotonic() < deadline
        answer = schema_proxy.get(
            f"{base}/records?timeout=1000", accept="application/vnd.kafka.protobuf.v2+json"
        )
        assert answer.status == 200, answer.body
        found += answer.json()
    assert schema_proxy.request("DELETE", base).status == 204
    return found


MONEY = (
    'syntax = "proto3";\npackage shop;\nmessage Money {\n  int64 cents = 1;\n  string cur = 2;\n}\n'
)
PRICED = (
    'syntax = "proto3";\npackage shop;\nimport "money.proto";\n'
    "message Priced {\n  string item = 1;\n  Money price = 2;\n}\n"
)


def test_protobuf_schemas_with_references_produce_and_consume(
    broker: BrokerProcess, registry_client: SchemaRegistryClient, schema_proxy: Proxy
) -> None:
    """A registered Protobuf schema importing another subject's (a reference): produced by its
    schema_id and as the subject's latest, read back through a v2 consumer — the proxy
    compiles the schema with the referenced text it fetches from the registry."""
    from confluent_kafka.schema_registry import Schema, SchemaReference

    topic = create_topic(broker.bootstrap)
    registry_client.register_schema("money.proto", Schema(MONEY, "PROTOBUF"))
    reference = SchemaReference("money.proto", "money.proto", 1)
    schema_id = registry_client.register_schema(
        f"{topic}-value", Schema(PRICED, "PROTOBUF", [reference])
    )
    path = f"/v3/clusters/{cluster_id(schema_proxy)}/topics/{topic}/records"
    data = {"item": "cup", "price": {"cents": "250", "cur": "EUR"}}
    for how in ({"schema_id": schema_id}, {"type": "PROTOBUF"}):  # by id; the latest
        answer = schema_proxy.post(path, {"value": {**how, "data": data}})
        assert answer.status == 200, answer.body
        assert answer.json()["value"]["schema_id"] == schema_id
    found = read_protobuf(schema_proxy, topic, 2)
    assert [record["value"] for record in found] == [data, data]
