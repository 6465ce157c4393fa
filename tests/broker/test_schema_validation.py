"""Topics that accept only their schemas (Confluent Server's broker-side schema ID validation).

Real processes: a ``sluice schema-registry start`` (its ``_schemas`` topic on the session's
broker) and a second broker started with ``confluent.schema.registry.url`` pointing at it.
Schemas are registered with confluent-kafka's ``SchemaRegistryClient`` and valid records made
by its ``AvroSerializer``; bad ones are raw bytes. Refusals are checked twice: through
confluent-kafka's delivery reports, and with raw Produce requests (:class:`Wire`) for the
``record_errors`` and ``error_message`` of the answer. One test uses a stand-in registry (a
tiny HTTP server in the test answering the one endpoint the broker calls, held until the test
releases it) to show that a slow lookup delays only its own Produce request.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.schema_registry_client import Schema
from confluent_kafka.serialization import MessageField, SerializationContext
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9 import request as produce_v9

from sluice.broker.schema_validation import RegistryClient
from sluice.broker.schema_validation.client import MISSING_TTL_S
from sluice.broker.schema_validation.strategies import SchemaNameError, record_name
from sluice.broker.schema_validation.validator import parse_wire
from tests.broker.conftest import Wire, create_topic, make_batch, read_partition, watermarks
from tests.conftest import BrokerProcess, free_port
from tests.schema_registry.conftest import RegistryFactory, RegistryProcess

pytestmark = pytest.mark.timeout(180)

VALIDATED = {"confluent.value.schema.validation": "true"}
ORDER = """{"type": "record", "name": "Order", "namespace": "shop",
 "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}"""
PAYMENT = """{"type": "record", "name": "Payment", "namespace": "shop",
 "fields": [{"name": "amount", "type": "double"}]}"""
UNKNOWN_ID = 987_654


@pytest.fixture(scope="module")
def registry(
    shared_broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistryProcess]:
    """One registry for the module (storing on the session's broker), stopped by PID."""
    factory = RegistryFactory(shared_broker.bootstrap, tmp_path_factory.mktemp("registry"))
    try:
        yield factory()
    finally:
        for proc in factory.started:
            proc.stop()


@pytest.fixture(scope="module")
def validating(
    registry: RegistryProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    """A broker whose ``confluent.schema.registry.url`` is the registry (a dead URL first:
    the list is tried in order)."""
    root = tmp_path_factory.mktemp("validating-broker")
    dead = f"http://127.0.0.1:{free_port()}"
    config = {"confluent.schema.registry.url": f"{dead},{registry.url}"}
    proc = BrokerProcess(root / "data", config, root / "broker.log")
    try:
        yield proc.start()
    finally:
        try:
            proc.stop()
        finally:
            proc.kill()


@pytest.fixture(scope="module")
def sr(registry: RegistryProcess) -> Iterator[SchemaRegistryClient]:
    client = SchemaRegistryClient({"url": registry.url})
    yield client
    client.close()


def fresh(prefix: str = "orders") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wire(schema_id: int, payload: bytes = b"\x02\x06abc") -> bytes:
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def produce_request(topic: str, batch: bytes) -> Any:
    return produce_v9.ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=10),
        topic_data=(
            produce_v9.TopicProduceData(
                name=topic,
                partition_data=(produce_v9.PartitionProduceData(index=0, records=batch),),
            ),
        ),
    )


def answer(bootstrap: str, topic: str, batch: bytes) -> Any:
    with Wire(bootstrap, timeout=30) as conn:
        response = conn.request(produce_request(topic, batch))
    (topic_answer,) = response.responses
    (partition,) = topic_answer.partition_responses
    return partition


