"""What schemas cost: the registry's rates, Avro against JSON through the serializers, and the
Avro converter against the JSON converter — each beside its reference, in one run.

    python bench/schemas.py [--records N] [--json PATH]

One Sluice broker and one ``sluice schema-registry start`` (both child processes, stopped by
PID). Records: an order of nine fields (ints, a double, strings, a boolean, a timestamp in
ms), the same dicts for every path.

* **registry**: registrations/s (POST ``/subjects/{s}/versions`` of distinct Avro schemas, one
  keep-alive HTTP connection, each answered before the next), lookups/s uncached (GET
  ``/schemas/ids/{id}`` over HTTP: the registry answers from memory) and cached
  (confluent-kafka's ``SchemaRegistryClient.get_schema`` after the first: its own cache);
* **produce and consume**: ``--records`` records produced through confluent-kafka's
  ``AvroSerializer`` (``auto.register.schemas``) against Sluice's JSON serde (orjson) — the
  reference — each in a fresh child process, records/s from the first ``produce`` to the last
  delivery report; consumed back with ``AvroDeserializer`` against ``orjson.loads``, records/s
  until all are read. Target: the Avro path ≥ 80 % of the JSON path;
* **converters**: the Connect step alone, in process: ``from_connect`` (Struct → bytes) and
  ``to_connect`` (bytes → Struct) of ``io.confluent.connect.avro.AvroConverter`` against
  ``org.apache.kafka.connect.json.JsonConverter`` (``schemas.enable=false``, Sluice's default
  JSON path) on the same Connect records. Target: ≥ 80 %.

Every loop is bounded by its record count and a deadline.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _harness import SLUICE, create_topic, free_port, in_child, running_broker, wait_for_port

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "int"},
        {"name": "amount", "type": "double"},
        {"name": "currency", "type": "string"},
        {"name": "item", "type": "string"},
        {"name": "quantity", "type": "int"},
        {"name": "express", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "placed_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
DEADLINE_S = 120.0


def order(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "customer": i % 1000,
        "amount": 12.5 + i % 100,
        "currency": "EUR",
        "item": f"item-{i % 5000}",
        "quantity": 1 + i % 7,
        "express": i % 3 == 0,
        "note": None if i % 2 else "leave at the door",
        "placed_at": datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC)
        + datetime.timedelta(seconds=i),
    }


# -- the registry ----------------------------------------------------------------------------


def _http(port: int) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


def registry_rates(port: int, count: int) -> dict[str, float]:
    conn = _http(port)
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json"}
    ids = []
    start = time.perf_counter()
    for i in range(count):
        schema = {**ORDER, "name": f"Order{i}"}
        body = json.dumps({"schema": json.dumps(schema)})
        conn.request("POST", f"/subjects/bench-{i}-value/versions", body, headers)
        answer = conn.getresponse()
        payload = json.loads(answer.read())
        if answer.status != 200:
            raise RuntimeError(f"registration refused: {payload}")
        ids.append(payload["id"])
        if time.perf_counter() - start > DEADLINE_S:
            break
    registrations = len(ids) / (time.perf_counter() - start)
    start = time.perf_counter()
    lookups = 0
    while lookups < count * 5 and time.perf_counter() - start < DEADLINE_S:
        conn.request("GET", f"/schemas/ids/{ids[lookups % len(ids)]}")
        answer = conn.getresponse()
        answer.read()
        lookups += 1
    uncached = lookups / (time.perf_counter() - start)
    conn.close()
    from confluent_kafka.schema_registry import SchemaRegistryClient

    client = SchemaRegistryClient({"url": f"http://127.0.0.1:{port}"})
    for schema_id in ids:
        client.get_schema(schema_id)
    start = time.perf_counter()
    cached = 0
    while cached < count * 200 and time.perf_counter() - start < DEADLINE_S:
        client.get_schema(ids[cached % len(ids)])
        cached += 1
    client.close()
    return {
        "registrations_per_s": registrations,
        "lookups_uncached_per_s": uncached,
        "lookups_cached_per_s": cached / (time.perf_counter() - start),
    }


# -- produce and consume through the serializers -------------------------------------------


def _serializer(kind: str, registry: str) -> Any:
    if kind == "json":
        from sluice.serde import JSON

        def encode(value: dict[str, Any], _topic: str) -> bytes:
            return JSON.serialize({**value, "placed_at": value["placed_at"].isoformat()})

        return encode
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    serializer = AvroSerializer(SchemaRegistryClient({"url": registry}), json.dumps(ORDER))

    def avro(value: dict[str, Any], topic: str) -> bytes:
        data = serializer(value, SerializationContext(topic, MessageField.VALUE))
        assert data is not None
        return data

    return avro


def produce(kind: str, bootstrap: str, registry: str, topic: str, count: int) -> float:
    """Records/s through ``kind``'s serializer and a confluent-kafka producer (a child)."""
    from confluent_kafka import Producer

    encode = _serializer(kind, registry)
    records = [order(i) for i in range(count)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    delivered = 0
    last = 0.0

    def on_delivery(error: Any, _message: Any) -> None:
        nonlocal delivered, last
        if error is None:
            delivered += 1
            last = time.perf_counter()

    start = time.perf_counter()
    for record in records:
        while True:
            try:
                producer.produce(topic, encode(record, topic), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
        if time.perf_counter() - start > DEADLINE_S:
            break
    producer.flush(60)
    return delivered / (last - start) if delivered else 0.0


def consume(kind: str, bootstrap: str, registry: str, topic: str, count: int) -> float:
    """Records/s read and decoded by ``kind``'s deserializer (a child)."""
    import orjson
    from confluent_kafka import Consumer, TopicPartition

    decode: Any = orjson.loads
    if kind == "avro":
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroDeserializer
        from confluent_kafka.serialization import MessageField, SerializationContext

        deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry}))
        context = SerializationContext(topic, MessageField.VALUE)

        def decode(data: bytes) -> Any:
            return deserializer(data, context)

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"bench-{kind}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = 0
    start = time.perf_counter()
    while read < count and time.perf_counter() - start < DEADLINE_S:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                decode(message.value())
                read += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return read / elapsed


