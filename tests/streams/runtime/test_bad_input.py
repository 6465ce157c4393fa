"""Bad input against the real broker: poison records (bad JSON, a missing field, a failing user
function, an output record too large) under each handler setting. Skipped records go to the
dead-letter topic with Kafka's context headers — under exactly-once in the transaction that
commits the offsets past them — and are counted as dropped; with the default handler the app
stops, naming the record's topic, partition and offset."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from sluice import clients
from sluice.dsl import App
from sluice.streams import DeserializationError, ProcessingError, ProductionError
from tests.conftest import BrokerProcess, create_topic, free_port
from tests.platform.scrape import scrape_until
from tests.streams.runtime.fixtures import read, wait_for

CONTEXT = (
    "__streams.errors.exception",
    "__streams.errors.message",
    "__streams.errors.stacktrace",
    "__streams.errors.topic",
    "__streams.errors.partition",
    "__streams.errors.offset",
)
DROPPED = "kafka_streams_stream_task_metrics_dropped_records_total"
INPUT = [
    b'{"n": 5}',  # 0: 2
    b"not json",  # 1: bad JSON
    b'{"m": 1}',  # 2: no "n": KeyError in the user function
    b'{"n": 0}',  # 3: ZeroDivisionError in the user function
    b'{"n": 2}',  # 4: 5
]


def _send(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for number, value in enumerate(values):
        producer.produce(topic, value, f"k{number}".encode(), timestamp=1_000 + number)
    assert producer.flush(30) == 0


def _read_raw(bootstrap: str, topic: str, count: int, *, committed_only: bool = False) -> list[Any]:
    """``count`` records of ``topic``: (key, value, timestamp, headers as a list)."""
    consumer = clients.consumer(
        bootstrap,
        **{
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
        },
    )
    consumer.subscribe([topic])
    found: list[Any] = []
    deadline = time.monotonic() + 60
    try:
        while len(found) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.2):
                if message.error() is None:
                    found.append(
                        (
                            message.key(),
                            message.value(),
                            message.timestamp()[1],
                            list(message.headers() or []),
                        )
                    )
    finally:
        consumer.close()
    assert len(found) == count, f"{topic}: expected {count} records, read {found}"
    return found


def _app(bootstrap: str, tmp_path: Path, source: str, out: str, **settings: Any) -> App:
    app = App(
        f"poison-{uuid.uuid4().hex[:8]}",
        bootstrap,
        state_dir=tmp_path,
        commit_interval_ms=100,
        stores="memory",
        **settings,
    )
    app.stream(source).map_values(lambda v: 10 // v["n"]).to(out)
    return app


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
def test_poison_records_go_to_the_dead_letter_topic_and_the_app_goes_on(
    shared_broker: BrokerProcess, tmp_path: Path, guarantee: str
) -> None:
    bootstrap = shared_broker.bootstrap
    source, out, dead = (create_topic(bootstrap) for _ in range(3))
    port = free_port()
    app = _app(
        bootstrap,
        tmp_path,
        source,
        out,
        processing_guarantee=guarantee,
        metrics_listen=f"127.0.0.1:{port}",
        **{
            "default.deserialization.exception.handler": "LogAndContinueExceptionHandler",
            "processing.exception.handler": "log_and_continue",
            "errors.deadletterqueue.topic.name": dead,
        },
    )
    _send(bootstrap, source, INPUT)
    app.start()
    try:
        exactly_once = guarantee == "exactly_once_v2"
        results = read(bootstrap, out, until=lambda rs: len(rs) >= 2, committed_only=exactly_once)
        assert [(k, v) for k, v, _ in results] == [("k0", 2), ("k4", 5)]
        dead_letters = _read_raw(bootstrap, dead, 3, committed_only=exactly_once)
        assert [(k, v, ts) for k, v, ts, _ in dead_letters] == [
            (b"k1", b"not json", 1_001),
            (b"k2", b'{"m": 1}', 1_002),
            (b"k3", b'{"n": 0}', 1_003),
        ]
        contexts = []
        for _, _, _, headers in dead_letters:
            assert [name for name, _ in headers] == list(CONTEXT)
            contexts.append({name: value.decode() for name, value in headers})
        assert [c["__streams.errors.exception"] for c in contexts] == [
            "orjson.JSONDecodeError",
            "KeyError",
            "ZeroDivisionError",
        ]
        assert [c["__streams.errors.message"] for c in contexts][1:] == [
            "'n'",
            "integer division or modulo by zero",
        ]
        assert {
            (c["__streams.errors.topic"], c["__streams.errors.partition"]) for c in contexts
        } == {(source, "0")}
        assert [c["__streams.errors.offset"] for c in contexts] == ["1", "2", "3"]
        assert all(c["__streams.errors.stacktrace"].startswith("Traceback") for c in contexts)
        runtime = app._runtime
        assert runtime is not None
        assert runtime.state == "RUNNING"
        wait_for(lambda: runtime.metrics()["dropped_records"] == 3, "3 dropped records")
        scraped = scrape_until(port, lambda m: m.total(DROPPED) == 3)
        assert scraped.total(DROPPED) == 3
    finally:
        app.close()


@pytest.mark.parametrize(
    ("value", "kind", "cause"),
    [
        (b"not json", DeserializationError, "JSONDecodeError"),
        (b'{"m": 1}', ProcessingError, "KeyError"),
        (b'{"n": 0}', ProcessingError, "ZeroDivisionError"),
    ],
    ids=["bad-json", "missing-field", "failing-function"],
)
def test_by_default_a_poison_record_stops_the_app_naming_it(
    shared_broker: BrokerProcess, tmp_path: Path, value: bytes, kind: type, cause: str
) -> None:
    bootstrap = shared_broker.bootstrap
    source, out, dead = (create_topic(bootstrap) for _ in range(3))
    app = _app(bootstrap, tmp_path, source, out, dead_letter_topic=dead)
    _send(bootstrap, source, [b'{"n": 5}', value, b'{"n": 2}'])
    app.start()
    try:
        runtime = app._runtime
        assert runtime is not None
        wait_for(lambda: runtime.state == "ERROR", "the app to stop on the bad record")
        assert runtime.thread is not None
        error = runtime.thread.error
        assert isinstance(error, kind), error
        assert str(error).startswith(f"{source}[0]@1: "), str(error)
        assert type(error.__cause__).__name__ == cause
        # the record before it was processed; the one after it was not
        assert [v for _, v, _ in read(bootstrap, out, until=lambda rs: len(rs) >= 1)] == [2]
    finally:
        app.close()
    consumer = clients.consumer(bootstrap)
    try:
        assert consumer.get_watermark_offsets(_partition(dead), 10) == (0, 0)
    finally:
        consumer.close()


def _partition(topic: str) -> Any:
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, 0)


@pytest.mark.parametrize("handler", ["log_and_fail", "log_and_continue"])
def test_an_output_record_too_large_goes_to_the_production_handler(
    shared_broker: BrokerProcess, tmp_path: Path, handler: str
) -> None:
    bootstrap = shared_broker.bootstrap
    source, out, dead = (create_topic(bootstrap) for _ in range(3))
    app = App(
        f"large-{uuid.uuid4().hex[:8]}",
        bootstrap,
        state_dir=tmp_path,
        commit_interval_ms=100,
        stores="memory",
        production_exception_handler=handler,
        dead_letter_topic=dead,
        producer_config={"message.max.bytes": 20_000},  # RecordTooLarge past 20 kB
    )
    app.stream(source).map_values(lambda v: "x" * v["size"]).to(out)
    _send(bootstrap, source, [b'{"size": 10}', b'{"size": 50000}', b'{"size": 20}'])
    app.start()
    try:
        runtime = app._runtime
        assert runtime is not None
        if handler == "log_and_fail":
            wait_for(lambda: runtime.state == "ERROR", "the app to stop on the large record")
            assert runtime.thread is not None
            error = runtime.thread.error
            assert isinstance(error, ProductionError), error
            assert str(error).startswith(f"{source}[0]@1: cannot send the record for {out}: ")
            assert "MSG_SIZE_TOO_LARGE" in str(error), str(error)
            return
        results = read(bootstrap, out, until=lambda rs: len(rs) >= 2)
        assert [len(v) for _, v, _ in results] == [10, 20]
        [(key, value, _, headers)] = _read_raw(bootstrap, dead, 1)
        assert (key, value) == (b"k1", b'{"size": 50000}')
        context = {name: v.decode() for name, v in headers}
        assert context["__streams.errors.exception"] == "cimpl.KafkaException"
        assert "MSG_SIZE_TOO_LARGE" in context["__streams.errors.message"]
        assert context["__streams.errors.offset"] == "1"
        wait_for(lambda: runtime.metrics()["dropped_records"] == 1, "1 dropped record")
    finally:
        app.close()


def _topic_with(bootstrap: str, config: dict[str, str]) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"topic-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, 1, 1, config=config)], operation_timeout=30)
    futures[name].result(timeout=30)
    return name


@pytest.mark.parametrize("handler", ["log_and_fail", "log_and_continue"])
def test_an_output_record_the_broker_refuses_goes_to_the_production_handler(
    shared_broker: BrokerProcess, tmp_path: Path, handler: str
) -> None:
    bootstrap = shared_broker.bootstrap
    source, dead = create_topic(bootstrap), create_topic(bootstrap)
    out = _topic_with(bootstrap, {"max.message.bytes": "2000"})
    app = App(
        f"refused-{uuid.uuid4().hex[:8]}",
        bootstrap,
        state_dir=tmp_path,
        commit_interval_ms=100,
        stores="memory",
        production_exception_handler=handler,
        dead_letter_topic=dead,
        producer_config={"linger.ms": 0, "batch.num.messages": 1},  # a batch per record
    )
    app.stream(source).map_values(lambda v: "x" * v["size"]).to(out)
    _send(bootstrap, source, [b'{"size": 10}', b'{"size": 5000}', b'{"size": 20}'])
    app.start()
    try:
        runtime = app._runtime
        assert runtime is not None
        if handler == "log_and_fail":
            wait_for(lambda: runtime.state == "ERROR", "the app to stop on the refused record")
            assert runtime.thread is not None
            error = runtime.thread.error
            assert str(error).startswith(f"output could not be written: {out}[0]: "), str(error)
            return
        results = read(bootstrap, out, until=lambda rs: len(rs) >= 2)
        assert [len(v) for _, v, _ in results] == [10, 20]
        [(key, value, timestamp, headers)] = _read_raw(bootstrap, dead, 1)
        assert (key, len(value)) == (b"k1", 5002)  # as produced: '"xxx…"'
        assert timestamp > 1_001  # librdkafka does not keep a failed record's: the time it failed
        context = {name: v.decode() for name, v in headers}
        assert context["__streams.errors.exception"] == "cimpl.KafkaException"
        assert (context["__streams.errors.topic"], context["__streams.errors.offset"]) == (
            out,
            "-1",
        )
        wait_for(lambda: runtime.metrics()["dropped_records"] == 1, "1 dropped record")
        assert runtime.state == "RUNNING"
    finally:
        app.close()
