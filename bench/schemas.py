"""What schemas cost: the registry's rates, Avro against JSON through the serializers, and the
Avro converter against the JSON converter — each beside its reference, in one run.

    python bench/schemas.py [--records N] [--repeats R] [--json PATH]

One Sluice broker and one ``sluice schema-registry start`` (both child processes, stopped by
PID). Records: an order of nine fields (ints, a double, strings, a boolean, a timestamp in
ms), the same dicts for every path.

* **registry**: registrations/s (POST ``/subjects/{s}/versions`` of distinct Avro schemas, one
  keep-alive HTTP connection, each answered before the next), lookups/s uncached (GET
  ``/schemas/ids/{id}`` over HTTP: the registry answers from memory) and cached
  (confluent-kafka's ``SchemaRegistryClient.get_schema`` after the first: its own cache);
* **produce and consume**: ``--records`` records produced through Sluice's ``AvroSerde`` (its
  compiled codec, ``sluice.schemas.avro_codec``) and through confluent-kafka's
  ``AvroSerializer`` (``auto.register.schemas``; the interoperability reference) against
  Sluice's JSON serde (orjson) — the reference — each in a fresh child process, records/s from
  the first ``produce`` to the last delivery report; consumed back with the serde (and with
  ``AvroDeserializer``) against ``orjson.loads``, records/s until all are read. The first
  record of each is written (read) before the clock starts: registering or fetching the schema
  and compiling it are one-time costs (~150 ms to read the first Avro record: the registry
  client's imports and an HTTP request). Target: the Avro path ≥ 80 % of the JSON path;
* **converters**: the Connect step alone, in process: ``from_connect`` (Struct → bytes) and
  ``to_connect`` (bytes → Struct) of ``io.confluent.connect.avro.AvroConverter`` against
  ``org.apache.kafka.connect.json.JsonConverter`` (``schemas.enable=false``, Sluice's default
  JSON path) on the same Connect records. Target: ≥ 80 %.

* **codecs**: microseconds a record of each codec alone, in process (the JSON serde's write and
  ``orjson.loads``; Sluice's Avro codec and fastavro's ``schemaless_writer``/``reader``): the
  breakdown behind the ratios above.

The machine may be shared: each figure is the best of ``--repeats`` runs, the paths alternated
within each run. Every loop is bounded by its record count and a deadline.
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


def _sluice_avro(registry: str, topic: str) -> Any:
    from sluice.schemas.serdes import AvroSerde, for_topic

    serde = AvroSerde(json.dumps(ORDER), {"schema.registry.url": registry})
    return for_topic(serde, topic, is_key=False)


def _serializer(kind: str, registry: str, topic: str) -> Any:
    if kind == "json":
        from sluice.serde import JSON

        def encode(value: dict[str, Any], _topic: str) -> bytes:
            return JSON.serialize({**value, "placed_at": value["placed_at"].isoformat()})

        return encode
    if kind == "sluice-avro":
        serialize = _sluice_avro(registry, topic).serialize
        return lambda value, _topic: serialize(value)
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

    encode = _serializer(kind, registry, topic)
    records = [order(i) for i in range(count)]
    encode(records[0], topic)  # registered (and compiled) before the clock starts
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
    if kind == "sluice-avro":
        decode = _sluice_avro(registry, topic).deserialize
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
    first = None
    deadline = time.perf_counter() + DEADLINE_S
    while first is None and time.perf_counter() < deadline:
        first = consumer.poll(1.0)
    assert first is not None and first.error() is None, first
    decode(first.value())  # the writer's schema fetched (and compiled) before the clock starts
    read = 0
    start = time.perf_counter()
    while read < count - 1 and time.perf_counter() - start < DEADLINE_S:
        # no more than are left: a short batch would wait out the timeout
        for message in consumer.consume(min(1000, count - 1 - read), 1.0):
            if message.error() is None:
                decode(message.value())
                read += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return read / elapsed


# -- converters ------------------------------------------------------------------------------


def converters(registry: str, count: int, repeats: int) -> dict[str, dict[str, float]]:
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
    for _ in range(repeats):  # alternated, the best of each: the machine's load varies
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
            best = results.setdefault(name.rsplit(".", 1)[1], {})
            best["from_connect_per_s"] = max(best.get("from_connect_per_s", 0.0), written)
            best["to_connect_per_s"] = max(best.get("to_connect_per_s", 0.0), read)
    return results


def codec_costs(registry: str, count: int, repeats: int) -> dict[str, float]:
    """Microseconds a record, in process (the best of *repeats*): each codec alone, and the
    serdes (Sluice's and confluent-kafka's, the schema registered and cached before)."""
    import io

    import orjson
    from fastavro import parse_schema, schemaless_reader, schemaless_writer

    from sluice.schemas.avro_codec import AvroCodec
    from sluice.serde import JSON

    records = [order(i) for i in range(count)]
    texts = [{**r, "placed_at": r["placed_at"].isoformat()} for r in records]
    codec, parsed = AvroCodec(ORDER), parse_schema(ORDER)
    payloads = [codec.encode(r) for r in records]
    jsons = [JSON.serialize(t) for t in texts]

    def fastavro_write(record: dict[str, Any]) -> bytes:
        buffer = io.BytesIO()
        schemaless_writer(buffer, parsed, record)
        return buffer.getvalue()

    def fastavro_read(data: bytes) -> Any:
        return schemaless_reader(io.BytesIO(data), parsed, None)

    def json_write(value: dict[str, Any]) -> bytes:  # as the produce step writes JSON
        return JSON.serialize({**value, "placed_at": value["placed_at"].isoformat()})

    topic = "bench-codecs"
    serde = _sluice_avro(registry, topic)
    confluent_write = _serializer("avro", registry, topic)
    framed = [serde.serialize(r) for r in records]
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    deserializer = AvroDeserializer(SchemaRegistryClient({"url": registry}))
    context = SerializationContext(topic, MessageField.VALUE)
    steps: dict[str, tuple[Any, list[Any]]] = {
        "json_serde_write_us": (json_write, records),
        "orjson_loads_us": (orjson.loads, jsons),
        "sluice_avro_serde_write_us": (serde.serialize, records),
        "sluice_avro_serde_read_us": (serde.deserialize, framed),
        "avro_serializer_us": (lambda r: confluent_write(r, topic), records),
        "avro_deserializer_us": (lambda d: deserializer(d, context), framed),
        "sluice_avro_encode_us": (codec.encode, records),
        "sluice_avro_decode_us": (codec.decode, payloads),
        "fastavro_write_us": (fastavro_write, records),
        "fastavro_read_us": (fastavro_read, payloads),
    }
    costs: dict[str, float] = {}
    for _ in range(repeats):
        for name, (step, items) in steps.items():
            start = time.perf_counter()
            for item in items:
                step(item)
            took = (time.perf_counter() - start) / len(items) * 1e6
            costs[name] = min(costs.get(name, took), took)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, the best kept")
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
            for run in range(args.repeats):  # alternated, the best of each: the load varies
                for kind in ("json", "sluice-avro", "avro"):
                    topic = f"bench-{kind}-{run}"
                    create_topic(broker.bootstrap, topic)
                    for step, function in (("produce", produce), ("consume", consume)):
                        rate = in_child(
                            function, kind, broker.bootstrap, url, topic, args.records,
                            timeout=600,
                        )  # fmt: skip
                        key = f"{step}_{kind}"
                        figures[key] = max(figures.get(key, 0.0), rate)
            figures["converters"] = in_child(
                converters, url, args.records // 2, args.repeats, timeout=600
            )
            figures["codecs"] = in_child(codec_costs, url, 20_000, args.repeats, timeout=600)
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
        plain = figures[f"{step}_json"]
        for kind, what in (("sluice-avro", "Sluice's AvroSerde"), ("avro", "confluent-kafka")):
            avro = figures[f"{step}_{kind}"]
            ratio = avro / plain if plain else 0.0
            verdict = "met" if ratio >= 0.8 else "missed"
            print(f"{step}: Avro ({what}) {avro:,.0f}/s, JSON {plain:,.0f}/s: {ratio:.2f}x "
                  f"(target >= 0.80x: {verdict})")  # fmt: skip
    json_c, avro_c = figures["converters"]["JsonConverter"], figures["converters"]["AvroConverter"]
    for key, what in (("from_connect_per_s", "write"), ("to_connect_per_s", "read")):
        ratio = avro_c[key] / json_c[key]
        verdict = "met" if ratio >= 0.8 else "missed"
        print(f"converter {what}: Avro {avro_c[key]:,.0f}/s, JSON {json_c[key]:,.0f}/s: "
              f"{ratio:.2f}x (target >= 0.80x: {verdict})")  # fmt: skip
    costs = figures["codecs"]
    print("µs a record, in process: " + ", ".join(f"{k.removesuffix('_us')} {v:.2f}"
                                                  for k, v in costs.items()))  # fmt: skip
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{stamp}, {platform.node()}, {os.cpu_count()} CPUs, load average "
          f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after")  # fmt: skip


if __name__ == "__main__":
    main()