# -- converters ------------------------------------------------------------------------------


def converters(registry: str, count: int) -> dict[str, dict[str, float]]:
    from sluice.connect import Field, Schema, Struct, timestamp_schema
    from sluice.connect.converters import CONVERTERS

    schema = Schema.struct(
        [
            Field("id", Schema("int64")),
            Field("customer", Schema("int32")),
            Field("amount", Schema("float64")),
            Field("currency", Schema("string")),
            Field("item", Schema("string")),
            Field("quantity", Schema("int32")),
            Field("express", Schema("boolean")),
            Field("note", Schema("string", optional=True)),
            Field("placed_at", timestamp_schema()),
        ],
        name="bench.Order",
    )
    structs = [Struct(schema, order(i)) for i in range(count)]
    results: dict[str, dict[str, float]] = {}
    for name, config in (
        ("org.apache.kafka.connect.json.JsonConverter", {"schemas.enable": "false"}),
        ("io.confluent.connect.avro.AvroConverter", {"schema.registry.url": registry}),
    ):
        converter = CONVERTERS[name]()
        converter.configure(config, False)
        start = time.perf_counter()
        encoded = [converter.from_connect("bench-connect", schema, s) for s in structs]
        written = count / (time.perf_counter() - start)
        start = time.perf_counter()
        for data in encoded:
            converter.to_connect("bench-connect", data)
        read = count / (time.perf_counter() - start)
        results[name.rsplit(".", 1)[1]] = {"from_connect_per_s": written, "to_connect_per_s": read}
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    figures: dict[str, Any] = {}
    with running_broker("sluice") as broker:
        port = free_port()
        log = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-registry-{port}.log"
        with log.open("wb") as out:
            registry_proc = subprocess.Popen(
                [SLUICE, "schema-registry", "start", "--listen", f"127.0.0.1:{port}",
                 "-b", broker.bootstrap],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            wait_for_port(port, registry_proc, timeout=60)
            url = f"http://127.0.0.1:{port}"
            figures["registry"] = in_child(registry_rates, port, 300, timeout=600)
            for kind in ("json", "avro"):
                topic = f"bench-{kind}"
                create_topic(broker.bootstrap, topic)
                figures[f"produce_{kind}"] = in_child(
                    produce, kind, broker.bootstrap, url, topic, args.records, timeout=600
                )
                figures[f"consume_{kind}"] = in_child(
                    consume, kind, broker.bootstrap, url, topic, args.records, timeout=600
                )
            figures["converters"] = in_child(converters, url, args.records // 2, timeout=600)
        finally:
            registry_proc.terminate()
            try:
                registry_proc.wait(30)
            except subprocess.TimeoutExpired:
                registry_proc.kill()
                registry_proc.wait()
    report(figures, load_before)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


def report(figures: dict[str, Any], load_before: float) -> None:
    registry = figures["registry"]
    print(f"registry: {registry['registrations_per_s']:,.0f} registrations/s, "
          f"{registry['lookups_uncached_per_s']:,.0f} lookups/s uncached (HTTP), "
          f"{registry['lookups_cached_per_s']:,.0f} lookups/s cached (client)")  # fmt: skip
    for step in ("produce", "consume"):
        avro, plain = figures[f"{step}_avro"], figures[f"{step}_json"]
        ratio = avro / plain if plain else 0.0
        verdict = "met" if ratio >= 0.8 else "missed"
        print(f"{step}: Avro {avro:,.0f}/s, JSON {plain:,.0f}/s: {ratio:.2f}x "
              f"(target >= 0.80x: {verdict})")  # fmt: skip
    json_c, avro_c = figures["converters"]["JsonConverter"], figures["converters"]["AvroConverter"]
    for key, what in (("from_connect_per_s", "write"), ("to_connect_per_s", "read")):
        ratio = avro_c[key] / json_c[key]
        verdict = "met" if ratio >= 0.8 else "missed"
        print(f"converter {what}: Avro {avro_c[key]:,.0f}/s, JSON {json_c[key]:,.0f}/s: "
              f"{ratio:.2f}x (target >= 0.80x: {verdict})")  # fmt: skip
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{stamp}, {platform.node()}, {os.cpu_count()} CPUs, load average "
          f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after")  # fmt: skip


if __name__ == "__main__":
    main()
