"""Static membership (KIP-345, ``group.instance.id``) with confluent-kafka members.

Three static members share six partitions. One — the group's leader (the first to join) or a
follower — is restarted: killed -9, or closed (a static member sends no LeaveGroup), and back
within its session timeout. It gets the same partitions again and resumes at its committed
offsets, and the other two see no rebalance at all (no assign or revoke callback fires again):
Kafka's coordinator replaces the static member's id in the stable group (for the leader too; below
JoinGroup v9 it answers the returning leader with the old leader id so that it does not assign).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tests.compat.groups.conftest import (
    Member,
    check_delivery,
    produce,
    tails,
    wait_balanced,
    wait_processed,
    wait_until,
)
from tests.conftest import create_topic

PARTITIONS = 6
SESSION_MS = 15_000  # room to restart a process well within it


@pytest.mark.parametrize("how", ["kill", "close"])
@pytest.mark.parametrize("restarted", ["leader", "follower"])
def test_restart_within_session_timeout_keeps_assignment(
    members: Callable[..., Member], bootstrap: str, group_id: str, restarted: str, how: str
) -> None:
    topic = create_topic(bootstrap, PARTITIONS)

    def start(name: str) -> Member:
        return members(
            name,
            client="confluent",
            bootstrap=bootstrap,
            group=group_id,
            topic=topic,
            instance_id=f"{group_id}-{name}",
            session_ms=SESSION_MS,
        )

    a = start("a")  # alone first: the leader
    wait_balanced([a], PARTITIONS, 30)
    everyone = [a, start("b"), start("c")]
    wait_balanced(everyone, PARTITIONS, 30)
    produced = produce(bootstrap, topic, dict.fromkeys(range(PARTITIONS), 10))
    wait_processed(everyone, produced, 30)
    b = a if restarted == "leader" else everyone[2]
    others = [m for m in everyone if m is not b]

    owned = {m.name: m.assignment() for m in everyone}
    callbacks = {m.name: m.count("assigned") + m.count("revoked") for m in others}
    if how == "kill":
        b.kill()
    else:
        b.leave()
    down_at = time.monotonic()
    b.start()
    wait_until(
        lambda: b.count("started") == 2 and b.assignment(),
        SESSION_MS / 1000,
        lambda: f"the restarted static {restarted} got no assignment\n{b.tail()}",
    )
    assert time.monotonic() - down_at < SESSION_MS / 1000, "restart took the session timeout"
    assert b.assignment() == owned[b.name], (
        f"the restarted static {restarted} got {sorted(b.assignment())}, "
        f"before the restart it owned {sorted(owned[b.name])}"
    )

    restarted_at = time.monotonic_ns()
    more = produce(bootstrap, topic, dict.fromkeys(range(PARTITIONS), 10))
    produced |= more
    wait_processed(everyone, more, 30)
    time.sleep(1.5)  # 3 heartbeat intervals: a rebalance would have reached the others
    for m in others:
        now = m.count("assigned") + m.count("revoked")
        assert now == callbacks[m.name], (
            f"{m.name} saw a rebalance when the static {restarted} {b.name} restarted "
            f"({now - callbacks[m.name]} more assign/revoke callbacks)\n{m.tail()}"
        )
        assert m.assignment() == owned[m.name], f"{m.name}'s assignment changed"
    for m in everyone:
        seen = {p for p, o in m.processed() if (p, o) in more}
        assert seen <= owned[m.name], f"{m.name} processed partitions {sorted(seen)}"
    redone = [rec for rec in b.processed(since=restarted_at) if rec not in more]
    assert not redone, f"{b.name} redid records it committed before the restart: {redone}"
    assert check_delivery(everyone, produced) == 0, tails(everyone)
