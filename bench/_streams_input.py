"""The streams benchmark's input: N JSON events over one hour of event time, and a changelog."""

from __future__ import annotations

import time

from _clients import Workload, bench_producer

KEYS = 10_000
EVENT_SPAN_MS = 3_600_000


def produce_events(bootstrap: str, topic: str, records: int, prefixes: list[int]) -> dict[int, int]:
    """Produce the input; return how many of the first ``p`` records pass the filter, per prefix."""
    import random

    import orjson

    rng = random.Random(20261121)
    producer, failed = bench_producer(Workload(bootstrap, topic, 0, records, 600.0))
    produce, poll = producer.produce, producer.poll
    start_ms = int(time.time() * 1000) - 2 * EVENT_SPAN_MS
    passes, passed = {}, 0
    wanted = set(prefixes)
    deadline = time.monotonic() + 600
    for i in range(records):
        if i in wanted:
            passes[i] = passed
        user = f"u{rng.randrange(KEYS)}"
        amount = rng.randrange(2000) / 100
        passed += amount > 10
        ts = start_ms + i * EVENT_SPAN_MS // records
        value = orjson.dumps({"user": user, "amount": amount, "ts": ts})
        while True:
            try:
                produce(topic, value, user.encode(), timestamp=ts)
                break
            except BufferError:  # the local queue is full: let librdkafka drain it, then retry
                poll(0.005)
        if i % 10_000 == 0:
            poll(0)
            if time.monotonic() > deadline:
                raise TimeoutError(f"producing the input took over 600 s ({i} records)")
    passes[records] = passed
    left = producer.flush(60)
    if left or failed:
        raise RuntimeError(f"{left} input records unacknowledged, {len(failed)} failed")
    return passes


def produce_changelog(bootstrap: str, topic: str, keys: int) -> None:
    """``keys`` distinct keys ``k0000000``… with JSON int values: a count store's changelog."""
    producer, failed = bench_producer(Workload(bootstrap, topic, 0, keys, 600.0))
    produce, poll = producer.produce, producer.poll
    now = int(time.time() * 1000)
    for i in range(keys):
        key, value = f"k{i:07d}".encode(), str(i % 1000 + 1).encode()
        while True:
            try:
                produce(topic, value, key, timestamp=now)
                break
            except BufferError:
                poll(0.005)
        if i % 10_000 == 0:
            poll(0)
    left = producer.flush(60)
    if left or failed:
        raise RuntimeError(f"{left} changelog records unacknowledged, {len(failed)} failed")


def create_compacted_topic(bootstrap: str, topic: str, timeout: float = 20.0) -> None:
    """Create ``topic`` with one partition and ``cleanup.policy=compact``, as changelogs are."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})
    for future in admin.create_topics([new]).values():
        future.result(timeout)
