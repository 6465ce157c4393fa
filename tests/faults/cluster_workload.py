"""The clients of the cluster fault tests, recording into a :class:`~tests.faults.history.History`.

* :class:`ProducerRecorder` — a thread producing the numbers 0, 1, 2, … (value ``n`` to partition
  ``n % partitions``) through confluent-kafka with ``acks=all``, idempotent or not, at a bounded
  rate, for a bounded count and time. Every send, acknowledgement (partition, offset) and failure
  goes to the history; a failure is *definite* only when the producer makes no retries and the
  broker refused the write before appending it (``NOT_ENOUGH_REPLICAS``).
* :class:`ConsumerRecorder` — a thread reading the topic while the faults happen: every
  partition assigned from the start, or (``group=``) subscribed in a consumer group that
  commits its positions synchronously every half second; each read, assignment and successful
  commit is recorded.
* :func:`drain` — after the run, every partition read from its start to its high watermark by a
  fresh consumer (the reads the ``lost`` check relies on).
* :func:`assert_delivered` / :func:`assert_order_kept` — the verdicts of Kafka's
  ``end_to_end.validate_delivery``: every acknowledged record consumed, none twice when the
  producer is idempotent, and each partition in the order of the sends.
* :func:`replica_log` / :func:`wait_for_identical_replicas` — a replica's records read from its
  segment files, to compare the replicas of a partition.
* :class:`ClusterView` — what Metadata tells about the cluster (leaders, ISR, the controller)
  and bounded waits on it.

:data:`FAULT_CONFIG` holds the brokers' keys that make faults quick to detect and heal.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic

from sluice.broker.records.batch import iter_headers
from sluice.broker.records.codec import decode_records
from tests.cluster.brokers import BrokerCluster
from tests.faults.history import History, Report, check

FAULT_CONFIG = {
    "zookeeper.session.timeout.ms": "4000",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.backoff.ms": "200",
    "replica.fetch.wait.max.ms": "200",
    "controlled.shutdown.retry.backoff.ms": "500",
    "controlled.shutdown.max.retries": "10",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
}
"""Brokers' keys for fault tests: a dead broker's session ends after 4 s, a follower that stops
fetching leaves the ISR after 2 s, a clean stop waits at most 10 × 0.5 s for its leaderships to
move, and the internal topics have 3 partitions (of RF 3, the cluster default)."""

Entry = tuple[int, int, str | None]
"""One record of a replica's log: (offset, leader epoch of its batch, value)."""

CLIENT_QUIET = {"log_level": 2}
"""librdkafka logs connection refusals at level 3; a fault test makes many on purpose."""


def note(what: str) -> None:
    """Print a step of a fault test with the time (pytest shows it when the test fails)."""
    print(f"{time.strftime('%H:%M:%S')}.{int(time.time() * 1000) % 1000:03d} {what}", flush=True)


def create_topic(
    cluster: BrokerCluster, name: str, partitions: int = 3, rf: int = 3, **config: str
) -> None:
    """Create ``name`` through the AdminClient and wait until it is created (bounded)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, **CLIENT_QUIET})
    futures = admin.create_topics(
        [NewTopic(name, partitions, rf, config=config)], operation_timeout=30, request_timeout=40
    )
    futures[name].result(timeout=45)


@dataclass(frozen=True)
class PartitionView:
    """One partition as Metadata tells it."""

    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ClusterView:
    """Metadata from the running brokers of ``cluster``, and bounded waits on it."""

    def __init__(self, cluster: BrokerCluster) -> None:
        self.cluster = cluster
        self.unreachable: set[int] = set()
        """Brokers not to ask (a paused one would not answer)."""

    def _admin(self) -> AdminClient:
        running = [i for i in self.cluster.running() if i not in self.unreachable]
        bootstrap = ",".join(self.cluster.broker(i).bootstrap for i in running) or (
            self.cluster.bootstrap
        )
        return AdminClient({"bootstrap.servers": bootstrap, **CLIENT_QUIET})

    def partitions(self, topic: str) -> dict[int, PartitionView]:
        """partition → leader, replicas and ISR."""
        found = self._admin().list_topics(topic, timeout=10).topics[topic]
        if found.error is not None:
            raise KafkaException(found.error)
        return {
            p.id: PartitionView(p.leader, tuple(p.replicas), tuple(p.isrs))
            for p in found.partitions.values()
        }

    def leader(self, topic: str, partition: int) -> int:
        """The leader of ``topic``/``partition`` (-1 while it has none)."""
        return self.partitions(topic)[partition].leader

    def controller(self) -> int:
        """The id of the controller."""
        return int(self._admin().list_topics(timeout=10).controller_id)

    def wait_for_leaders(self, topic: str, among: Iterable[int], timeout: float = 30.0) -> None:
        """Wait until every partition of ``topic`` has a leader in ``among``."""
        allowed = set(among)
        self.cluster.wait_until(
            lambda: all(v.leader in allowed for v in self.partitions(topic).values()),
            f"every partition of {topic} led by one of {sorted(allowed)}",
            timeout=timeout,
        )

    def wait_for_isr(self, topic: str, size: int, timeout: float = 60.0) -> None:
        """Wait until every partition of ``topic`` has ``size`` in-sync replicas and a leader."""
        self.cluster.wait_until(
            lambda: all(
                len(v.isr) == size and v.leader >= 0 for v in self.partitions(topic).values()
            ),
            f"an ISR of {size} for every partition of {topic}",
            timeout=timeout,
        )


class Background:
    """A daemon thread running ``target`` until it returns or :meth:`stop` sets
    :attr:`stopping`, which ``target`` watches; :meth:`stop` waits for it, bounded."""

    def __init__(self, target: Callable[[], None], name: str) -> None:
        self.name = name
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=target, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Ask the thread to stop; fail if it has not within ``timeout`` s."""
        self.stopping.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.name} did not stop within {timeout:g}s"

    def alive(self) -> bool:
        """Whether the thread still runs."""
        return self._thread.is_alive()