def deliver(bootstrap: str, topic: str, values: list[bytes | None], **conf: str) -> list[Any]:
    """Produce each value as a batch of its own; the delivery reports' errors (None: ok)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, **conf})
    errors: list[Any] = []
    for value in values:
        producer.produce(topic, value, on_delivery=lambda err, _msg: errors.append(err))
        producer.flush(30)
    assert len(errors) == len(values), f"expected {len(values)} delivery reports, got {errors}"
    return errors


def avro(
    sr: SchemaRegistryClient, schema: str, topic: str, value: dict[str, Any], **conf: Any
) -> bytes:
    serializer = AvroSerializer(sr, schema, conf=conf or None)
    data = serializer(value, SerializationContext(topic, MessageField.VALUE))
    assert data is not None
    return data


def schema_id(data: bytes) -> int:
    return int.from_bytes(data[1:5], "big")


# -- through real clients ---------------------------------------------------------------------


def test_only_records_with_the_topics_schema_ids_are_appended(
    validating: BrokerProcess, sr: SchemaRegistryClient
) -> None:
    topic = fresh()
    create_topic(validating.bootstrap, topic, config=VALIDATED)
    good = avro(sr, ORDER, topic, {"id": 1, "item": "tea"})
    other = fresh("payments")
    foreign = avro(sr, PAYMENT, other, {"amount": 2.5})  # registered under <other>-value only
    errors = deliver(
        validating.bootstrap,
        topic,
        [good, b"raw bytes", wire(UNKNOWN_ID), foreign, None, good],
    )
    codes = [e.code() if e is not None else None for e in errors]
    invalid = KafkaError.INVALID_RECORD
    assert codes == [None, invalid, invalid, invalid, None, None], errors
    values = [r.value for r in read_partition(validating.bootstrap, topic)]
    assert values == [good, None, good], "a refused record was appended, or a valid one lost"


def test_a_batch_with_one_bad_record_is_refused_whole_and_each_bad_record_named(
    validating: BrokerProcess, sr: SchemaRegistryClient
) -> None:
    topic = fresh()
    create_topic(validating.bootstrap, topic, config=VALIDATED)
    good = avro(sr, ORDER, topic, {"id": 2, "item": "rice"})
    foreign_id = schema_id(avro(sr, PAYMENT, fresh("payments"), {"amount": 1.0}))
    negative = b"\x00\xff\xff\xff\xff{}"
    batch = make_batch(
        [good, b"no wire format", wire(UNKNOWN_ID), None, wire(foreign_id), negative]
    )
    result = answer(validating.bootstrap, topic, batch)
    assert result.error_code == ErrorCode.invalid_record, result
    named = [(e.batch_index, e.batch_index_error_message) for e in result.record_errors]
    assert named == [
        (1, "value: no magic byte"),
        (2, f"value: unknown schema id {UNKNOWN_ID}"),
        (4, f"value: schema id {foreign_id} is not registered under subject {topic}-value"),
        (5, "value: unknown schema id -1"),
    ], named
    assert result.error_message is not None
    assert "RecordError(batchIndex=1, message='value: no magic byte')" in result.error_message
    assert watermarks(validating.bootstrap, topic) == (0, 0), "part of a refused batch was kept"
    # the same batch without its bad records goes in
    assert answer(validating.bootstrap, topic, make_batch([good, None])).error_code == 0
    assert watermarks(validating.bootstrap, topic) == (0, 2)


@pytest.mark.parametrize(("codec", "compression"), [("lz4", 3), ("zstd", 4)])
def test_compressed_batches_are_decompressed_to_be_checked(
    validating: BrokerProcess, sr: SchemaRegistryClient, codec: str, compression: int
) -> None:
    topic = fresh()
    create_topic(validating.bootstrap, topic, config=VALIDATED)
    good = avro(sr, ORDER, topic, {"id": 3, "item": codec})
    refused = answer(validating.bootstrap, topic, make_batch([good, b"x"], compression=compression))
    assert refused.error_code == ErrorCode.invalid_record, refused
    assert [e.batch_index for e in refused.record_errors] == [1], refused.record_errors
    errors = deliver(validating.bootstrap, topic, [good, b"oops"], **{"compression.type": codec})
    assert errors[0] is None and errors[1].code() == KafkaError.INVALID_RECORD, errors
    assert [r.value for r in read_partition(validating.bootstrap, topic)] == [good]


def test_record_name_strategy(validating: BrokerProcess, sr: SchemaRegistryClient) -> None:
    topic = fresh()
    strategy = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
    create_topic(
        validating.bootstrap,
        topic,
        config={**VALIDATED, "confluent.value.subject.name.strategy": strategy},
    )
    # registered under "shop.Order" by the serializer's own RecordNameStrategy
    by_record = avro(
        sr,
        ORDER.replace("item", "sku"),
        topic,
        {"id": 4, "sku": "x"},
        **{"subject.name.strategy": record_subject_name_strategy},
    )
    assert "shop.Order" in sr.get_subjects()
    by_topic = avro(sr, PAYMENT, topic, {"amount": 3.0})  # <topic>-value, not shop.Payment
    errors = deliver(validating.bootstrap, topic, [by_record, by_topic])
    assert errors[0] is None, errors
    assert errors[1].code() == KafkaError.INVALID_RECORD, errors
    assert [r.value for r in read_partition(validating.bootstrap, topic)] == [by_record]


def test_topic_record_name_strategy(validating: BrokerProcess, sr: SchemaRegistryClient) -> None:
    topic = fresh()
    strategy = "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"
    create_topic(
        validating.bootstrap,
        topic,
        config={**VALIDATED, "confluent.value.subject.name.strategy": strategy},
    )
    good = avro(
        sr,
        PAYMENT,
        topic,
        {"amount": 9.0},
        **{"subject.name.strategy": topic_record_subject_name_strategy},
    )
    assert f"{topic}-shop.Payment" in sr.get_subjects()
    elsewhere = avro(
        sr, ORDER, "elsewhere", {"id": 5, "item": "y"},
        **{"subject.name.strategy": topic_record_subject_name_strategy},
    )  # fmt: skip
    result = answer(validating.bootstrap, topic, make_batch([good, elsewhere]))
    assert [(e.batch_index, e.batch_index_error_message) for e in result.record_errors] == [
        (
            1,
            f"value: schema id {schema_id(elsewhere)} is not registered under subject "
            f"{topic}-shop.Order",
        )
    ], result
    assert deliver(validating.bootstrap, topic, [good]) == [None]


def test_key_validation_checks_keys_and_lets_null_keys_pass(
    validating: BrokerProcess, sr: SchemaRegistryClient
) -> None:
    topic = fresh()
    create_topic(validating.bootstrap, topic, config={"confluent.key.schema.validation": "true"})
    key_schema = Schema('{"type": "string"}', "AVRO")
    key_id = sr.register_schema(f"{topic}-key", key_schema)
    value_id = sr.register_schema(f"{topic}-value", Schema('{"type": "int"}', "AVRO"))
    batch = make_batch(
        [b"any value", b"v", b"v", b"v"],
        keys=[wire(key_id, b"\x02k"), None, b"raw key", wire(value_id, b"\x02k")],
    )
    result = answer(validating.bootstrap, topic, batch)
    assert [(e.batch_index, e.batch_index_error_message) for e in result.record_errors] == [
        (2, "key: no magic byte"),
        (3, f"key: schema id {value_id} is not registered under subject {topic}-key"),
    ], result
    ok = answer(validating.bootstrap, topic, make_batch([b"raw value"], keys=[wire(key_id)]))
    assert ok.error_code == 0, ok


def test_a_topic_without_validation_is_unaffected(validating: BrokerProcess) -> None:
    topic = fresh("plain")
    create_topic(validating.bootstrap, topic)
    assert deliver(validating.bootstrap, topic, [b"raw", wire(UNKNOWN_ID)]) == [None, None]


def test_validation_can_be_turned_on_and_off(validating: BrokerProcess) -> None:
    topic = fresh("toggled")
    create_topic(validating.bootstrap, topic)
    alter(validating.bootstrap, topic, VALIDATED)
    refused = answer(validating.bootstrap, topic, make_batch([b"raw"]))
    assert refused.error_code == ErrorCode.invalid_record, refused
    alter(validating.bootstrap, topic, {"confluent.value.schema.validation": "false"})
    assert answer(validating.bootstrap, topic, make_batch([b"raw"])).error_code == 0


# -- configuration errors ---------------------------------------------------------------------


def alter(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in config.items()
    ]
    resource = ConfigResource("topic", topic, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(20)


def create_error(bootstrap: str, config: dict[str, str]) -> KafkaException:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    name = fresh("refused")
    futures = admin.create_topics([NewTopic(name, 1, 1, config=config)], request_timeout=15)
    with pytest.raises(KafkaException) as caught:
        futures[name].result(20)
    return caught.value


def test_validation_needs_the_brokers_registry_url(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    plain = broker_factory()
    error = create_error(plain.bootstrap, VALIDATED).args[0]
    assert error.code() == KafkaError.INVALID_CONFIG, error
    assert "confluent.schema.registry.url" in error.str(), error
    key_error = create_error(plain.bootstrap, {"confluent.key.schema.validation": "true"}).args[0]
    assert key_error.code() == KafkaError.INVALID_CONFIG, key_error
    topic = fresh()
    create_topic(plain.bootstrap, topic)
    with pytest.raises(KafkaException) as caught:
        alter(plain.bootstrap, topic, VALIDATED)
    assert caught.value.args[0].code() == KafkaError.INVALID_CONFIG, caught.value
    assert "confluent.schema.registry.url" in caught.value.args[0].str()


def test_unknown_strategies_and_bad_booleans_are_refused(validating: BrokerProcess) -> None:
    bad_strategy = {"confluent.value.subject.name.strategy": "TopicNameStrategy"}
    error = create_error(validating.bootstrap, bad_strategy).args[0]
    assert error.code() == KafkaError.INVALID_CONFIG, error
    assert "confluent.value.subject.name.strategy" in error.str(), error
    error = create_error(validating.bootstrap, {"confluent.key.schema.validation": "yes"}).args[0]
    assert error.code() == KafkaError.INVALID_CONFIG, error


def test_an_unreachable_registry_refuses_with_a_retriable_error(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    proc = broker_factory(**{"confluent.schema.registry.url": dead})
    topic, plain = fresh(), fresh("plain")
    create_topic(proc.bootstrap, topic, config=VALIDATED)
    create_topic(proc.bootstrap, plain)
    result = answer(proc.bootstrap, topic, make_batch([wire(1)]))
    assert result.error_code == ErrorCode.request_timed_out, result
    assert "schema registry could not be asked" in (result.error_message or ""), result
    assert watermarks(proc.bootstrap, topic) == (0, 0)
    # the broker keeps serving: other topics take records
    assert answer(proc.bootstrap, plain, make_batch([b"raw"])).error_code == 0


# -- the registry client and the record names (no broker) -------------------------------------


def test_lookups_are_cached_and_misses_asked_again_after_their_ttl(
    registry: RegistryProcess, sr: SchemaRegistryClient
) -> None:
    topic = fresh()
    unique = Schema(ORDER.replace('"Order"', f'"Order{uuid.uuid4().hex}"'), "AVRO")
    registered = sr.register_schema(f"{topic}-value", unique)
    now = [0.0]
    client = RegistryClient([registry.url], clock=lambda: now[0])

    async def scenario() -> None:
        subjects = await client.subjects(registered, f"{topic}-value")
        assert subjects == {f"{topic}-value"}, subjects
        schema = await client.schema(registered)
        assert schema is not None and schema.schema_type == "AVRO"
        asked = client.requests
        await client.subjects(registered, f"{topic}-value")
        await client.schema(registered)
        assert client.requests == asked, "a cached answer was asked again"
        assert await client.schema(UNKNOWN_ID) is None
        assert await client.schema(UNKNOWN_ID) is None
        assert client.requests == asked + 1, "an unknown id was asked twice within its TTL"
        # a subject the cached ones lack is asked at once, then kept as missing for a while
        assert f"{topic}-other" not in (await client.subjects(registered, f"{topic}-other") or ())
        assert f"{topic}-other" not in (await client.subjects(registered, f"{topic}-other") or ())
        assert client.requests == asked + 2, "a subject missing was not (only once) asked again"
        sr.register_schema(f"{topic}-other", unique)
        now[0] += MISSING_TTL_S
        found = await client.subjects(registered, f"{topic}-other")
        assert found is not None and f"{topic}-other" in found, found
        # concurrent cold lookups of one id share one request
        now[0] += 3600
        before = client.requests
        await asyncio.gather(*(client.subjects(registered, "x") for _ in range(5)))
        assert client.requests == before + 1

    try:
        asyncio.run(scenario())
    finally:
        client.close()


@pytest.mark.parametrize(
    ("schema_type", "schema", "indexes", "expected"),
    [
        ("AVRO", ORDER, (), "shop.Order"),
        (
            "AVRO",
            '{"type": "record", "name": "a.b.C", "namespace": "x", "fields": []}',
            (),
            "a.b.C",
        ),
        ("AVRO", '"string"', (), "string"),
        ("JSON", '{"title": "Order", "type": "object"}', (), "Order"),
        (
            "PROTOBUF",
            'syntax = "proto3";\npackage shop.v1;\n// message Hidden {}\n'
            "message Order { string message = 1; message Line { int32 n = 1; } "
            "enum Kind { A = 0; } }\nmessage Refund { oneof x { string a = 1; } }",
            (1,),
            "shop.v1.Refund",
        ),
        ("PROTOBUF", "package p; message A { message B {} message C {} }", (0, 1), "p.A.C"),
        ("PROTOBUF", "message Top {}", (0,), "Top"),
    ],
)
def test_record_names(
    schema_type: str, schema: str, indexes: tuple[int, ...], expected: str
) -> None:
    given = serialized(schema) if schema_type == "PROTOBUF" else schema
    assert record_name(schema_type, given, indexes) == expected


def serialized(proto: str) -> str:
    """A Protobuf schema as the registry answers ``format=serialized``: base64 of its
    ``FileDescriptorProto``."""
    from sluice.schemas.formats.protobuf import FORMAT, ProtobufSchema

    parsed = FORMAT.parse(proto, {})
    assert isinstance(parsed, ProtobufSchema)
    return parsed.serialized()


def test_schemas_without_a_record_name_are_named_as_such() -> None:
    with pytest.raises(SchemaNameError, match="no title"):
        record_name("JSON", '{"type": "object"}')
    with pytest.raises(SchemaNameError, match="index path"):
        record_name("PROTOBUF", serialized("message A {}"), (3,))
    with pytest.raises(SchemaNameError, match="not a serialized descriptor"):
        record_name("PROTOBUF", "message A {}", (0,))


def test_wire_format_parsing() -> None:
    assert parse_wire(b"", protobuf=False) == "no magic byte"
    assert parse_wire(b"\x00\x00\x01", protobuf=False) == (
        "no schema id after the magic byte (3 bytes)"
    )
    assert parse_wire(wire(5, b"\x00payload"), protobuf=True) == (5, (0,))
    assert parse_wire(wire(5, b"\x06\x02\x04\x06"), protobuf=True) == (5, (1, 2, 3))
    assert parse_wire(wire(5, b"\x06\x02"), protobuf=True) == "truncated Protobuf message indexes"


def test_docs_list_the_new_keys() -> None:
    text = (Path(__file__).parents[2] / "docs" / "broker.md").read_text(encoding="utf-8")
    for key in (
        "confluent.value.schema.validation",
        "confluent.key.schema.validation",
        "confluent.value.subject.name.strategy",
        "confluent.key.subject.name.strategy",
    ):
        assert f"| `{key}`" in text, f"docs/broker.md has no row for {key}"


def test_record_names_of_json_and_protobuf_schemas(
    validating: BrokerProcess, sr: SchemaRegistryClient
) -> None:
    """JSON: the title, through confluent-kafka's JSONSerializer; Protobuf: the message of the
    record's message-index path, in a schema the registry parsed with protoc."""
    topic = fresh()
    strategy = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
    create_topic(
        validating.bootstrap,
        topic,
        config={**VALIDATED, "confluent.value.subject.name.strategy": strategy},
    )
    title = f"Shipment{uuid.uuid4().hex[:6]}"
    shipment = json.dumps(
        {"title": title, "type": "object", "properties": {"id": {"type": "integer"}}}
    )
    serializer = JSONSerializer(
        shipment, sr, conf={"subject.name.strategy": record_subject_name_strategy}
    )
    by_title = serializer({"id": 1}, SerializationContext(topic, MessageField.VALUE))
    assert by_title is not None and title in sr.get_subjects()
    package = f"shop.v{uuid.uuid4().hex[:6]}"
    proto = (
        f'syntax = "proto3";\npackage {package};\n'
        "message Order { string item = 1; }\nmessage Refund { int64 cents = 1; }\n"
    )
    refund_id = sr.register_schema(f"{package}.Refund", Schema(proto, "PROTOBUF"))
    refund = wire(refund_id, b"\x02\x02" + b"\x08\x05")  # message indexes [1]: Refund
    order = wire(refund_id, b"\x00" + b"\x0a\x01x")  # [0]: Order, not registered by its name
    result = answer(validating.bootstrap, topic, make_batch([by_title, refund, order]))
    assert [(e.batch_index, e.batch_index_error_message) for e in result.record_errors] == [
        (2, f"value: schema id {refund_id} is not registered under subject {package}.Order")
    ], result
    assert answer(validating.bootstrap, topic, make_batch([by_title, refund])).error_code == 0


