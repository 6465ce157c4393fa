"""Load generators built on confluent-kafka (librdkafka); each runs in its own child process.

Every loop is bounded twice: by a record count and by a deadline. A produce run is timed from the
first ``produce()`` call until ``flush()`` returns (every record acknowledged), and a run with any
failed delivery is an error. A consume run is timed from the first batch in hand to the last, and
counts the records after that first batch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

# The batching a throughput-minded librdkafka user would pick. batch.size stays under the 1 MiB
# default message.max.bytes of a broker; compression is off so bytes on the wire are bytes stored.
# The local queue (200,000 records, 256 MiB) is ~20 full batches: deep enough never to starve a
# fast broker, shallow enough that flush() against a slow one stays short.
PRODUCER_BATCHING: dict[str, Any] = {
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "batch.num.messages": 100_000,
    "queue.buffering.max.messages": 200_000,
    "queue.buffering.max.kbytes": 262_144,
    "compression.type": "none",
    "enable.idempotence": False,
}
# fetch.queue.backoff.ms: librdkafka (since 2.1) postpones a partition's next fetch by this much
# (1,000 ms by default) when its local queue passed queued.min.messages, and does not fetch again
# sooner when the queue drains: a consume of 2,000,000 records lasts ~1 s, so one such pause
# halved the figure of whichever broker's larger responses (Kafka's: up to
# max.partition.fetch.bytes) filled the queue first — Sluice's 0.49x tansu of 2026-11-29.
CONSUMER_FETCHING: dict[str, Any] = {
    "fetch.max.bytes": 52_428_800,
    "max.partition.fetch.bytes": 10_485_760,
    "queued.min.messages": 1_000_000,
    "queued.max.messages.kbytes": 1_048_576,
    "fetch.queue.backoff.ms": 10,
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "log_level": 0,
}
_CHECK_EVERY = 10_000  # records between deadline checks in the produce loop


@dataclass(frozen=True)
class Workload:
    """What one run moves: up to ``records`` values of ``value_bytes`` for at most ``seconds``."""

    bootstrap: str
    topic: str
    value_bytes: int
    records: int
    seconds: float
    acks: str = "1"
    partitions: int = 1
    broker_pid: int = 0  # whose CPU time to sample over the timed window; 0 for none


@dataclass(frozen=True)
class Run:
    """One timed run: how many records (and bytes of value) moved in how many seconds, and the
    CPU seconds the client process (all threads) and the broker process spent meanwhile."""

    records: int
    value_bytes: int
    seconds: float
    client_cpu: float = 0.0
    broker_cpu: float = 0.0

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.records_per_second * self.value_bytes / 1e6


class Window:
    """The timed part of a run: wall clock, this process's CPU and the broker's CPU."""

    def __init__(self, broker_pid: int) -> None:
        from _harness import cpu_seconds

        self._pid, self._cpu_of = broker_pid, cpu_seconds
        self.wall = time.perf_counter()
        self.client = time.process_time()
        self.broker = cpu_seconds(broker_pid) if broker_pid else 0.0

    def run(self, records: int, value_bytes: int) -> Run:
        """Close the window over ``records`` records."""
        broker = self._cpu_of(self._pid) - self.broker if self._pid else 0.0
        return Run(
            records,
            value_bytes,
            time.perf_counter() - self.wall,
            time.process_time() - self.client,
            broker,
        )


def _produce_loop(producer: Any, load: Workload, check_every: int = _CHECK_EVERY) -> int:
    produce, poll, topic = producer.produce, producer.poll, load.topic
    value = b"x" * load.value_bytes
    deadline = time.monotonic() + load.seconds
    sent = 0
    while sent < load.records and time.monotonic() < deadline:
        chunk = min(check_every, load.records - sent)
        for _ in range(chunk):
            try:
                produce(topic, value)
            except BufferError:  # the local queue is full: let librdkafka drain it, then retry
                while True:
                    poll(0.001)
                    try:
                        produce(topic, value)
                        break
                    except BufferError:
                        continue
        sent += chunk
        poll(0)
    return sent


def bench_producer(load: Workload, **extra: Any) -> tuple[Any, list[str]]:
    """A confluent-kafka producer with ``PRODUCER_BATCHING`` (``extra`` settings on top, e.g.
    ``enable.idempotence``) and the list its failed deliveries are appended to."""
    from confluent_kafka import Producer

    failed: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    # delivery.report.only.error: a per-record Python callback would cost the client ~20 %, so
    # librdkafka reports failures only; flush() returning 0 then means everything else was acked.
    producer = Producer(
        {
            "bootstrap.servers": load.bootstrap,
            "acks": load.acks,
            "log_level": 0,
            "delivery.report.only.error": True,
            "on_delivery": on_delivery,
            **PRODUCER_BATCHING,
            **extra,
        }
    )
    return producer, failed


def produce_run(load: Workload) -> Run:
    """Produce ``load`` through one confluent-kafka producer; timed until every record is acked."""
    producer, failed = bench_producer(load)
    producer.list_topics(load.topic, timeout=10)  # connecting is not part of the figure
    window = Window(load.broker_pid)
    sent = _produce_loop(producer, load)
    left = producer.flush(30)
    run = window.run(sent, load.value_bytes)
    if left or failed:
        raise RuntimeError(f"{left} records unacknowledged, {len(failed)} failed: {failed[:3]}")
    return run


def client_ceiling(load: Workload) -> Run:
    """How fast this Python process hands records to librdkafka when no broker takes them.

    The producer points at a port nobody listens on. Only the ``produce()`` calls are timed, in
    chunks of 10,000; between chunks (untimed) the queue is purged, so memory is reused as in a
    real run instead of growing by the whole load. This is the most a broker could be shown to
    take through one Python producer. ``load.bootstrap`` and ``load.acks`` are ignored.
    """
    from _harness import free_port
    from confluent_kafka import Producer

    config = {
        **PRODUCER_BATCHING,
        "bootstrap.servers": f"127.0.0.1:{free_port()}",
        "log_level": 0,
        "linger.ms": 60_000,
    }
    producer = Producer(config)
    produce, topic, value = producer.produce, load.topic, b"x" * load.value_bytes
    sent, elapsed = 0, 0.0
    deadline = time.monotonic() + load.seconds
    while sent < load.records and time.monotonic() < deadline:
        chunk = min(_CHECK_EVERY, load.records - sent)
        start = time.perf_counter()
        for _ in range(chunk):
            produce(topic, value)
        elapsed += time.perf_counter() - start
        sent += chunk
        producer.purge()
        producer.poll(0)
    return Run(sent, load.value_bytes, elapsed)


def consume_run(load: Workload) -> Run:
    """Read ``load.records`` from offset 0 in ``consume(10000)`` batches, for ≤ ``load.seconds``."""
    from confluent_kafka import Consumer, TopicPartition

    config = {"bootstrap.servers": load.bootstrap, "group.id": "bench-consume", **CONSUMER_FETCHING}
    consumer = Consumer(config)
    try:
        consumer.assign([TopicPartition(load.topic, p, 0) for p in range(load.partitions)])
        got, timed, window = 0, 0, None
        deadline = time.monotonic() + load.seconds + 10  # plus time for the first fetch
        while got < load.records and time.monotonic() < deadline:
            batch = consumer.consume(num_messages=10_000, timeout=0.5)
            if not batch:
                continue
            # Only the ends of a batch are checked: touching every message would time Python.
            for msg in (batch[0], batch[-1]):
                if msg.error() is not None and not msg.error().retriable():
                    raise RuntimeError(f"consume error: {msg.error()}")
            got += len(batch)
            if window:
                timed += len(batch)
            else:  # the clock starts with the first batch in hand; that batch is not counted
                window = Window(load.broker_pid)
                deadline = time.monotonic() + load.seconds
        if window is None:
            raise RuntimeError(f"no record arrived within {load.seconds + 10:.0f}s")
        return window.run(timed, load.value_bytes)
    finally:
        consumer.close()
