"""JSON Schema and Protobuf through confluent-kafka's serializers, a real registry and broker:
auto-registration (Protobuf imports registered as referenced subjects), reads by id
(``format=serialized`` for Protobuf), and incompatible changes refused with the reasons."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.schema_registry.conftest import ClientFactory, RegistryProcess

PERSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Person",
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
    "additionalProperties": False,
}
COMMON = (
    'syntax = "proto3";\npackage shop;\n\n'
    "message Money {\n  int64 cents = 1;\n  string currency = 2;\n}\n"
)
ORDER = (
    'syntax = "proto3";\npackage shop;\n\nimport "common.proto";\n\n'
    "message Order {\n  int64 id = 1;\n  Money total = 2;\n  repeated string items = 3;\n}\n"
)


def round_trip(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(CLIENT_TIMEOUT) == 0
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        while len(got) < len(values):
            message = consumer.poll(CLIENT_TIMEOUT)
            assert message is not None, f"only {len(got)} of {len(values)} records came"
            assert message.error() is None, message.error()
            got.append(message.value())
    finally:
        consumer.close()
    return got


def test_json_schema_round_trip_and_evolution(
    shared_broker: BrokerProcess, registry: RegistryProcess, sr_client: ClientFactory
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    client = sr_client(registry.url)
    serializer = JSONSerializer(json.dumps(PERSON), client)
    context = SerializationContext(topic, MessageField.VALUE)
    people: list[dict[str, Any]] = [{"name": f"p{i}", "age": i} for i in range(5)]
    raw = round_trip(shared_broker.bootstrap, topic, [serializer(p, context) for p in people])
    deserializer = JSONDeserializer(None, schema_registry_client=sr_client(registry.url))
    assert [deserializer(value, context) for value in raw] == people
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "JSON"
    assert json.loads(latest.schema.schema_str) == PERSON

    changed = {**PERSON, "properties": {**PERSON["properties"], "age": {"type": "string"}}}
    with pytest.raises(SchemaRegistryError) as error:
        client.register_schema(f"{topic}-value", Schema(json.dumps(changed), "JSON"))
    assert (error.value.http_status_code, error.value.error_code) == (409, 409)
    assert "#/properties/age" in error.value.error_message


@pytest.fixture
def order_pb2(tmp_path: Path) -> Iterator[ModuleType]:
    """``order.proto`` (importing ``common.proto``) compiled by protoc, imported."""
    (tmp_path / "common.proto").write_text(COMMON)
    (tmp_path / "order.proto").write_text(ORDER)
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp_path}", f"--python_out={tmp_path}",
         "common.proto", "order.proto"],
        check=True,
    )  # fmt: skip
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("order_pb2")
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("order_pb2", "common_pb2"):
            sys.modules.pop(name, None)


def test_protobuf_round_trip_with_imports_as_references(
    shared_broker: BrokerProcess,
    registry: RegistryProcess,
    sr_client: ClientFactory,
    order_pb2: ModuleType,
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    client = sr_client(registry.url)
    serializer = ProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False})
    context = SerializationContext(topic, MessageField.VALUE)
    orders = [
        order_pb2.Order(id=i, total={"cents": 100 * i, "currency": "EUR"}, items=["a"] * i)
        for i in range(5)
    ]
    raw = round_trip(shared_broker.bootstrap, topic, [serializer(o, context) for o in orders])
    # a fresh client: the deserializer asks the registry (format=serialized)
    deserializer = ProtobufDeserializer(
        order_pb2.Order, {"use.deprecated.format": False}, sr_client(registry.url)
    )
    assert [deserializer(value, context) for value in raw] == orders

    # the import was registered as its own subject and is referenced by name
    assert "common.proto" in client.get_subjects()
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject) for r in latest.schema.references] == [
        ("common.proto", "common.proto")
    ]
    assert client.get_referenced_by("common.proto", 1) == [latest.schema_id]

    incompatible = ORDER.replace("int64 id = 1", "string id = 1")
    with pytest.raises(SchemaRegistryError) as error:
        client.register_schema(
            f"{topic}-value",
            Schema(incompatible, "PROTOBUF", [SchemaReference("common.proto", "common.proto", 1)]),
        )
    assert (error.value.http_status_code, error.value.error_code) == (409, 409)
