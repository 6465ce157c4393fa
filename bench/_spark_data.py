"""The records of the Spark benchmark: the same N records in a topic and in JSON-lines files.

Record ``i`` goes to partition ``i % P`` at offset ``i // P`` (one producer, in order, explicit
partitions), with CreateTime ``BASE_TS_MS + i``, no key, and a value of ``VALUE_BYTES`` ASCII
bytes (``i`` in 12 digits, a dash, filler). The JSON-lines files (one per partition) hold the
same rows with the source's columns, the value as a string.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path

from _clients import PRODUCER_BATCHING

VALUE_BYTES = 100
BASE_TS_MS = 1_700_000_000_000
_FILLER = "x" * (VALUE_BYTES - 13)


def value(i: int) -> str:
    """Record ``i``'s value (``VALUE_BYTES`` characters)."""
    return f"{i:012d}-{_FILLER}"


def produce(bootstrap: str, topic: str, records: int, partitions: int, timeout: float) -> float:
    """Produce the records (``acks=1``, the harness's batching); returns the seconds it took.

    Bounded by ``records`` and by ``timeout`` seconds; every record must be acknowledged.
    """
    from confluent_kafka import KafkaError, Message, Producer

    failed: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failed.append(str(err))

    producer = Producer(
        {**PRODUCER_BATCHING, "bootstrap.servers": bootstrap, "acks": "1", "log_level": 0}
    )
    started = time.monotonic()
    deadline = started + timeout
    for i in range(records):
        while True:  # bounded by the deadline
            try:
                producer.produce(
                    topic,
                    value(i).encode(),
                    partition=i % partitions,
                    timestamp=BASE_TS_MS + i,
                    on_delivery=on_delivery,
                )
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
                if time.monotonic() > deadline:
                    message = f"produced {i:,} of {records:,} within {timeout} s"
                    raise TimeoutError(message) from None
        if i % 10_000 == 0:
            producer.poll(0)
            if time.monotonic() > deadline:
                raise TimeoutError(f"produced {i:,} of {records:,} within {timeout} s")
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    if left or failed:
        raise RuntimeError(f"{left} records unacknowledged, {len(failed)} failed: {failed[:3]}")
    return time.monotonic() - started


def write_json_lines(folder: Path, topic: str, records: int, partitions: int) -> int:
    """The same records as JSON lines, ``part-<p>.json`` per partition; returns the bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    files = [(folder / f"part-{p}.json").open("w") for p in range(partitions)]
    base = dt.datetime.fromtimestamp(BASE_TS_MS // 1000, dt.UTC)
    prefix = '{"key":null,"value":"'
    middle = f'","topic":{json.dumps(topic)},"partition":'
    second, stamp = -1, ""
    try:
        for i in range(records):
            ms = BASE_TS_MS % 1000 + i
            if ms // 1000 != second:
                second = ms // 1000
                stamp = (base + dt.timedelta(seconds=second)).strftime("%Y-%m-%dT%H:%M:%S")
            files[i % partitions].write(
                f'{prefix}{value(i)}{middle}{i % partitions},"offset":{i // partitions},'
                f'"timestamp":"{stamp}.{ms % 1000:03d}Z","timestampType":0}}\n'
            )
    finally:
        for f in files:
            f.close()
    return sum(f.stat().st_size for f in folder.iterdir())
