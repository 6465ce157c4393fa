"""Bad input against the real broker: unreadable records go to the dead-letter topic and the app
goes on; a user function that raises stops the app, naming the record's topic, partition and
offset; nothing fails silently."""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import Producer

from sluice.dsl import App
from sluice.streams import ProcessingError
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import read, wait_for


def _send(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value, b"k", timestamp=1_000)
    assert producer.flush(30) == 0


def test_unreadable_records_go_to_the_dead_letter_topic(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    source, out, dead = (create_topic(bootstrap) for _ in range(3))
    app = App(
        f"dlq-{uuid.uuid4().hex[:8]}",
        bootstrap,
        state_dir=tmp_path,
        commit_interval_ms=100,
        deserialization_exception_handler="continue",
        dead_letter_topic=dead,
    )
    app.stream(source).map_values(lambda v: v["n"] * 2).to(out)
    _send(bootstrap, source, [b'{"n": 1}', b"not json", b'{"n": 2}'])
    app.start()
    try:
        assert [v for _, v, _ in read(bootstrap, out, until=lambda rs: len(rs) >= 2)] == [2, 4]
        consumer_records = _read_raw(bootstrap, dead)
        assert len(consumer_records) == 1
        value, headers = consumer_records[0]
        assert value == b"not json"
        assert headers["__streams.errors.topic"] == source.encode()
        assert headers["__streams.errors.offset"] == b"1"
        assert b"cannot read record" in headers["__streams.errors.message"]
        assert app._runtime is not None and app._runtime.state == "RUNNING"
    finally:
        app.close()


def _read_raw(bootstrap: str, topic: str) -> list[tuple[bytes, dict[str, bytes]]]:
    from sluice import clients

    consumer = clients.consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    found: list[tuple[bytes, dict[str, bytes]]] = []
    try:
        for _ in range(100):
            for message in consumer.consume(100, 0.2):
                if message.error() is None:
                    found.append((message.value(), dict(message.headers() or [])))
            if found:
                break
    finally:
        consumer.close()
    return found


def test_a_raising_user_function_stops_the_app_and_names_the_record(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    source, out = create_topic(bootstrap), create_topic(bootstrap)
    app = App(f"boom-{uuid.uuid4().hex[:8]}", bootstrap, state_dir=tmp_path, commit_interval_ms=100)
    app.stream(source).map_values(lambda v: 10 // v["n"]).to(out)
    _send(bootstrap, source, [b'{"n": 5}', b'{"n": 0}', b'{"n": 2}'])
    app.start()
    try:
        runtime = app._runtime
        assert runtime is not None
        wait_for(lambda: runtime.state == "ERROR", "the app to stop on the bad record")
        assert runtime.thread is not None
        error = runtime.thread.error
        assert isinstance(error, ProcessingError), error
        assert str(error).startswith(f"{source}[0]@1: "), str(error)
        assert isinstance(error.__cause__, ZeroDivisionError)
        # the record before it was processed; the one after it was not
        assert [v for _, v, _ in read(bootstrap, out, until=lambda rs: len(rs) >= 1)] == [2]
    finally:
        app.close()
