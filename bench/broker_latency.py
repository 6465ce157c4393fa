"""Produce-to-consume latency at a fixed rate, against Sluice and tansu in the same run.

    python bench/broker_latency.py [--quick] [--only sluice|tansu] [--rate 20000]

A producer process sends 100 B records at ``rate`` records/s (paced every half millisecond), each
stamped with ``time.monotonic_ns()`` at ``produce()``; a consumer process reads them and takes
the difference on arrival (CLOCK_MONOTONIC is one clock for every process on Linux). The first
second is warm-up and not counted. Producer: acks=all (librdkafka's default) and linger.ms=1
(at 0, librdkafka sends ~1,000 tiny requests/s and tansu's queue backs up to hundreds of ms; its
default of 5 would add up to 5 ms of the client's own). Consumer: librdkafka's defaults
(fetch.min.bytes=1, fetch.wait.max.ms=500), so a broker that does not answer a parked Fetch as
soon as data arrives shows up here; ``--fetch-wait-ms`` changes that.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import struct
import time
from dataclasses import dataclass
from typing import Any

from _harness import BROKERS, create_topic, in_child, median, percentile, running_broker

_SPAWN = mp.get_context("spawn")
_STAMP = struct.Struct(">qq")  # sequence number, monotonic send time in ns


@dataclass(frozen=True)
class LatencyLoad:
    """A paced run: ``rate`` records/s of ``value_bytes`` for ``seconds``, the first ``warmup`` s
    not counted."""

    bootstrap: str
    topic: str
    rate: int
    seconds: float
    warmup: float = 1.0
    value_bytes: int = 100
    linger_ms: float = 1.0
    fetch_wait_ms: int = 500
    replication_factor: int = 1  # of the run's topic (more than 1 on a cluster)


@dataclass(frozen=True)
class Latency:
    """Percentiles of one run, in milliseconds, and the rate the producer achieved."""

    p50_ms: float
    p99_ms: float
    max_ms: float
    samples: int
    achieved_rate: float


def _paced_producer(load: LatencyLoad) -> tuple[int, float]:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": load.bootstrap,
            "acks": "all",
            "linger.ms": load.linger_ms,
            "log_level": 0,
        }
    )
    producer.list_topics(load.topic, timeout=10)
    pad = b"x" * max(0, load.value_bytes - _STAMP.size)
    produce, poll, topic, pack = producer.produce, producer.poll, load.topic, _STAMP.pack
    total = int(load.rate * load.seconds)
    sent = 0
    start = time.monotonic()
    end = start + load.seconds + 5  # bounded even if the loop falls behind
    while sent < total and time.monotonic() < end:
        due = min(total, int((time.monotonic() - start) * load.rate) + 1)
        while sent < due:
            try:
                produce(topic, pack(sent, time.monotonic_ns()) + pad)
            except BufferError:
                poll(0.001)
                continue
            sent += 1
        poll(0)
        time.sleep(0.0005)
    elapsed = time.monotonic() - start
    left = producer.flush(10)
    return sent - left, sent / elapsed


def _consumer(load: LatencyLoad, expected_max: int, conn: Any) -> None:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": load.bootstrap,
            "group.id": "bench-latency",
            "fetch.wait.max.ms": load.fetch_wait_ms,
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    try:
        consumer.assign([TopicPartition(load.topic, 0, 0)])
        consumer.consume(num_messages=1, timeout=1.0)  # connected and fetching before the start
        conn.send("ready")
        skip = int(load.rate * load.warmup)
        latencies: list[float] = []
        seen = 0
        deadline = time.monotonic() + load.seconds + 15
        while seen < expected_max and time.monotonic() < deadline:
            if conn.poll() and seen:  # the producer is done: how many were really sent
                expected_max = conn.recv()
            # poll() returns as soon as one record is there; consume(timeout=0) then takes what
            # else is queued. consume(n, timeout) alone would wait for n records and add delay.
            first = consumer.poll(0.1)
            if first is None:
                continue
            now = time.monotonic_ns()
            for msg in [first, *consumer.consume(num_messages=1000, timeout=0)]:
                if msg.error() is not None:
                    continue
                seq, sent_ns = _STAMP.unpack_from(msg.value())
                seen += 1
                if seq >= skip:
                    latencies.append((now - sent_ns) / 1e6)
        latencies.sort()
        conn.send((percentile(latencies, 50), percentile(latencies, 99), latencies[-1:], seen))
    finally:
        consumer.close()
        conn.close()


def latency_run(load: LatencyLoad) -> Latency:
    """One paced run on a fresh topic; the consumer is connected before the producer starts."""
    create_topic(load.bootstrap, load.topic, replication_factor=load.replication_factor)
    parent, child = _SPAWN.Pipe()
    total = int(load.rate * load.seconds)
    consumer = _SPAWN.Process(target=_consumer, args=(load, total, child), daemon=True)
    consumer.start()
    try:
        if not parent.poll(30) or parent.recv() != "ready":
            raise TimeoutError("the latency consumer never became ready")
        delivered, achieved = in_child(_paced_producer, load, timeout=load.seconds + 30)
        parent.send(delivered)
        if not parent.poll(load.seconds + 30):
            raise TimeoutError("the latency consumer never reported")
        p50, p99, worst, _seen = parent.recv()
    finally:
        consumer.join(10)
        if consumer.is_alive():
            consumer.kill()
            consumer.join()
    samples = max(0, delivered - int(load.rate * load.warmup))
    return Latency(p50, p99, worst[0] if worst else float("nan"), samples, achieved)


def measure(
    bootstrap: str,
    rate: int,
    seconds: float,
    runs: int,
    prefix: str,
    *,
    linger_ms: float = 1.0,
    fetch_wait_ms: int = 500,
) -> Latency:
    """The median over ``runs`` paced runs of each percentile (each run on its own topic)."""
    results = [
        latency_run(
            LatencyLoad(
                bootstrap,
                f"{prefix}-latency-{i}",
                rate,
                seconds,
                linger_ms=linger_ms,
                fetch_wait_ms=fetch_wait_ms,
            )
        )
        for i in range(runs)
    ]
    return summarize(results)


def summarize(results: list[Latency]) -> Latency:
    """The median of each percentile over runs; the worst maximum; all samples."""
    return Latency(
        median([r.p50_ms for r in results]),
        median([r.p99_ms for r in results]),
        max(r.max_ms for r in results),
        sum(r.samples for r in results),
        median([r.achieved_rate for r in results]),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short run per broker")
    parser.add_argument("--only", choices=BROKERS, help="measure one broker only")
    parser.add_argument("--rate", type=int, default=20_000, help="records per second")
    parser.add_argument("--linger-ms", type=float, default=1.0, help="producer linger.ms")
    parser.add_argument("--fetch-wait-ms", type=int, default=500, help="consumer fetch.wait.max.ms")
    args = parser.parse_args()
    runs, seconds = (1, 3.0) if args.quick else (3, 5.0)
    for name in [args.only] if args.only else BROKERS:
        with running_broker(name) as broker:
            lat = measure(
                broker.bootstrap,
                args.rate,
                seconds,
                runs,
                name,
                linger_ms=args.linger_ms,
                fetch_wait_ms=args.fetch_wait_ms,
            )
        print(
            f"{name:>7}: p50 {lat.p50_ms:7.2f} ms  p99 {lat.p99_ms:7.2f} ms  "
            f"max {lat.max_ms:7.2f} ms  at {lat.achieved_rate:,.0f} rec/s "
            f"({lat.samples:,} samples, median of {runs})"
        )


if __name__ == "__main__":
    main()
