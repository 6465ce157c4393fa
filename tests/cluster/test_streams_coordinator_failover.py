"""A Streams app outlives the kill (kill -9) of a broker it depends on: on three brokers, while
keyed records flow in, the broker that is one of the following to the app is killed, and the
app — without a restart of its instance or of its stream thread — carries on, counts every
record (exactly once under ``exactly_once_v2``, at least once under ``at_least_once``) and
commits to the end of its input:

* its **group coordinator**: the app finds the new coordinator for its heartbeats and offset
  commits (``sluice.streams.runtime.membership``). The move must outlast a session: the new
  coordinator loads the group with its member and expires it unless heartbeats come, so
  records keep flowing for more than :data:`SESSION_TIMEOUT_MS` after the new coordinator is
  named, and then the new coordinator must list the app's member in a Stable group — a member
  that kept asking the dead broker is dropped (under at-least-once its next OffsetCommit to
  the dead broker also stops the app);
* its **transaction coordinator** (exactly-once only): ``send_offsets_to_transaction`` and
  ``commit_transaction`` fail with retriable errors until librdkafka finds the new
  coordinator, and the stream thread retries them (``sluice.streams.runtime.txn_calls``);
* the **leader** of every partition of its topics (input, changelog, output): the consumers
  and the producer follow the new leaders, and a changelog end that cannot be read meanwhile
  skips that checkpoint instead of stopping the thread.

Each case kills that broker and nothing else of the app's: the group and the transaction
coordinators are two different brokers (the application id is drawn until they are), the
third broker being the one that leads the topics in the leader case; otherwise the topics
(the changelog created here beforehand) are led by the two brokers that stay, the doomed one a
follower of every partition. After the kill, once the role has moved to a broker that stays,
the app must go on processing and committing while records still come.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from sluice import wire
from sluice.dsl import App
from sluice.streams.config import ProcessingGuarantee
from sluice.streams.runtime.state_directory import StateDirectory
from sluice.streams.runtime.streams import KafkaStreams
from sluice.streams.runtime.thread_clients import transactional_id
from tests.cluster.brokers import BrokerCluster
from tests.cluster.test_coordinators import GROUP, TXN, coordinator
from tests.streams.runtime.fixtures import read, wait_for

PARTITIONS = 3
KEYS = [f"k{n}" for n in range(12)]
SESSION_TIMEOUT_MS = 4000
"""The app's ``session.timeout.ms`` (heartbeats every 0.8 s): short, so that a member the new
coordinator never hears from is dropped soon."""
CLUSTER_KEYS = {
    "zookeeper.session.timeout.ms": "4000",  # a killed broker leaves the cluster in 4 s
    "replica.lag.time.max.ms": "2000",  # and the ISRs
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.num.partitions": "3",
    "group.min.session.timeout.ms": "2000",
}
MAX_RECORDS = 4000
"""The producer's bound (at ~100 records a second it stops well before)."""
STOPPED = {"ERROR", "PENDING_SHUTDOWN", "NOT_RUNNING"}
DESCRIBE_GROUPS = wire.Api(15, "DescribeGroups", 5, 5)
Role = Literal["group-coordinator", "transaction-coordinator", "leader"]
"""What the killed broker is to the app."""


