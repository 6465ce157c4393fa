"""Helpers for runtime tests: produce inputs, read outputs, wait for conditions (bounded)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, Producer

from sluice import clients

TIMEOUT = 60.0


def produce(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[str | None, Any, int]],
    *,
    partition: Callable[[str | None], int] | None = None,
) -> None:
    """Produce ``(key, JSON value, timestamp)`` records (murmur2 partitioning, as Java)."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for key, value, timestamp in records:
        extra = {} if partition is None else {"partition": partition(key)}
        producer.produce(
            topic,
            None if value is None else json.dumps(value).encode(),
            None if key is None else key.encode(),
            timestamp=timestamp,
            **extra,
        )
    assert producer.flush(30) == 0


def read(
    bootstrap: str,
    topic: str,
    *,
    until: Callable[[list[tuple[Any, Any, int]]], bool],
    committed_only: bool = False,
    timeout: float = TIMEOUT,
    explain: Callable[[list[tuple[Any, Any, int]]], str] | None = None,
) -> list[tuple[Any, Any, int]]:
    """Read ``topic`` from the start until ``until(records)`` holds; (key, value, ts) decoded."""
    consumer: Consumer = clients.consumer(
        bootstrap,
        **{
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
        },
    )
    consumer.subscribe([topic])
    records: list[tuple[Any, Any, int]] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.2):
                if message.error() is not None:
                    continue
                key, value = message.key(), message.value()
                records.append(
                    (
                        None if key is None else _decode(key),
                        None if value is None else json.loads(value),
                        message.timestamp()[1],
                    )
                )
            if until(records):
                return records
    finally:
        consumer.close()
    detail = explain(records) if explain is not None else f"last: {records[-5:]}"
    raise AssertionError(
        f"{topic}: condition not met in {timeout} s; read {len(records)}; {detail}"
    )


def _decode(key: bytes) -> Any:
    text = key.decode()
    if text.startswith("{"):
        return json.loads(text)
    return text


def wait_for(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Poll ``condition`` until true, at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
