"""Client quotas enforced on real clients (confluent-kafka) against a real broker process: a
producer and a consumer held to their byte rate within ±20 % over 10 s while clients with
other client ids on the same broker run unthrottled, ``throttle_time_ms`` in the responses and
the broker's throttle metrics.

The broker measures over ``quota.window.num=2`` windows of 1 s here: Kafka's sampled rate
lets a greedy client send ``(quota.window.num - 1)`` windows' worth at once and then holds it
to the quota on average over each cycle of ``quota.window.num`` windows (docs/security.md);
with 2 windows the cycle is 2 s, so any 10 s of the steady part hold five whole cycles. The
first two seconds (the initial allowance) are left out of the measurement."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from tests.broker.quotas.wire_quotas import alter
from tests.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(180)

QUOTA = 100_000  # bytes/s
VALUE = b"q" * 1000
WARM_UP, MEASURED = 2.0, 10.0
PREFILL = 3_000_000  # bytes of records the consumers read
THROTTLES: defaultdict[str, list[Any]] = defaultdict(list)
"""The throttle events (``throttle_time_ms`` of responses) each client id's client saw."""


def rate_between(stamps: list[tuple[float, int]], start: float, end: float) -> float:
    return sum(n for t, n in stamps if start <= t < end) / (end - start)


def produce_for(
    bootstrap: str, client_id: str, topic: str, seconds: float, up_to: int = 0
) -> list[tuple[float, int]]:
    """Produce as fast as the client lets us for ``seconds`` (or ``up_to`` bytes); (ack time,
    bytes) of each record."""
    stamps: list[tuple[float, int]] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
         "batch.size": 16384, "acks": "all", "throttle_cb": THROTTLES[client_id].append}
    )  # fmt: skip

    def acked(err: object, msg: object) -> None:
        if err is None:
            stamps.append((time.monotonic(), len(VALUE)))

    end = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < end and not (up_to and sent >= up_to):
        if len(producer) > 2000:
            producer.poll(0.02)
            continue
        try:
            producer.produce(topic, VALUE, on_delivery=acked)
            sent += len(VALUE)
        except BufferError:
            producer.poll(0.02)
        producer.poll(0)
    producer.flush(15)
    return stamps


def consume_for(
    bootstrap: str, client_id: str, topic: str, seconds: float, stop_at: int = 0
) -> list[tuple[float, int]]:
    """Consume ``topic`` from the start for ``seconds`` from the first record (or until
    ``stop_at`` bytes)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id,
         "auto.offset.reset": "earliest", "enable.auto.commit": False,
         "throttle_cb": THROTTLES[client_id].append,
         "fetch.max.bytes": 16384, "max.partition.fetch.bytes": 16384,
         "message.max.bytes": 16384}
    )  # fmt: skip
    consumer.subscribe([topic])
    stamps: list[tuple[float, int]] = []
    total = 0
    end = time.monotonic() + 60  # at most (joining the group, then ``seconds`` of records)
    try:
        while time.monotonic() < end and not (stop_at and total >= stop_at):
            for msg in consumer.consume(500, 0.2):
                if msg.error() is None:
                    value = msg.value() or b""
                    stamps.append((time.monotonic(), len(value)))
                    total += len(value)
                    if len(stamps) == 1:
                        end = stamps[0][0] + seconds
    finally:
        consumer.close()
    return stamps


def in_thread(
    target: Callable[[], list[tuple[float, int]]],
) -> Callable[[], list[tuple[float, int]]]:
    result: list[list[tuple[float, int]]] = []
    thread = threading.Thread(target=lambda: result.append(target()), daemon=True)
    thread.start()

    def join() -> list[tuple[float, int]]:
        thread.join(120)
        assert result, "the client thread did not finish"
        return result[0]

    return join


def test_producer_and_consumer_held_to_their_byte_rate_others_unaffected(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    node = broker_factory(
        **{"quota.window.num": "2", "num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
    )
    b = node.bootstrap
    assert alter(
        b,
        [
            ({"client-id": "limited-producer"}, {"producer_byte_rate": float(QUOTA)}),
            ({"client-id": "limited-consumer"}, {"consumer_byte_rate": float(QUOTA)}),
        ],
    ) == [("none", None), ("none", None)]
    # an unthrottled producer fills the consumers' topic far faster than the quota
    started = time.monotonic()
    filled = produce_for(b, "free-producer", "quota-consume", 30, up_to=PREFILL)
    free_rate = sum(n for _, n in filled) / (time.monotonic() - started)
    assert free_rate > 5 * QUOTA, f"the unthrottled producer reached only {free_rate:.0f} B/s"

    seconds = WARM_UP + MEASURED + 1
    producing = in_thread(lambda: produce_for(b, "limited-producer", "quota-produce", seconds))
    consuming = in_thread(lambda: consume_for(b, "limited-consumer", "quota-consume", seconds))
    free = consume_for(b, "free-consumer", "quota-consume", 60, stop_at=PREFILL)
    produced, consumed = producing(), consuming()

    assert sum(n for _, n in free) >= PREFILL
    free_span = free[-1][0] - free[0][0]
    assert PREFILL / free_span > 5 * QUOTA, (
        f"the unthrottled consumer read {PREFILL} B in {free_span:.1f} s beside the throttled ones"
    )
    for client_id in ("limited-producer", "limited-consumer"):
        assert any(e.throttle_time > 0 for e in THROTTLES[client_id]), (
            f"{client_id} saw no throttle_time_ms in its responses"
        )
    for client_id in ("free-producer", "free-consumer"):
        assert not any(e.throttle_time > 0 for e in THROTTLES[client_id]), (
            f"{client_id} was throttled: {THROTTLES[client_id]}"
        )
    for name, stamps in (("producer", produced), ("consumer", consumed)):
        assert stamps, f"the limited {name} moved nothing"
        start = stamps[0][0] + WARM_UP
        rate = rate_between(stamps, start, start + MEASURED)
        assert 0.8 * QUOTA <= rate <= 1.2 * QUOTA, (
            f"expected the limited {name} at {QUOTA} B/s ±20 % over {MEASURED:.0f} s, "
            f"measured {rate:.0f} B/s"
        )