class _HeldRegistry(ThreadingHTTPServer):
    """A stand-in registry (the one endpoint a TopicNameStrategy check calls) whose answers
    wait until :attr:`release` is set: it shows what the broker does while a lookup is slow."""

    def __init__(self, subjects: list[str]) -> None:
        self.subjects = subjects
        self.release = threading.Event()
        self.asked = threading.Event()
        super().__init__(("127.0.0.1", 0), _HeldHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _HeldHandler(BaseHTTPRequestHandler):
    server: _HeldRegistry

    def do_GET(self) -> None:
        self.server.asked.set()
        self.server.release.wait(60)
        body = json.dumps(self.server.subjects).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_slow_lookup_delays_only_its_own_request(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    topic, plain = fresh(), fresh("plain")
    held = _HeldRegistry([f"{topic}-value"])
    serving = threading.Thread(target=held.serve_forever, daemon=True)
    serving.start()
    try:
        proc = broker_factory(**{"confluent.schema.registry.url": held.url})
        create_topic(proc.bootstrap, topic, config=VALIDATED)
        create_topic(proc.bootstrap, plain)
        results: list[Any] = []
        waiting = threading.Thread(
            target=lambda: results.append(answer(proc.bootstrap, topic, make_batch([wire(1)])))
        )
        waiting.start()
        assert held.asked.wait(30), "the broker never asked the registry"
        # the lookup hangs: another connection is served meanwhile
        assert answer(proc.bootstrap, plain, make_batch([b"raw"])).error_code == 0
        assert results == [], "the validated batch was answered before the registry answered"
        held.release.set()
        waiting.join(30)
        assert [r.error_code for r in results] == [0], results
        assert watermarks(proc.bootstrap, topic) == (0, 1)
    finally:
        held.release.set()
        held.shutdown()
        held.server_close()
