"""A Streams app outlives its group coordinator: on three brokers, the broker that coordinates
the app's group is killed (kill -9) while keyed records flow in, and the app — without a
restart of its instance — finds the new coordinator for its heartbeats and offset commits
(``sluice.streams.runtime.membership``), counts every record (exactly once under
``exactly_once_v2``) and commits to the end of its input.

The coordinator's move must outlast a session: the new coordinator loads the group with its
member and expires it unless heartbeats come, so records keep flowing for more than
:data:`SESSION_TIMEOUT_MS` after the new coordinator is named, and then the new coordinator
must list the app's member in a Stable group — a member that kept asking the dead broker is
dropped (under at-least-once its next OffsetCommit to the dead broker also stops the app).

The killed broker is the group's coordinator and nothing else of the app's: the app's topics
(its changelog created here beforehand) are led by the two other brokers, and its transaction
coordinator is one of them — the test is about the group coordinator's move alone.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def an_app(
    cluster: BrokerCluster, state_dir: Path, guarantee: ProcessingGuarantee
) -> tuple[App, int, list[int]]:
    """A counting app whose group coordinator is not its transaction coordinator (its process
    id written to its state directory beforehand, so its transactional id is known): the app,
    its group coordinator and the two other brokers, its transaction coordinator first."""
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
        group = coordinator(cluster, 1, app.application_id, GROUP)
        txn = coordinator(cluster, 1, transactional_id(app.config, process_id), TXN)
        if group != txn:
            other = next(i for i in cluster.ids if i not in (group, txn))
            return app, group, [txn, other]
    raise AssertionError("20 application ids, each with one broker coordinating both")


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


@pytest.mark.parametrize("guarantee", ["exactly_once_v2", "at_least_once"])
def test_a_streams_app_survives_the_kill_of_its_group_coordinator(
    broker_cluster_factory: Callable[..., BrokerCluster],
    tmp_path: Path,
    guarantee: ProcessingGuarantee,
) -> None:
    cluster = broker_cluster_factory(**CLUSTER_KEYS)
    bootstrap = cluster.bootstrap
    app, doomed, (a, b) = an_app(cluster, tmp_path, guarantee)
    app_id = app.application_id
    source, out = f"events-{app_id}", f"counts-{app_id}"
    # led by the two brokers that stay (the doomed one a follower of every partition)
    spread = [[a, b, doomed], [b, a, doomed], [a, b, doomed]]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [
        NewTopic(source, PARTITIONS, replica_assignment=spread),
        NewTopic(out, PARTITIONS, replica_assignment=spread),
        NewTopic(
            f"{app_id}-counts-changelog",
            PARTITIONS,
            replica_assignment=spread,
            config={"cleanup.policy": "compact"},
        ),
    ]
    for future in admin.create_topics(topics).values():
        future.result(timeout=30)
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
        cluster.wait_until(
            lambda: coordinator(cluster, a, app_id, GROUP) != doomed,
            f"a coordinator of {app_id} other than the killed broker {doomed}",
            timeout=40,
        )
        # records keep coming for longer than a session at the new coordinator, and the app
        # is still (or again) a member there: its heartbeats reach the new coordinator
        time.sleep(1.5 * SESSION_TIMEOUT_MS / 1000)
        cluster.wait_until(
            lambda: a_member_at(
                cluster,
                coordinator(cluster, a, app_id, GROUP),
                app_id,
                thread.membership.member_id,
            ),
            f"{app_id} a Stable group at its new coordinator, the app's member in it",
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
