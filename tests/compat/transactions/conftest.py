"""Transactions with real clients: the broker, the readers and the worker process of these tests.

The broker is the session's ``shared_broker`` (its settings are :data:`TXN_CONFIG`; tests keep
apart by using topics and transactional ids of their own), or a broker of the test's own from
``broker_factory(**TXN_CONFIG)`` when the test kills it.

What a test reads it reads with confluent-kafka: :func:`offsets` asks ListOffsets (the admin API)
for the high watermark or, with ``read_committed``, the last stable offset (LSO); :func:`settle`
waits until no transaction is open on a topic (LSO = high watermark), after which
:func:`read_topic` reads every partition to its end with either isolation level.

:class:`Worker` runs ``txn_worker.py`` (a consume-transform-produce loop, or a producer that
leaves its transaction open) as a process of its own, so that a test can ``kill -9`` it; the
process writes what it did as JSON lines, flushed at once, that the test reads back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    IsolationLevel,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from tests.compat.harness import TIMEOUT, Event, LoggedProcess, wait_until
from tests.conftest import SHARED_CONFIG

# No initial rebalance delay (Kafka's 3 s would slow every group join); timed-out transactions
# looked for every second (Kafka's default is 10 s).
TXN_CONFIG = SHARED_CONFIG
WORKER_SCRIPT = Path(__file__).with_name("txn_worker.py")


def unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:10]}"


def produce_plain(bootstrap: str, topic: str, records: list[tuple[int, bytes, bytes]]) -> None:
    """Produce ``(partition, key, value)`` records without a transaction (idempotent, acks=all)."""
    errors: list[str] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    for partition, key, value in records:
        producer.produce(topic, key=key, value=value, partition=partition, on_delivery=report)
        producer.poll(0)
    left = producer.flush(TIMEOUT)
    assert left == 0 and not errors, (
        f"{left} of {len(records)} records undelivered; errors: {errors[:5]}"
    )


def transactional_producer(bootstrap: str, txn_id: str, **config: Any) -> Producer:
    """A confluent-kafka transactional producer, its transactions initialised."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 30_000,
            "linger.ms": 5,
            **config,
        }
    )
    producer.init_transactions(TIMEOUT)
    return producer


def offsets(bootstrap: str, topic: str, partitions: int, *, committed: bool) -> dict[int, int]:
    """ListOffsets ``latest`` of every partition: the high watermark, or with ``committed``
    (isolation level read_committed) the last stable offset."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    futures = admin.list_offsets(
        {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)},
        isolation_level=level,
        request_timeout=TIMEOUT,
    )
    return {tp.partition: f.result(timeout=TIMEOUT).offset for tp, f in futures.items()}


def settle(bootstrap: str, topic: str, partitions: int, timeout: float = 20.0) -> dict[int, int]:
    """Wait until no transaction is open on ``topic`` (every partition's LSO is its high
    watermark: the markers of the transactions that ended are written); returns the ends."""

    def settled() -> dict[int, int] | None:
        high = offsets(bootstrap, topic, partitions, committed=False)
        stable = offsets(bootstrap, topic, partitions, committed=True)
        return high if high == stable else None

    return wait_until(
        settled,
        timeout,
        lambda: (
            f"{topic}: last stable offsets {offsets(bootstrap, topic, partitions, committed=True)}"
            f" never reached the high watermarks "
            f"{offsets(bootstrap, topic, partitions, committed=False)}"
        ),
    )


@dataclass(frozen=True)
class Rec:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def read_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    isolation: str,
    *,
    timeout: float = 30.0,
    group: str = "",
) -> dict[int, list[Rec]]:
    """Every record a confluent-kafka consumer with ``isolation.level=isolation`` gets from every
    partition, from the beginning up to the end it reports (partition EOF: the high watermark for
    read_uncommitted, the last stable offset for read_committed)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group or unique("reader"),
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 100,
        }
    )
    got: dict[int, list[Rec]] = {p: [] for p in range(partitions)}
    eof: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + timeout
        while len(eof) < partitions and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                assert err.code() == KafkaError._PARTITION_EOF, f"{isolation} consumer: {err}"
                eof.add(msg.partition())
                continue
            rec = Rec(msg.partition(), msg.offset(), msg.key(), msg.value())
            got[rec.partition].append(rec)
    finally:
        consumer.close()
    assert len(eof) == partitions, (
        f"{isolation} consumer of {topic} reached the end of partitions {sorted(eof)} only "
        f"within {timeout}s; got { ({p: len(r) for p, r in got.items()}) } records"
    )
    return got


def values(records: dict[int, list[Rec]]) -> dict[int, list[bytes | None]]:
    return {p: [r.value for r in recs] for p, recs in records.items()}


class Worker(LoggedProcess):
    """A ``txn_worker.py`` process; a restart appends to the same log. ``args`` are its
    command-line options after the script name."""

    def __init__(self, name: str, workdir: Path, args: list[str]) -> None:
        super().__init__(name, workdir)
        self.cmd = [sys.executable, str(WORKER_SCRIPT), *args, f"--out={self.out}"]
        self._events: list[Event] = []
        self._read_to = 0

    @property
    def returncode(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def kill(self) -> None:
        """kill -9: no abort, no close, nothing."""
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(TIMEOUT)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM: the worker finishes its transaction, closes its clients and exits."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} did not exit within {timeout}s of SIGTERM\n{self.tail()}"
            ) from None

    def events(self) -> list[Event]:
        """Every event logged so far (read incrementally; a line cut by kill -9 is skipped)."""
        if self.out.exists():
            with self.out.open("rb") as f:
                f.seek(self._read_to)
                data = f.read()
            end = data.rfind(b"\n") + 1
            for line in data[:end].splitlines():
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue  # a line cut by kill -9, completed by the next run's first line
                self._events.append(Event(obj.pop("t"), obj.pop("ev"), obj))
            self._read_to += end
        return self._events

    def run_events(self) -> list[Event]:
        """The events of the current run (since the last ``started``)."""
        events = self.events()
        starts = [i for i, e in enumerate(events) if e.ev == "started"]
        return events[starts[-1] :] if starts else []

    def count(self, ev: str, current_run: bool = True) -> int:
        events = self.run_events() if current_run else self.events()
        return sum(1 for e in events if e.ev == ev)

    def tail(self, lines: int = 20) -> str:
        log = "\n".join(
            json.dumps({"t": e.t, "ev": e.ev, **e.fields}) for e in self.events()[-lines:]
        )
        err = self.stderr_tail(3000)
        return f"--- {self.name} log tail:\n{log}\n--- {self.name} stderr:\n{err}"


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Callable[..., Worker]]:
    """``workers(name, args)`` makes a :class:`Worker` (not started); all stopped at teardown."""
    made: list[Worker] = []

    def make(name: str, args: list[str]) -> Worker:
        worker = Worker(name, tmp_path, args)
        made.append(worker)
        return worker

    yield make
    for worker in made:
        worker.stop()
