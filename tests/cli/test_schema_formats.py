"""``sluice produce --value-format`` / ``sluice consume --value-format``: JSON lines in, Confluent's
wire format on the topic (read back with confluent-kafka's deserializers), JSON out."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.schemas.serdes import message_class
from tests.conftest import CLIENT_TIMEOUT, free_port
from tests.schema_registry.conftest import RegistryProcess

if TYPE_CHECKING:
    from tests.cli.conftest import Sluice

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                   "scale": 2}},
    ],
}  # fmt: skip
KEY = {"type": "record", "name": "OrderKey", "namespace": "shop",
       "fields": [{"name": "customer", "type": "string"}]}  # fmt: skip
ORDER_JSON = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
    "required": ["id"],
}
ORDER_PROTO = """syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string item = 2;
  repeated string tags = 3;
}
"""


@pytest.fixture
def client(schema_registry: RegistryProcess) -> Iterator[SchemaRegistryClient]:
    made = SchemaRegistryClient({"url": schema_registry.url})
    yield made
    made.close()


def _values(bootstrap: str, topic: str, decode: Callable[[bytes], Any], count: int) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    try:
        while len(got) < count:
            message = consumer.poll(CLIENT_TIMEOUT)
            assert message is not None, f"only {len(got)} of {count} records came"
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            got.append(decode(value))
    finally:
        consumer.close()
    return got


def test_avro_values_and_keys_from_json_lines_and_back(
    sluice: Sluice,
    topic_factory: Callable[..., str],
    schema_registry: RegistryProcess,
    client: SchemaRegistryClient,
    tmp_path: Path,
) -> None:
    topic = topic_factory(1)
    (tmp_path / "order.avsc").write_text(json.dumps(ORDER))
    (tmp_path / "key.avsc").write_text(json.dumps(KEY))
    lines = [
        '{"customer":"c1"}\t{"id":1,"note":null,"price":"9.50"}',
        '{"customer":"c2"}\t{"id":2,"note":{"string":"gift"},"price":3.25}',  # Avro JSON union
        '{"customer":"c1"}\t{"id":3,"note":"bare","price":"0.99"}',
    ]
    produced = sluice(
        "produce", topic, "-f", r"%k\t%v", "--schema-registry", schema_registry.url,
        "--key-format", "avro", "--key-schema", str(tmp_path / "key.avsc"),
        "--value-format", "avro", "--value-schema", str(tmp_path / "order.avsc"),
        input="".join(f"{line}\n" for line in lines),
    )  # fmt: skip
    assert produced.code == 0, str(produced)
    assert sorted(client.get_subjects()) == [f"{topic}-key", f"{topic}-value"]

    deserializer = AvroDeserializer(client)
    context = SerializationContext(topic, MessageField.VALUE)
    values = _values(sluice.bootstrap, topic, lambda data: deserializer(data, context), 3)
    assert values == [
        {"id": 1, "note": None, "price": Decimal("9.50")},
        {"id": 2, "note": "gift", "price": Decimal("3.25")},
        {"id": 3, "note": "bare", "price": Decimal("0.99")},
    ]

    consumed = sluice(
        "consume", topic, "--from-beginning", "-e", "-f", r"%k\t%v",
        "--key-format", "avro", "--value-format", "avro", "--schema-registry", schema_registry.url,
    )  # fmt: skip
    assert consumed.code == 0, str(consumed)
    assert consumed.out.splitlines() == [
        '{"customer":"c1"}\t{"id":1,"note":null,"price":"9.50"}',
        '{"customer":"c2"}\t{"id":2,"note":"gift","price":"3.25"}',
        '{"customer":"c1"}\t{"id":3,"note":"bare","price":"0.99"}',
    ], str(consumed)

    # what consume printed, produce reads back, now with the subject's latest schema
    again = sluice(
        "produce", topic, "-f", r"%k\t%v", "--key-format", "avro", "--value-format", "avro",
        "--schema-registry", schema_registry.url, input=consumed.out,
    )  # fmt: skip
    assert again.code == 0, str(again)
    assert len(client.get_versions(f"{topic}-value")) == 1


def test_json_schema_and_protobuf_values(
    sluice: Sluice,
    topic_factory: Callable[..., str],
    schema_registry: RegistryProcess,
    client: SchemaRegistryClient,
    tmp_path: Path,
) -> None:
    (tmp_path / "order.json").write_text(json.dumps(ORDER_JSON))
    (tmp_path / "order.proto").write_text(ORDER_PROTO)
    url = schema_registry.url
    json_topic, proto_topic = topic_factory(1), topic_factory(1)
    produced = sluice(
        "produce", json_topic, "--value-format", "json-schema",
        "--value-schema", str(tmp_path / "order.json"), "--schema-registry", url,
        input='{"id": 1, "item": "pen"}\n{"id": 2}\n',
    )  # fmt: skip
    assert produced.code == 0, str(produced)
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    context = SerializationContext(json_topic, MessageField.VALUE)
    assert _values(sluice.bootstrap, json_topic, lambda d: deserializer(d, context), 2) == [
        {"id": 1, "item": "pen"},
        {"id": 2},
    ]

    produced = sluice(
        "produce", proto_topic, "--value-format", "protobuf",
        "--value-schema", str(tmp_path / "order.proto"), "--schema-registry", url,
        input='{"id": "7", "item": "ink", "tags": ["a", "b"]}\n',
    )  # fmt: skip
    assert produced.code == 0, str(produced)
    assert client.get_latest_version(f"{proto_topic}-value").schema.schema_type == "PROTOBUF"
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    proto = ProtobufDeserializer(message_class(ORDER_PROTO), {"use.deprecated.format": False})
    context = SerializationContext(proto_topic, MessageField.VALUE)
    [message] = _values(sluice.bootstrap, proto_topic, lambda d: proto(d, context), 1)
    assert (message.id, message.item, list(message.tags)) == (7, "ink", ["a", "b"])

    for topic, fmt, expected in (
        (json_topic, "json-schema", ['{"id":1,"item":"pen"}', '{"id":2}']),
        (proto_topic, "protobuf", ['{"id":"7","item":"ink","tags":["a","b"]}']),
    ):
        consumed = sluice(
            "consume", topic, "--from-beginning", "-e", "--value-format", fmt,
            "--schema-registry", url,
        )  # fmt: skip
        assert consumed.code == 0, str(consumed)
        assert consumed.out.splitlines() == expected, str(consumed)


def test_lines_that_do_not_match_the_schema_are_named(
    sluice: Sluice,
    topic_factory: Callable[..., str],
    schema_registry: RegistryProcess,
    tmp_path: Path,
) -> None:
    topic = topic_factory(1)
    (tmp_path / "order.avsc").write_text(json.dumps(ORDER))
    lines = [
        '{"id": 1, "price": "1.00"}',
        '{"id": "two", "price": "1.00"}',
        "not json",
        '{"id": 4, "price": "1.00", "colour": "red"}',
        '{"id": 5, "note": 7, "price": "1.00"}',
    ]
    produced = sluice(
        "produce", topic, "--value-format", "avro", "--value-schema", str(tmp_path / "order.avsc"),
        "--schema-registry", schema_registry.url, input="".join(f"{x}\n" for x in lines),
    )  # fmt: skip
    assert produced.code == 1, str(produced)
    assert 'line 2: value.id: expected a long, got "two"' in produced.err, produced.err
    assert "line 3: the value is not JSON" in produced.err, produced.err
    assert "line 4: value: no field 'colour' in Order" in produced.err, produced.err
    assert 'line 5: value.note: 7 matches no branch of the union ["null", "string"]' in produced.err
    assert "produced 1 record" in produced.err and "4 failed" in produced.err, produced.err
    assert "Traceback" not in produced.err


def test_an_unknown_subject_and_a_registry_that_is_down(
    sluice: Sluice,
    topic_factory: Callable[..., str],
    schema_registry: RegistryProcess,
    tmp_path: Path,
) -> None:
    topic = topic_factory(1)
    unknown = sluice(
        "produce", topic, "--value-format", "avro", "--schema-registry", schema_registry.url,
        input='{"id": 1}\n',
    )  # fmt: skip
    assert unknown.code == 1, str(unknown)
    assert f"subject '{topic}-value' not found in the schema registry" in unknown.err
    assert "--value-schema FILE" in unknown.err

    (tmp_path / "bad.avsc").write_text('{"type": "record", "name": "R", "fields": 1}')
    bad = sluice(
        "produce", topic, "--value-format", "avro", "--value-schema", str(tmp_path / "bad.avsc"),
        "--schema-registry", schema_registry.url, input='{"id": 1}\n',
    )  # fmt: skip
    assert bad.code == 1, str(bad)
    assert f"--value-schema {tmp_path / 'bad.avsc'}: not a valid avro schema" in bad.err, bad.err

    (tmp_path / "order.avsc").write_text(json.dumps(ORDER))
    down = f"http://127.0.0.1:{free_port()}"
    produced = sluice(
        "produce", topic, "--value-format", "avro", "--value-schema", str(tmp_path / "order.avsc"),
        "--schema-registry", down, input='{"id": 1, "price": "1.00"}\n',
    )  # fmt: skip
    assert produced.code == 1, str(produced)
    assert f"line 1: schema registry {down} is unreachable" in produced.err, produced.err
    assert "Traceback" not in produced.err

    plain = topic_factory(1)
    assert sluice("produce", plain, input="hello\n").code == 0
    consumed = sluice(
        "consume", plain, "--from-beginning", "-e", "--value-format", "avro",
        "--schema-registry", schema_registry.url,
    )  # fmt: skip
    assert consumed.code == 1, str(consumed)
    assert "record at partition 0 offset 0" in consumed.err, consumed.err
    assert "not in Confluent's wire format" in consumed.err, consumed.err


def test_the_registry_url_comes_from_the_environment(
    topic_factory: Callable[..., str],
    schema_registry: RegistryProcess,
    client: SchemaRegistryClient,
    bootstrap: str,
    tmp_path: Path,
) -> None:
    from tests.cli.conftest import run_sluice

    topic = topic_factory(1)
    client.register_schema(f"{topic}-value", Schema(json.dumps(ORDER), "AVRO"))
    result = run_sluice(
        "produce", topic, "--value-format", "avro", input='{"id": 1, "price": "2.00"}\n',
        env={"SLUICE_BOOTSTRAP": bootstrap, "SLUICE_SCHEMA_REGISTRY_URL": schema_registry.url},
    )  # fmt: skip
    assert result.code == 0, str(result)