class KeyedProducer:
    """Writes ``(key, n)`` records round the :data:`KEYS` every 10 ms from a thread of its own,
    idempotent (a retry after the kill writes nothing twice), until :meth:`stop` or
    :data:`MAX_RECORDS`; counts the acknowledged records per key."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.acked: Counter[str] = Counter()
        self.failed: list[str] = []
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "partitioner": "murmur2_random",
                "linger.ms": 5,
                "log_level": 2,  # connection refusals to the killed broker are expected
            }
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="keyed-producer", daemon=True)
        self._thread.start()

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.failed.append(error.str())
        else:
            key = message.key()
            assert key is not None
            self.acked[key.decode()] += 1

    def _run(self) -> None:
        for n in range(MAX_RECORDS):
            if self._stop.is_set():
                break
            key = KEYS[n % len(KEYS)]
            self._producer.produce(
                self.topic, json.dumps(n).encode(), key.encode(), on_delivery=self._delivered
            )
            self._producer.poll(0)
            time.sleep(0.01)

    def stop(self) -> int:
        """Stop writing and wait for the acknowledgements (bounded); how many are missing."""
        self._stop.set()
        self._thread.join(10)
        return int(self._producer.flush(60))


class StateWatch:
    """Every state the app's stream thread goes through (sampled every 5 ms; ERROR and
    NOT_RUNNING are final, so they cannot slip by)."""

    def __init__(self, runtime: KafkaStreams) -> None:
        self.runtime = runtime
        self.states: list[str] = [runtime.state]
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._run, name="state-watch", daemon=True)
        self._watcher.start()

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            state = self.runtime.state
            if state != self.states[-1]:
                self.states.append(state)

    def stop(self) -> list[str]:
        self._stop.set()
        self._watcher.join(5)
        return self.states


@dataclass(frozen=True)
class Placement:
    """A counting app and the brokers that matter to it: its group coordinator, its
    transaction coordinator (that of its transactional id, also under at-least-once where it
    goes unused) and the third broker."""

    app: App
    transactional_id: str
    group: int
    txn: int
    other: int

    def doomed(self, role: Role) -> int:
        """The broker to kill in the case ``role``."""
        if role == "group-coordinator":
            return self.group
        if role == "transaction-coordinator":
            return self.txn
        return self.other  # neither coordinator: the leader of the app's topics


def an_app(cluster: BrokerCluster, state_dir: Path, guarantee: ProcessingGuarantee) -> Placement:
    """A counting app whose group coordinator is not its transaction coordinator (its process
    id written to its state directory beforehand, so its transactional id is known)."""
    for _ in range(20):  # each try: 2 in 3 that they differ
        suffix = uuid.uuid4().hex[:8]
        app = App(
            f"counter-{suffix}",
            cluster.bootstrap,
            state_dir=state_dir,
            processing_guarantee=guarantee,
            commit_interval_ms=200,
            replication_factor=3,
            session_timeout_ms=SESSION_TIMEOUT_MS,
        )
        process_id = StateDirectory(state_dir, app.application_id).process_id()
        txn_id = transactional_id(app.config, process_id)
        group = coordinator(cluster, 1, app.application_id, GROUP)
        txn = coordinator(cluster, 1, txn_id, TXN)
        if group != txn:
            other = next(i for i in cluster.ids if i not in (group, txn))
            return Placement(app, txn_id, group, txn, other)
    raise AssertionError("20 application ids, each with one broker coordinating both")


def leaders(cluster: BrokerCluster, via: int, topics: list[str]) -> set[int]:
    """The leaders of every partition of ``topics`` that broker ``via`` names (-1: none)."""
    admin = AdminClient({"bootstrap.servers": cluster.broker(via).bootstrap, "log_level": 2})
    named = admin.list_topics(timeout=10).topics
    return {named[t].partitions[p].leader for t in topics for p in range(PARTITIONS)}


def a_member_at(cluster: BrokerCluster, i: int, group: str, member_id: str) -> bool:
    """Broker ``i`` describes ``group`` as Stable, with ``member_id`` among its members."""
    with wire.connect(cluster.broker(i).bootstrap, timeout=10) as conn:
        answer = conn.call(DESCRIBE_GROUPS, groups=(group,), include_authorized_operations=False)
    (described,) = answer.groups
    members = {m.member_id for m in described.members}
    return described.group_state == "Stable" and member_id in members


def committed_to_the_end(bootstrap: str, group: str, topic: str) -> bool:
    """The group's committed offset of every partition of ``topic`` is its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 2})
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = consumer.committed(partitions, timeout=10)
        ends = [consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in partitions]
    finally:
        consumer.close()
    return [tp.offset for tp in committed] == ends


def latest(records: list[tuple[Any, Any, int]]) -> dict[str, int]:
    return {key: value for key, value, _ in records}