class ProducerRecorder:
    """Produce 0, 1, 2, … to ``topic`` on a thread of its own, recording into ``history``.

    ``rate`` records a second (an attribute: a test may change it while it runs), at most
    ``max_records`` in all and for ``max_seconds``; :meth:`stop`
    ends it sooner (and flushes, bounded). ``retries=0`` makes a ``NOT_ENOUGH_REPLICAS`` refusal
    a definite failure (the one attempt wrote nothing).
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        history: History,
        *,
        idempotent: bool = True,
        retries: int | None = None,
        rate: int = 300,
        max_records: int = 100_000,
        max_seconds: float = 150.0,
        **config: Any,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.history = history
        self.rate = rate
        self.max_records = max_records
        self.max_seconds = max_seconds
        self.retries = retries
        self.sent = 0
        self.acked = 0
        self.fatal: list[str] = []
        self.errors: list[str] = []
        self.error_codes: list[int] = []
        self.refused: list[str] = []
        """Sends the client refused at once (``produce()`` raised), retried later."""
        settings: dict[str, Any] = {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
            "retry.backoff.ms": 100,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "error_cb": self._on_error,
            **CLIENT_QUIET,
            **config,
        }
        if retries is not None:
            settings["retries"] = retries
        self._producer = Producer(settings)
        self._background = Background(self._run, f"the producer of {topic}")
        self.unflushed = 0

    def start(self) -> ProducerRecorder:
        """Start producing."""
        self._background.start()
        return self

    def stop(self, flush_timeout: float = 60.0) -> None:
        """Stop producing, wait (bounded) for the outstanding acknowledgements."""
        self._background.stop(flush_timeout + 10)
        self.unflushed = self._producer.flush(flush_timeout)

    def wait_acked(self, count: int, timeout: float = 30.0) -> None:
        """Wait until ``count`` records are acknowledged in all (bounded); fail with the errors."""
        deadline = time.monotonic() + timeout
        while self.acked < count:
            if time.monotonic() > deadline or not self._background.alive():
                raise AssertionError(
                    f"{self.acked} records of {self.topic} acknowledged, expected {count} "
                    f"within {timeout:g}s ({self.sent} sent); errors: {self.errors[-5:]}, "
                    f"fatal: {self.fatal}"
                )
            time.sleep(0.05)

    def _run(self) -> None:
        last = time.monotonic()
        deadline = last + self.max_seconds
        due = 1.0  # how many records should have been sent by now (rate may change)
        while (
            not self._background.stopping.is_set()
            and self.sent < self.max_records
            and time.monotonic() < deadline
            and not self.fatal
        ):
            now = time.monotonic()
            due = min(self.max_records, self.sent + self.rate, due + (now - last) * self.rate)
            last = now
            while self.sent < due:
                n = self.sent
                try:
                    self._producer.produce(
                        self.topic,
                        value=str(n).encode(),
                        partition=n % self.partitions,
                        on_delivery=self._delivered,
                    )
                except BufferError:
                    break  # the client's queue is full: let it drain
                except KafkaException as exc:
                    # Refused by the client before sending (a broker's Metadata said the topic
                    # does not exist): nothing was sent; try again in the next round.
                    self.refused.append(str(exc))
                    break
                self.history.sent(n)
                self.sent += 1
            self._producer.poll(0.01)
            time.sleep(0.01)

    def _delivered(self, err: KafkaError | None, msg: Any) -> None:
        n = int(msg.value())
        if err is None:
            self.history.acked(n, msg.partition(), msg.offset())
            self.acked += 1
            return
        self.errors.append(str(err))
        self.error_codes.append(err.code())
        definite = self.retries == 0 and err.code() == KafkaError.NOT_ENOUGH_REPLICAS
        self.history.failed(n, definite=definite)

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal.append(str(err))


class ConsumerRecorder:
    """Read ``topic`` on a thread of its own while faults happen, recording as ``name``.

    Without ``group`` every partition is assigned from its start; with it the consumer subscribes
    in that group, starts from the committed offsets (the earliest without), and commits its
    positions synchronously every ``commit_every`` s; each successful commit is kept in
    :attr:`commits`.
    """

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        history: History,
        *,
        name: str = "reader",
        group: str | None = None,
        commit_every: float = 0.5,
        max_seconds: float = 180.0,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.history = history
        self.name = name
        self.group = group
        self.commit_every = commit_every
        self.max_seconds = max_seconds
        self.high: dict[int, int] = {}
        """partition → the highest offset this consumer read."""
        self.commits: list[dict[int, int]] = []
        """Each successful commit: partition → committed offset (partitions without a position
        are not committed, and left out)."""
        self.committed: dict[int, int] = {}
        """partition → the offset this consumer committed last."""
        self.errors: list[str] = []
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group or f"{name}-unused",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 500,
                **CLIENT_QUIET,
            }
        )
        self._background = Background(self._run, f"consumer {name}")

    def start(self) -> ConsumerRecorder:
        """Assign or subscribe, then read until :meth:`stop`."""
        self._background.start()
        return self

    def stop(self) -> None:
        """Stop reading and close the consumer (leaving the group)."""
        self._background.stop(30)

    def wait_read(self, upto: dict[int, int], timeout: float = 60.0) -> None:
        """Wait until this consumer read, per partition, the offset ``upto`` names (bounded)."""
        deadline = time.monotonic() + timeout
        while any(self.high.get(p, -1) < offset for p, offset in upto.items()):
            if time.monotonic() > deadline or not self._background.alive():
                behind = {
                    p: (self.high.get(p, -1), offset)
                    for p, offset in upto.items()
                    if self.high.get(p, -1) < offset
                }
                raise AssertionError(
                    f"consumer {self.name} did not reach the last acknowledged offsets within "
                    f"{timeout:g}s: partition → (read, acknowledged) {behind}; "
                    f"errors {self.errors[-5:]}"
                )
            time.sleep(0.1)

    def _run(self) -> None:
        consumer = self._consumer
        try:
            if self.group is None:
                consumer.assign(
                    [
                        TopicPartition(self.topic, p, OFFSET_BEGINNING)
                        for p in range(self.partitions)
                    ]
                )
                for p in range(self.partitions):
                    self.history.moved(self.name, p)
            else:
                consumer.subscribe([self.topic], on_assign=self._assigned)
            deadline = time.monotonic() + self.max_seconds
            last_commit = time.monotonic()
            while not self._background.stopping.is_set() and time.monotonic() < deadline:
                for msg in consumer.consume(num_messages=500, timeout=0.2):
                    if msg.error() is not None:
                        self.errors.append(str(msg.error()))
                        continue
                    p, offset, value = record_of(msg)
                    self.history.polled(self.name, p, offset, value)
                    self.high[p] = max(offset, self.high.get(p, -1))
                if self.group is not None and time.monotonic() - last_commit > self.commit_every:
                    self._commit()
                    last_commit = time.monotonic()
            if self.group is not None:
                self._commit()
        finally:
            consumer.close()

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self.history.moved(self.name, tp.partition)

    def _commit(self) -> None:
        try:
            done = self._consumer.commit(asynchronous=False)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError._NO_OFFSET:
                self.errors.append(f"commit: {exc}")
            return
        if done:
            failed = [tp for tp in done if tp.error is not None]
            if failed:
                self.errors.append(f"commit: {failed}")
            else:
                offsets = {tp.partition: tp.offset for tp in done if tp.offset >= 0}
                self.commits.append(offsets)
                self.committed.update(offsets)


def record_of(msg: Message) -> tuple[int, int, int]:
    """(partition, offset, value) of a record the workload wrote."""
    partition, offset, value = msg.partition(), msg.offset(), msg.value()
    assert partition is not None and offset is not None and value is not None, msg
    return partition, offset, int(value)


def drain(
    bootstrap: str,
    topic: str,
    partitions: int,
    history: History,
    *,
    name: str = "drain",
    timeout: float = 60.0,
    read_committed: bool = False,
) -> None:
    """Read every partition from its start to its high watermark as ``name``, into ``history``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{name}-unused",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if read_committed else "read_uncommitted",
            **CLIENT_QUIET,
        }
    )
    try:
        deadline = time.monotonic() + timeout
        for p in range(partitions):
            _, end = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)
            tp = TopicPartition(topic, p, OFFSET_BEGINNING)
            consumer.assign([tp])
            history.moved(name, p)
            position = 0
            while position < end:
                assert time.monotonic() < deadline, (
                    f"draining {topic}/{p}: at offset {position} of {end} after {timeout:g}s"
                )
                for msg in consumer.consume(num_messages=1000, timeout=0.5):
                    if msg.error() is not None:
                        continue
                    _, offset, value = record_of(msg)
                    history.polled(name, p, offset, value)
                    position = offset + 1
                if read_committed:  # markers and aborted records are never returned
                    position = max(position, consumer.position([tp])[0].offset)
    finally:
        consumer.close()


