"""Sluice's Avro serde writes through its own codec (not confluent-kafka's serializer): the bytes
are ``AvroSerializer``'s, what ``AvroSerializer`` writes it reads, and the registry options
(auto-register, use.latest.version, subject strategies, a reader schema) behave as Confluent's."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.schemas.serdes import AvroSerde, SchemaSerde, for_topic
from sluice.serde import SerdeError
from tests.conftest import BrokerProcess
from tests.schema_registry.conftest import RegistryFactory, RegistryProcess

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "item", "type": "string"},
        {"name": "price", "type": "double"},
        {"name": "paid", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "map", "values": "int"}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
ORDER_V2 = {**ORDER, "fields": [*ORDER["fields"], {"name": "qty", "type": "int", "default": 1}]}
VALUE = {
    "id": 7,
    "item": "pen",
    "price": 1.5,
    "paid": True,
    "note": None,
    "tags": {"red": 1},
    "at": dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.UTC),
}


@pytest.fixture(scope="module")
def schema_registry(
    shared_broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistryProcess]:
    """One ``sluice schema-registry start`` for this module's tests (each uses its own
    subjects), stopped by PID."""
    factory = RegistryFactory(shared_broker.bootstrap, tmp_path_factory.mktemp("registry"))
    try:
        yield factory()
    finally:
        for proc in factory.started:
            proc.stop()


def _codec_of(serde: Any) -> Any:
    return serde.serialize.__self__


def _context(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_the_bytes_are_avro_serializers_both_ways(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    serde = for_topic(
        AvroSerde(json.dumps(ORDER), {"schema.registry.url": schema_registry.url}),
        "orders-codec",
        is_key=False,
    )
    data = serde.serialize(VALUE)
    assert _codec_of(serde)._avro_writer.__name__ == "write"  # Sluice's codec wrote them
    client = sr_client(schema_registry.url)
    confluent = AvroSerializer(client, json.dumps(ORDER))(VALUE, _context("orders-codec"))
    assert data == confluent
    assert AvroDeserializer(client)(data, _context("orders-codec")) == VALUE
    assert serde.deserialize(confluent) == VALUE
    other = {**VALUE, "note": "wrap it", "tags": {}, "id": -(2**40)}
    written = AvroSerializer(client, json.dumps(ORDER))(other, _context("orders-codec"))
    assert serde.deserialize(written) == other
    assert serde.serialize(other) == written


def test_bad_values_get_fastavros_error(schema_registry: RegistryProcess) -> None:
    serde = for_topic(
        AvroSerde(json.dumps(ORDER), {"schema.registry.url": schema_registry.url}),
        "orders-bad",
        is_key=False,
    )
    with pytest.raises(SerdeError, match="cannot serialize the value of topic 'orders-bad'"):
        serde.serialize({**VALUE, "id": "seven"})
    with pytest.raises(SerdeError, match="cannot deserialize"):
        serde.deserialize(serde.serialize(VALUE)[:-3])


def test_use_latest_version_writes_with_the_latest_and_reads_into_it(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(schema_registry.url)
    client.register_schema("latest-value", Schema(json.dumps(ORDER), "AVRO"))
    v2 = client.register_schema("latest-value", Schema(json.dumps(ORDER_V2), "AVRO"))
    config = {
        "schema.registry.url": schema_registry.url,
        "use.latest.version": "true",
        "auto.register.schemas": "false",
    }
    serde = for_topic(AvroSerde(None, config), "latest", is_key=False)
    data = serde.serialize({**VALUE, "qty": 3})
    assert int.from_bytes(data[1:5], "big") == v2
    assert serde.deserialize(data) == {**VALUE, "qty": 3}
    old = AvroSerializer(client, json.dumps(ORDER), conf={"auto.register.schemas": False})(
        VALUE, _context("latest")
    )
    assert serde.deserialize(old) == {**VALUE, "qty": 1}  # resolved into the latest version
    assert AvroDeserializer(client, conf={"use.latest.version": True})(old, _context("latest")) == {
        **VALUE,
        "qty": 1,
    }


def test_a_reader_schema_resolves_older_writers(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    client = sr_client(schema_registry.url)
    old = AvroSerializer(client, json.dumps(ORDER))(VALUE, _context("resolve"))
    serde = for_topic(
        AvroSerde(json.dumps(ORDER_V2), {"schema.registry.url": schema_registry.url}),
        "resolve",
        is_key=False,
    )
    assert serde.deserialize(old) == {**VALUE, "qty": 1}


def test_record_name_strategies_name_the_subject(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    url = schema_registry.url
    record = AvroSerde(
        json.dumps(ORDER),
        {"schema.registry.url": url, "subject.name.strategy": "RecordNameStrategy"},
    )
    assert isinstance(record, SchemaSerde)
    data = record.serialize(VALUE)  # no topic needed
    topic_record = for_topic(
        AvroSerde(
            json.dumps(ORDER),
            {"schema.registry.url": url, "subject.name.strategy": "TopicRecordNameStrategy"},
        ),
        "tr",
        is_key=True,
    )
    topic_record.serialize(VALUE)
    client = sr_client(url)
    assert int.from_bytes(data[1:5], "big") == client.get_latest_version("shop.Order").schema_id
    assert client.get_latest_version("tr-shop.Order").schema_id == int.from_bytes(data[1:5], "big")
    assert record.deserialize(data) == VALUE


@pytest.mark.parametrize(
    ("schema", "value"), [('"bytes"', b"\x00raw"), ('"string"', "text"), ('"long"', 42)]
)
def test_primitive_schemas_as_confluent_writes_them(
    schema_registry: RegistryProcess,
    sr_client: Callable[[str], SchemaRegistryClient],
    schema: str,
    value: Any,
) -> None:
    topic = f"primitive-{json.loads(schema)}"
    serde = for_topic(
        AvroSerde(schema, {"schema.registry.url": schema_registry.url}), topic, is_key=False
    )
    data = serde.serialize(value)
    client = sr_client(schema_registry.url)
    assert data == AvroSerializer(client, schema)(value, _context(topic))
    assert serde.deserialize(data) == value == AvroDeserializer(client)(data, _context(topic))


def test_a_latest_version_with_references_goes_through_confluent_kafka(
    schema_registry: RegistryProcess, sr_client: Callable[[str], SchemaRegistryClient]
) -> None:
    from confluent_kafka.schema_registry import SchemaReference

    client = sr_client(schema_registry.url)
    item = {
        "type": "record",
        "name": "Item",
        "namespace": "shop",
        "fields": [{"name": "sku", "type": "string"}],
    }
    client.register_schema("shop.Item", Schema(json.dumps(item), "AVRO"))
    line = {
        "type": "record",
        "name": "Line",
        "namespace": "shop",
        "fields": [{"name": "item", "type": "shop.Item"}],
    }
    refs = [SchemaReference("shop.Item", "shop.Item", 1)]
    schema_id = client.register_schema("lines-value", Schema(json.dumps(line), "AVRO", refs))
    config = {
        "schema.registry.url": schema_registry.url,
        "use.latest.version": True,
        "auto.register.schemas": False,
    }
    serde = for_topic(AvroSerde(None, config), "lines", is_key=False)
    value = {"item": {"sku": "pen"}}
    data = serde.serialize(value)
    assert _codec_of(serde)._avro_writer.__name__ == "_confluent"  # confluent-kafka wrote it
    assert int.from_bytes(data[1:5], "big") == schema_id
    assert serde.deserialize(data) == value
    assert AvroDeserializer(client)(data, _context("lines")) == value
