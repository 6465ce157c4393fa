"""Exactly-once consume-transform-produce under kill -9, of the application and of the broker.

A confluent-kafka loop (``txn_worker.py transform``: read a batch, write one ``out-<n>`` per input
``in-<n>`` in a transaction, commit the consumed offsets in the same transaction with
``send_offsets_to_transaction``) turns an input topic of known records into an output topic.

- The worker is killed -9 twenty times at random points — while it starts (InitProducerId, the
  group join), while it produces, inside an open transaction whose records are on the broker,
  around EndTxn, between transactions — and restarted with the same transactional id and group.
- The broker is killed -9 six times (and restarted on the same data) at such points instead.

Either way the output read with read_committed holds every input's result exactly once, in input
order per partition; the aborted attempts are in the log (read_uncommitted sees them); the group's
committed offsets are the ends of the input. ``SLUICE_TEST_SEED`` replays the kill points.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from tests.compat.harness import committed_offsets
from tests.compat.transactions.conftest import (
    TIMEOUT,
    TXN_CONFIG,
    Worker,
    produce_plain,
    read_topic,
    settle,
    transactional_producer,
    unique,
    values,
)
from tests.conftest import BrokerProcess, create_topic

pytestmark = [pytest.mark.slow, pytest.mark.timeout(200)]

PARTITIONS = 3
BATCH = 50
PAUSE_MS = 100
# the event of the worker's log after which each kind of kill point lies, and how long after it
PHASES = {
    "produce": ("begin", 0.003),  # producing: AddPartitionsToTxn, some records on the broker
    "open": ("flushed", 0.6 * PAUSE_MS / 1000),  # its batch is on the broker, not committed
    "commit": ("committing", 0.0),  # offsets sent, EndTxn about to go, in flight or answered
    "after": ("committed", 0.0),  # between transactions
}
EXIT_RESTART = 3


def seed() -> int:
    return int(os.environ.get("SLUICE_TEST_SEED", time.time_ns() % 100_000))


def setup_topics(bootstrap: str, n: int) -> tuple[str, str]:
    source = create_topic(bootstrap, PARTITIONS, unique("eos-in"))
    sink = create_topic(bootstrap, PARTITIONS, unique("eos-out"))
    produce_plain(
        bootstrap,
        source,
        [(i % PARTITIONS, f"k{i}".encode(), f"in-{i}".encode()) for i in range(n)],
    )
    return source, sink


def worker_args(bootstrap: str, source: str, sink: str, group: str, txn_id: str) -> list[str]:
    return [
        "transform",
        f"--bootstrap={bootstrap}",
        f"--group={group}",
        f"--txn-id={txn_id}",
        f"--input={source}",
        f"--output={sink}",
        f"--batch={BATCH}",
        f"--pause-ms={PAUSE_MS}",
        # librdkafka's debug log (e.g. ``eos,protocol``) into the worker's stderr file
        f"--debug={os.environ.get('SLUICE_TEST_RDKAFKA_DEBUG', '')}",
    ]


class Supervisor:
    """Keeps one worker running: a run that exits 3 (an abortable error: "restart me") is
    restarted, as an exactly-once application's supervisor would; any other exit fails."""

    def __init__(self, worker: Worker, context: Callable[[], str]) -> None:
        self.worker = worker
        self.context = context
        self.restarts = 0

    def start(self) -> None:
        self.worker.start()

    def check(self) -> None:
        code = self.worker.returncode
        if self.worker.proc is None or code is None:
            return
        assert code == EXIT_RESTART, (
            f"the worker exited with {code} (2 = a fatal error such as being fenced) "
            f"({self.context()})\n{self.worker.tail()}"
        )
        self.restarts += 1
        assert self.restarts <= 30, f"the worker restarted itself 30 times ({self.context()})"
        self.worker.start()

    def sleep(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            self.check()
            time.sleep(min(0.001, max(0.0, until - time.monotonic())))

    def wait_events(self, ev: str, count: int, since: int, timeout: float) -> None:
        """Wait until the worker logged ``count`` events ``ev`` after ``since`` (monotonic ns)."""
        deadline = time.monotonic() + timeout
        while sum(1 for e in self.worker.events() if e.ev == ev and e.t > since) < count:
            self.check()
            assert time.monotonic() < deadline, (
                f"the worker logged fewer than {count} {ev!r} within {timeout}s "
                f"({self.context()})\n{self.worker.tail()}"
            )
            time.sleep(0.001)

    def wait_done(self, bootstrap: str, group: str, source: str, ends: dict[int, int]) -> None:
        """Wait until the group's committed offsets are the ends of the input."""
        deadline = time.monotonic() + 90
        while (got := committed_offsets(bootstrap, group, source, PARTITIONS)) != ends:
            self.check()
            assert time.monotonic() < deadline, (
                f"the group's committed offsets are {got} 90 s after the last kill, expected "
                f"the input's ends {ends} ({self.context()})\n{self.worker.tail()}"
            )
            time.sleep(0.3)


def open_at_kill(worker: Worker) -> int:
    """How many records were flushed (acknowledged by the broker) in transactions that a kill
    left open: runs whose last event is ``flushed``. Their records are in the log, aborted."""
    total, last = 0, None
    for e in [*worker.events(), None]:
        if e is None or e.ev == "started":
            if last is not None and last.ev == "flushed" and last.fields["left"] == 0:
                total += int(last.fields["n"])
            last = None
        elif e.ev != "client_error":
            last = e
    return total


def check_exactly_once(
    bootstrap: str, source: str, sink: str, group: str, *, n: int, aborted_at_least: int, ctx: str
) -> None:
    settle(bootstrap, sink, PARTITIONS)
    got = values(read_topic(bootstrap, sink, PARTITIONS, "read_committed"))
    for p in range(PARTITIONS):
        want = [f"out-{i}".encode() for i in range(p, n, PARTITIONS)]
        if got[p] == want:
            continue
        counts = Counter(got[p])
        duplicated = sorted((v for v, c in counts.items() if c > 1), key=lambda v: int(v[4:]))
        missing = sorted(set(want) - set(counts), key=lambda v: int(v[4:]))
        first = next(
            (i for i, (a, b) in enumerate(zip(got[p], want, strict=False)) if a != b),
            min(len(got[p]), len(want)),
        )
        raise AssertionError(
            f"output partition {p} read_committed: {len(got[p])} records, expected {len(want)} "
            f"(one per input, in input order); {len(duplicated)} duplicated, e.g. "
            f"{duplicated[:5]}; {len(missing)} missing, e.g. {missing[:5]}; first difference "
            f"at index {first}: got {got[p][first : first + 3]}, expected "
            f"{want[first : first + 3]} ({ctx})"
        )
    everything = read_topic(bootstrap, sink, PARTITIONS, "read_uncommitted")
    total = sum(len(recs) for recs in everything.values())
    assert total >= n + aborted_at_least, (
        f"read_uncommitted sees {total} output records; expected at least {n} committed plus the "
        f"{aborted_at_least} of transactions the kills left open ({ctx})"
    )
    ends = {p: len(range(p, n, PARTITIONS)) for p in range(PARTITIONS)}
    assert committed_offsets(bootstrap, group, source, PARTITIONS) == ends, (
        f"the group's committed offsets are not the ends of the input {ends} ({ctx})"
    )


def test_worker_killed_20_times_output_exactly_once(
    bootstrap: str, workers: Callable[..., Worker]
) -> None:
    rng = random.Random(s := seed())
    n = 3000
    source, sink = setup_topics(bootstrap, n)
    group, txn_id = unique("eos-group"), unique("eos-txn")
    worker = workers("ctp", worker_args(bootstrap, source, sink, group, txn_id))
    kills: list[tuple[str, str]] = []
    supervisor = Supervisor(worker, lambda: f"seed {s}, kills (phase, last event) {kills}")

    plan = ["startup", *PHASES] * 4
    rng.shuffle(plan)
    for phase in plan:
        since = time.monotonic_ns()
        supervisor.start()
        if phase == "startup":  # InitProducerId (aborting the last run's transaction), the join
            supervisor.sleep(rng.uniform(0.05, 0.8))
        else:
            ev, spread = PHASES[phase]
            supervisor.wait_events(ev, rng.randint(1, 2), since, timeout=30)
            supervisor.sleep(rng.uniform(0, spread))
        worker.kill()
        run = worker.run_events()
        kills.append((phase, run[-1].ev if run else "-"))

    supervisor.start()
    ends = {p: len(range(p, n, PARTITIONS)) for p in range(PARTITIONS)}
    supervisor.wait_done(bootstrap, group, source, ends)
    assert worker.terminate() == 0, f"the worker failed on SIGTERM\n{worker.tail()}"
    aborted = open_at_kill(worker)
    check_exactly_once(
        bootstrap,
        source,
        sink,
        group,
        n=n,
        aborted_at_least=aborted,
        ctx=f"seed {s}, kills {kills}, self-restarts {supervisor.restarts}",
    )


def test_broker_killed_during_transactions_output_exactly_once(
    broker_factory: Callable[..., BrokerProcess], workers: Callable[..., Worker]
) -> None:
    rng = random.Random(s := seed())
    broker = broker_factory(**TXN_CONFIG)
    n = 2000
    source, sink = setup_topics(broker.bootstrap, n)
    group, txn_id = unique("eos-group"), unique("eos-txn")
    worker = workers("ctp", worker_args(broker.bootstrap, source, sink, group, txn_id))
    kills: list[tuple[str, str]] = []
    supervisor = Supervisor(worker, lambda: f"seed {s}, broker kills (phase, worker) {kills}")

    plan = [*PHASES, *rng.sample(list(PHASES), 2)]
    rng.shuffle(plan)
    supervisor.start()
    since = time.monotonic_ns()
    for phase in plan:
        ev, spread = PHASES[phase]
        supervisor.wait_events(ev, rng.randint(1, 2), since, timeout=60)
        supervisor.sleep(rng.uniform(0, spread))
        broker.kill()
        events = worker.events()
        kills.append((phase, events[-1].ev if events else "-"))
        broker.start()
        since = time.monotonic_ns()

    ends = {p: len(range(p, n, PARTITIONS)) for p in range(PARTITIONS)}
    supervisor.wait_done(broker.bootstrap, group, source, ends)
    assert worker.terminate() == 0, f"the worker failed on SIGTERM\n{worker.tail()}"
    check_exactly_once(
        broker.bootstrap,
        source,
        sink,
        group,
        n=n,
        aborted_at_least=0,
        ctx=f"seed {s}, broker kills {kills}, worker self-restarts {supervisor.restarts}",
    )


def test_static_member_replacement_survives_broker_kill(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    """What a restarted worker relies on: its consumer replaces the dead one's static membership
    (JoinGroup with the same ``group.instance.id``, no rebalance), and after the broker is killed
    -9 and restarted its transactional offsets are still accepted (Kafka stores the replacement
    in ``__consumer_offsets`` before answering the JoinGroup)."""
    broker = broker_factory(**TXN_CONFIG)
    source = create_topic(broker.bootstrap, 1, unique("static-in"))
    produce_plain(broker.bootstrap, source, [(0, None, f"in-{i}".encode()) for i in range(5)])
    group = unique("static-group")

    def member() -> tuple[Consumer, Message]:
        consumer = Consumer(
            {
                "bootstrap.servers": broker.bootstrap,
                "group.id": group,
                "group.instance.id": f"{group}-member",
                "session.timeout.ms": 30_000,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "metadata.recovery.strategy": "none",
            }
        )
        consumer.subscribe([source])
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                return consumer, msg
        raise AssertionError(f"the group member got no record of {source} within {TIMEOUT}s")

    first, _ = member()
    first.close()  # a static member does not leave: like a killed worker's, its place stays
    second, msg = member()
    producer = transactional_producer(
        broker.bootstrap, unique("static-txn"), **{"metadata.recovery.strategy": "none"}
    )
    try:
        broker.kill()
        broker.start()
        producer.begin_transaction()
        offsets = [TopicPartition(source, 0, msg.offset() + 1)]
        try:
            producer.send_offsets_to_transaction(offsets, second.consumer_group_metadata(), TIMEOUT)
            producer.commit_transaction(TIMEOUT)
        except KafkaException as exc:
            raise AssertionError(
                f"after a broker restart the static member that replaced another (member id "
                f"{second.memberid()}) had its transactional offsets refused: {exc.args[0]}"
            ) from None
    finally:
        second.close()
    got = committed_offsets(broker.bootstrap, group, source, 1)
    assert got == {0: msg.offset() + 1}, f"committed offsets {got}"