def last_acked(history: History) -> dict[int, int]:
    """partition → the highest acknowledged offset."""
    high: dict[int, int] = {}
    for partition, offset in history.acks.values():
        high[partition] = max(offset, high.get(partition, -1))
    return high


def assert_delivered(history: History, *, exactly_once: bool, context: str = "") -> Report:
    """Kafka's ``validate_delivery`` through the history checker: every acknowledged record
    read, none twice when ``exactly_once``, polls in order and skipping nothing."""
    report = check(history)
    ok = report.ok if exactly_once else report.ok_but_duplicates()
    assert ok, f"{report}\n{context}"
    assert report.acknowledged > 0, f"nothing was acknowledged\n{context}"
    return report


def assert_order_kept(history: History) -> None:
    """Each partition holds the acknowledged records in the order they were sent."""
    offsets: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    for value in history.sends:
        if value in history.acks:
            partition, offset = history.acks[value]
            offsets[partition].append((offset, value))
    for partition, pairs in offsets.items():
        swapped = [(a, b) for a, b in itertools.pairwise(pairs) if b[0] <= a[0]]
        assert not swapped, (
            f"partition {partition}: records sent in order got offsets out of order "
            f"((offset, value) pairs): {swapped[:5]}"
        )


def replica_log(cluster: BrokerCluster, broker: int, topic: str, partition: int) -> list[Entry]:
    """The data records of broker ``broker``'s replica of ``topic``/``partition``, read from its
    segment files: (offset, leader epoch of the batch, value). A partial batch at the end (a
    write in progress) is left out."""
    directory = cluster.broker(broker).data_dir / f"{topic}-{partition}"
    entries: list[Entry] = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        for header in iter_headers(data):
            if header.is_control:
                continue
            for record in decode_records(data, header):
                value = None if record.value is None else record.value.decode()
                entries.append(
                    (header.base_offset + record.offset_delta, header.partition_leader_epoch, value)
                )
    return entries


def wait_for_identical_replicas(
    cluster: BrokerCluster, topic: str, partitions: int, brokers: Iterable[int], timeout: float = 30
) -> None:
    """Wait (bounded) until the replicas on ``brokers`` hold the same records, offsets and batch
    epochs in every partition; fail with where they first differ."""
    ids = list(brokers)
    differences: list[str] = []

    def identical() -> bool:
        differences.clear()
        for p in range(partitions):
            logs = {i: replica_log(cluster, i, topic, p) for i in ids}
            reference = logs[ids[0]]
            for i in ids[1:]:
                other = logs[i]
                if other != reference:
                    pairs = enumerate(zip(reference, other, strict=False))
                    first = next(
                        (n for n, (a, b) in pairs if a != b), min(len(reference), len(other))
                    )
                    differences.append(
                        f"{topic}-{p}: broker {ids[0]} has {len(reference)} records, broker {i} "
                        f"{len(logs[i])}; from index {first}: {reference[first : first + 3]} vs "
                        f"{logs[i][first : first + 3]}"
                    )
        return not differences

    deadline = time.monotonic() + timeout
    while not identical():
        assert time.monotonic() < deadline, (
            f"the replicas did not become identical within {timeout:g}s: {differences}"
        )
        time.sleep(0.5)