@pytest.mark.parametrize(
    ("role", "guarantee"),
    [
        ("group-coordinator", "exactly_once_v2"),
        ("group-coordinator", "at_least_once"),
        ("transaction-coordinator", "exactly_once_v2"),
        ("leader", "exactly_once_v2"),
        ("leader", "at_least_once"),
    ],
)
def test_a_streams_app_survives_the_kill_of_a_broker_it_depends_on(
    broker_cluster_factory: Callable[..., BrokerCluster],
    tmp_path: Path,
    role: Role,
    guarantee: ProcessingGuarantee,
) -> None:
    cluster = broker_cluster_factory(**CLUSTER_KEYS)
    bootstrap = cluster.bootstrap
    placement = an_app(cluster, tmp_path, guarantee)
    app, doomed = placement.app, placement.doomed(role)
    a, b = (i for i in cluster.ids if i != doomed)
    app_id = app.application_id
    source, out = f"events-{app_id}", f"counts-{app_id}"
    topic_names = [source, out, f"{app_id}-counts-changelog"]
    if role == "leader":  # the doomed broker leads every partition
        spread = [[doomed, a, b], [doomed, b, a], [doomed, a, b]]
    else:  # led by the two brokers that stay (the doomed one a follower of every partition)
        spread = [[a, b, doomed], [b, a, doomed], [a, b, doomed]]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(t, PARTITIONS, replica_assignment=spread) for t in topic_names[:2]]
    topics.append(
        NewTopic(
            topic_names[2],
            PARTITIONS,
            replica_assignment=spread,
            config={"cleanup.policy": "compact"},
        )
    )
    for future in admin.create_topics(topics).values():
        future.result(timeout=30)
    cluster.wait_until(
        lambda: leaders(cluster, a, topic_names) == {s[0] for s in spread},
        f"the leaders of {topic_names} as placed",
        timeout=20,
    )
    moved: dict[Role, Callable[[], bool]] = {
        "group-coordinator": lambda: coordinator(cluster, a, app_id, GROUP) != doomed,
        "transaction-coordinator": (
            lambda: coordinator(cluster, a, placement.transactional_id, TXN) != doomed
        ),
        "leader": lambda: not {doomed, -1} & leaders(cluster, a, topic_names),
    }
    app.stream(source).group_by_key().count(name="counts").to_stream().to(out)
    runtime = app.start()
    producer: KeyedProducer | None = None
    watch: StateWatch | None = None
    try:
        wait_for(lambda: runtime.state == "RUNNING", "the app to run")
        assert runtime.thread is not None
        thread = runtime.thread
        watch = StateWatch(runtime)
        producer = KeyedProducer(bootstrap, source)
        wait_for(lambda: thread.processed >= 100 and thread.commits >= 3, "records processed")

        cluster.kill(doomed)
        cluster.wait_until(moved[role], f"the {role} of {app_id} moved off broker {doomed}", 40)
        # while records still come, the app processes and commits again
        processed, commits = thread.processed, thread.commits
        wait_for(
            lambda: thread.processed >= processed + 100 and thread.commits >= commits + 3,
            f"{app_id} processing and committing again after the kill of broker {doomed}",
            timeout=30,
        )
        if role == "group-coordinator":
            # records keep coming for longer than a session at the new coordinator, and the
            # app is still (or again) a member there: its heartbeats reach the new coordinator
            time.sleep(1.5 * SESSION_TIMEOUT_MS / 1000)
        cluster.wait_until(
            lambda: a_member_at(
                cluster,
                coordinator(cluster, a, app_id, GROUP),
                app_id,
                thread.membership.member_id,
            ),
            f"{app_id} a Stable group at its coordinator, the app's member in it",
            timeout=20,
        )
        unacknowledged = producer.stop()
        acked, failed = dict(producer.acked), producer.failed
        producer = None
        assert unacknowledged == 0 and not failed, (unacknowledged, failed[:3])
        assert set(acked) == set(KEYS), acked

        def counted(records: list[tuple[Any, Any, int]]) -> bool:
            got = latest(records)
            if guarantee == "exactly_once_v2":
                return got == acked
            return all(got.get(key, 0) >= n for key, n in acked.items())  # at least once

        final = read(
            bootstrap,
            out,
            until=counted,
            committed_only=guarantee == "exactly_once_v2",
            timeout=30,
            explain=lambda rs: (
                f"counts {latest(rs)}, produced {acked}; app {runtime.state}, "
                f"error {thread.error!r}, states {watch.states if watch else None}"
            ),
        )
        assert counted(final)
        cluster.wait_until(
            lambda: committed_to_the_end(bootstrap, app_id, source),
            f"{app_id}'s committed offsets at the end of {source}",
            timeout=30,
        )
        states = watch.stop()
        assert runtime.thread is thread and thread.error is None, thread.error
        assert runtime.state == "RUNNING" and not STOPPED & set(states), states
    finally:
        if producer is not None:
            producer.stop()
        if watch is not None:
            watch.stop()
        app.close()
