"""Groups across a broker restart: committed offsets survive it, and members rejoin after it.

- Offsets (with their metadata) committed by a group member survive a clean stop and a ``kill -9``
  of the broker (``__consumer_offsets`` is reloaded): OffsetFetch returns them and a new member
  resumes exactly there.
- A member of each client consuming while the broker is killed -9 and restarted does not hang: its
  heartbeats fail, it rejoins, and it processes the records produced after the restart, with
  nothing skipped and no record redone whose commit had been confirmed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.compat.groups.conftest import (
    GROUP_CONFIG,
    SESSION_MS,
    TIMEOUT,
    Member,
    check_delivery,
    produce,
    wait_balanced,
    wait_processed,
    wait_until,
)
from tests.conftest import BrokerProcess, create_topic

PARTITIONS = 3


def subscribe(bootstrap: str, group: str, topic: str, *, wait_assigned: bool) -> Consumer:
    """A confluent-kafka group member; ``wait_assigned`` polls (and drops records) until the
    group assigned it every partition."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": 500,
        }
    )
    consumer.subscribe([topic])
    if not wait_assigned:
        return consumer
    wait_until(
        lambda: consumer.poll(0.1) is None and len(consumer.assignment()) == PARTITIONS,
        30,
        lambda: f"the member was assigned {consumer.assignment()}",
    )
    return consumer


def consume(consumer: Consumer, count: int) -> list[tuple[int, int]]:
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None:
            assert msg.error() is None, f"consumer error: {msg.error()}"
            got.append((msg.partition(), msg.offset()))
    assert len(got) == count, f"consumed {len(got)} records, expected {count}"
    return got


@pytest.mark.parametrize("how", ["stop", "kill"])
def test_offsets_survive_broker_restart(
    broker_factory: Callable[..., BrokerProcess], group_id: str, how: str
) -> None:
    broker = broker_factory(**GROUP_CONFIG)
    topic = create_topic(broker.bootstrap, PARTITIONS)
    produce(broker.bootstrap, topic, dict.fromkeys(range(PARTITIONS), 20))
    commits = {0: 7, 1: 20, 2: 0}

    member = subscribe(broker.bootstrap, group_id, topic, wait_assigned=True)
    try:
        member.commit(
            offsets=[TopicPartition(topic, p, o, metadata=f"meta-{p}") for p, o in commits.items()],
            asynchronous=False,
        )
    finally:
        member.close()

    if how == "stop":
        code = broker.stop()
        assert code == 0, f"the broker exited with {code} on SIGTERM"
    else:
        broker.kill()
    broker.start()

    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group_id})
    try:
        tps = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], TIMEOUT)
    finally:
        reader.close()
    got = {tp.partition: (tp.offset, tp.metadata) for tp in tps}
    want = {p: (o, f"meta-{p}") for p, o in commits.items()}
    assert got == want, f"after a broker {how}: committed {got}, expected {want}"

    # a new member of the group resumes exactly at the committed offsets
    member = subscribe(broker.bootstrap, group_id, topic, wait_assigned=False)
    try:
        records = consume(member, sum(20 - o for o in commits.values()))
        assert member.poll(1.0) is None, "consumed more than the records after the commits"
    finally:
        member.close()
    want_records = {(p, o) for p, start in commits.items() for o in range(start, 20)}
    assert sorted(records) == sorted(want_records), (
        f"after a broker {how} the group did not resume at {commits}: first records "
        f"{sorted(records)[:5]}"
    )


@pytest.mark.parametrize("client", ["confluent", "kafka-python", "aiokafka"])
def test_member_rejoins_after_broker_kill(
    broker_factory: Callable[..., BrokerProcess],
    members: Callable[..., Member],
    group_id: str,
    client: str,
) -> None:
    broker = broker_factory(**GROUP_CONFIG)
    topic = create_topic(broker.bootstrap, 2)
    a = members("a", client=client, bootstrap=broker.bootstrap, group=group_id, topic=topic)
    wait_balanced([a], 2, 30)
    produced = produce(broker.bootstrap, topic, {0: 10, 1: 10})
    wait_processed([a], produced, 30)

    broker.kill()
    broker.start()
    restarted_at = time.monotonic_ns()
    more = produce(broker.bootstrap, topic, {0: 10, 1: 10})
    produced |= more
    wait_processed([a], more, 60)
    assert a.running, f"the {client} member exited\n{a.tail()}"
    assert a.assignment() == {0, 1}, f"the {client} member owns {sorted(a.assignment())}"
    check_delivery([a], produced)
    redone = [rec for rec in a.processed(since=restarted_at) if rec not in more]
    assert not redone, f"records committed before the broker was killed were redone: {redone}"
