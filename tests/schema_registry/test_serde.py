"""confluent-kafka's Avro serializer and deserializer, through a real registry and broker."""

from __future__ import annotations

import json

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.schema_registry.conftest import ClientFactory, RegistryProcess

ORDER = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "namespace": "shop",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "item", "type": "string"},
            {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9,
                                       "scale": 2}},
            {"name": "note", "type": ["null", "string"], "default": None},
        ],
    }
)  # fmt: skip


def test_avro_round_trip_through_the_broker(
    shared_broker: BrokerProcess, registry: RegistryProcess, sr_client: ClientFactory
) -> None:
    from decimal import Decimal

    topic = create_topic(shared_broker.bootstrap)
    client = sr_client(registry.url)
    serializer = AvroSerializer(client, ORDER)
    orders = [
        {"id": i, "item": f"item-{i}", "price": Decimal(f"{i}.25"), "note": None if i % 2 else "x"}
        for i in range(20)
    ]
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap})
    for order in orders:
        value = serializer(order, SerializationContext(topic, MessageField.VALUE))
        assert value is not None and value[0] == 0  # Confluent's wire format: magic byte 0
        producer.produce(topic, value)
    assert producer.flush(CLIENT_TIMEOUT) == 0

    schema_id = client.get_latest_version(f"{topic}-value").schema_id
    assert int.from_bytes(value[1:5], "big") == schema_id

    # a fresh client, so that the deserializer asks the registry for the id
    deserializer = AvroDeserializer(sr_client(registry.url))
    consumer = Consumer(
        {
            "bootstrap.servers": shared_broker.bootstrap,
            "group.id": f"g-{topic}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(orders):
            message = consumer.poll(CLIENT_TIMEOUT)
            assert message is not None, f"only {len(got)} of {len(orders)} records came"
            assert message.error() is None, message.error()
            got.append(
                deserializer(message.value(), SerializationContext(topic, MessageField.VALUE))
            )
    finally:
        consumer.close()
    assert got == orders
