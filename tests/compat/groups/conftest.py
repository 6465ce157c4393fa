"""Consumer groups with real clients: fixtures and the harness of the group tests.

Group members run as processes of their own (``member.py``) so that a test can ``kill -9`` one;
each writes what it did (assignments, records processed, commits) as JSON lines to a file that
:class:`Member` reads back. :func:`check_delivery` is the rule every scenario ends with: every
record produced was processed, and a record was processed again only if no commit of the earlier
processing had been confirmed before (at-least-once, nothing more).

The tests import the harness (``from tests.compat.groups.conftest import Member``); the broker is
the session's ``shared_broker`` (``group.initial.rebalance.delay.ms=0``), or a broker of the
test's own from ``broker_factory(**GROUP_CONFIG)`` when the test restarts it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from tests.compat.harness import TIMEOUT, Event, LoggedProcess, committed_offsets, wait_until
from tests.conftest import SHARED_CONFIG, create_topic

SESSION_MS = 6000  # session.timeout.ms of the members (Kafka's group.min.session.timeout.ms)
HEARTBEAT_MS = 500
# The broker of the group tests: no initial rebalance delay (Kafka's 3 s would slow every test).
GROUP_CONFIG = SHARED_CONFIG
MEMBER_SCRIPT = Path(__file__).with_name("member.py")


@pytest.fixture
def group_id() -> str:
    return f"group-{uuid.uuid4().hex[:10]}"


def produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> set[tuple[int, int]]:
    """Produce ``n`` records to each partition; returns the ``(partition, offset)`` acknowledged."""
    acked: set[tuple[int, int]] = set()
    errors: list[str] = []

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked.add((msg.partition(), msg.offset()))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for p, n in per_partition.items():
        for i in range(n):
            producer.produce(topic, value=f"{p}:{i}".encode(), partition=p, on_delivery=report)
    left = producer.flush(TIMEOUT)
    total = sum(per_partition.values())
    assert left == 0 and not errors, f"{left} of {total} undelivered; errors: {errors[:5]}"
    assert len(acked) == total, f"expected {total} acknowledged records, got {len(acked)}"
    return acked


def ends_of(produced: Iterable[tuple[int, int]]) -> dict[int, int]:
    """The end offset (last + 1) of every partition in a set of ``(partition, offset)``."""
    ends: dict[int, int] = {}
    for p, o in produced:
        ends[p] = max(ends.get(p, 0), o + 1)
    return ends


class Member(LoggedProcess):
    """A ``member.py`` process: one consumer of a group, its log read back as :class:`Event` s."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        *,
        client: str,
        bootstrap: str,
        group: str,
        topic: str,
        strategy: str = "range",
        instance_id: str = "",
        reset: str = "earliest",
        session_ms: int = SESSION_MS,
        heartbeat_ms: int = HEARTBEAT_MS,
        delay_ms: int = 0,
    ) -> None:
        super().__init__(name, workdir)
        self.cmd = [
            sys.executable,
            str(MEMBER_SCRIPT),
            f"--client={client}",
            f"--bootstrap={bootstrap}",
            f"--group={group}",
            f"--topic={topic}",
            f"--out={self.out}",
            f"--strategy={strategy}",
            f"--instance-id={instance_id}",
            f"--reset={reset}",
            f"--session-ms={session_ms}",
            f"--heartbeat-ms={heartbeat_ms}",
            f"--max-poll-ms={max(10_000, session_ms)}",
            f"--delay-ms={delay_ms}",
        ]

    def kill(self) -> None:
        """kill -9: no LeaveGroup, no commit, nothing."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(TIMEOUT)

    def leave(self, timeout: float = 30.0) -> None:
        """SIGTERM: the member closes its consumer (LeaveGroup) and exits; fails if it does not."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{self.name} did not exit within {timeout}s of SIGTERM\n{self.tail()}"
            ) from None
        assert code == 0, f"{self.name} exited with {code}\n{self.tail()}"
        assert self.events()[-1].ev == "closed", f"{self.name} did not close\n{self.tail()}"

    def events(self) -> list[Event]:
        if not self.out.exists():
            return []
        events = []
        for line in self.out.read_text(encoding="utf-8").splitlines():
            if not line.endswith("}"):
                continue  # a line cut by kill -9
            obj = json.loads(line)
            events.append(Event(obj.pop("t"), obj.pop("ev"), obj))
        return events

    def assignment(self) -> set[int]:
        """The partitions it owns now, replayed from its assign/revoke/lost callbacks."""
        owned: set[int] = set()
        for e in self.events():
            if e.ev == "started":
                owned = set()
            elif e.ev == "assigned":
                owned |= set(e.fields["parts"])
            elif e.ev in ("revoked", "lost"):
                owned -= set(e.fields["parts"])
        return owned

    def member_ids(self) -> list[str]:
        return [e.fields["member"] for e in self.events() if e.ev == "assigned"]

    def processed(self, since: int = 0) -> list[tuple[int, int]]:
        return [
            (e.fields["p"], e.fields["o"]) for e in self.events() if e.ev == "rec" and e.t >= since
        ]

    def count(self, ev: str) -> int:
        return sum(1 for e in self.events() if e.ev == ev)

    def tail(self, lines: int = 15) -> str:
        log = (
            self.out.read_text(encoding="utf-8").splitlines()[-lines:] if self.out.exists() else []
        )
        err = self.stderr_tail(2000)
        return f"--- {self.name} log tail:\n" + "\n".join(log) + f"\n--- {self.name} stderr:\n{err}"


@pytest.fixture
def members(tmp_path: Path) -> Iterator[Callable[..., Member]]:
    """``members(name, client=..., bootstrap=..., group=..., topic=...)`` starts a member."""
    started: list[Member] = []

    def start(name: str, **kwargs: Any) -> Member:
        member = Member(name, tmp_path, **kwargs)
        started.append(member)
        return member.start()

    yield start
    for member in started:
        member.stop()


def describe(members: Iterable[Member]) -> str:
    return "\n".join(
        f"{m.name}: owns {sorted(m.assignment())}, processed {len(m.processed())}, "
        f"running={m.running}"
        for m in members
    )


def tails(members: Iterable[Member]) -> str:
    return "\n".join(m.tail() for m in members)


def balanced(group: list[Member], partitions: int) -> bool:
    """Every member owns ⌊n/m⌋ or ⌈n/m⌉ partitions, none twice, all of them."""
    owned = [m.assignment() for m in group]
    counts = sorted(len(o) for o in owned)
    union = set().union(*owned)
    low = partitions // len(group)
    return (
        union == set(range(partitions))
        and sum(counts) == partitions
        and all(low <= c <= low + (partitions % len(group) > 0) for c in counts)
    )


def wait_balanced(group: list[Member], partitions: int, timeout: float) -> None:
    wait_until(
        lambda: balanced(group, partitions),
        timeout,
        lambda: (
            f"{partitions} partitions balanced over {len(group)} members\n"
            + describe(group)
            + "\n"
            + tails(group)
        ),
    )


def processed_union(group: Iterable[Member]) -> set[tuple[int, int]]:
    return {rec for m in group for rec in m.processed()}


def wait_processed(group: list[Member], expected: set[tuple[int, int]], timeout: float) -> None:
    wait_until(
        lambda: expected <= processed_union(group),
        timeout,
        lambda: (
            f"{len(expected - processed_union(group))} of {len(expected)} records "
            f"never processed, e.g. {sorted(expected - processed_union(group))[:5]}\n"
            + describe(group)
            + "\n"
            + tails(group)
        ),
    )


def check_delivery(group: list[Member], produced: set[tuple[int, int]]) -> int:
    """Every produced record processed; a record processed twice only if the earlier processing's
    commit was never confirmed before the later one began (what at-least-once allows).

    Returns how many redeliveries there were.
    """
    # (partition, offset) -> [(time, member, confirmed-commit time or None)]
    runs: dict[tuple[int, int], list[tuple[int, str, int | None]]] = defaultdict(list)
    for m in group:
        events = m.events()
        for i, e in enumerate(events):
            if e.ev != "rec":
                continue
            p, o = e.fields["p"], e.fields["o"]
            confirmed = next(
                (
                    c.t
                    for c in events[i + 1 :]
                    if c.ev == "commit" and c.fields["p"] == p and c.fields["o"] > o
                ),
                None,
            )
            runs[(p, o)].append((e.t, m.name, confirmed))
    got = set(runs)
    missing = produced - got
    assert not missing, f"{len(missing)} records never processed: {sorted(missing)[:10]}"
    unknown = got - produced
    assert not unknown, f"processed records that were never produced: {sorted(unknown)[:10]}"
    redelivered = 0
    for rec, seen in runs.items():
        seen.sort()
        for j, (t1, who1, _) in enumerate(seen):
            for _t0, who0, confirmed in seen[:j]:
                assert confirmed is None or confirmed > t1, (
                    f"record {rec} processed by {who0}, its commit confirmed, and processed "
                    f"again by {who1}: a duplicate at-least-once does not allow; runs: {seen}"
                )
        redelivered += len(seen) - 1
    return redelivered


def first_after(member: Member, partition: int, since: int) -> int | None:
    """The first offset of ``partition`` that ``member`` processed at or after ``since``."""
    for e in member.events():
        if e.ev == "rec" and e.t >= since and e.fields["p"] == partition:
            return int(e.fields["o"])
    return None


def last_commit(member: Member, partition: int) -> int | None:
    offsets = [
        e.fields["o"] for e in member.events() if e.ev == "commit" and e.fields["p"] == partition
    ]
    return max(offsets) if offsets else None


def group_size(bootstrap: str, group: str) -> int:
    """How many members DescribeGroups lists for ``group`` (through the AdminClient)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_consumer_groups([group], request_timeout=TIMEOUT).values()
    return len(future.result(timeout=TIMEOUT).members)


def run_group_scenario(
    start: Callable[..., Member],
    bootstrap: str,
    group: str,
    *,
    client: str,
    strategy: str,
    partitions: int,
    per_partition: int,
) -> None:
    """Three members share a topic; one leaves cleanly, one is killed -9, the last one finishes.

    1. a, b, c join; the partitions are balanced; records produced are each processed once, by
       the owner of their partition.
    2. c leaves (SIGTERM → close → LeaveGroup): DescribeGroups lists 2 members at once (not after
       the session timeout), a and b share the partitions; new records: still no duplicate.
    3. b is killed -9 while it processes: after the session timeout a owns everything and resumes
       each of b's partitions at the offset b committed last (b's record in flight may be redone,
       nothing is skipped).
    4. a leaves; the group's committed offsets are the end offsets.
    """
    topic = create_topic(bootstrap, partitions)
    common = dict(client=client, bootstrap=bootstrap, group=group, topic=topic, strategy=strategy)
    a, b, c = (start(name, delay_ms=10, **common) for name in ("a", "b", "c"))
    everyone = [a, b, c]
    # generous: a loaded machine can make a Python client miss its first session and rejoin
    wait_balanced(everyone, partitions, 60)

    produced = produce(bootstrap, topic, dict.fromkeys(range(partitions), per_partition))
    wait_processed(everyone, produced, 30)
    for m in everyone:
        seen = {p for p, _ in m.processed()}
        assert seen == m.assignment(), (
            f"{m.name} processed partitions {sorted(seen)} but owns {sorted(m.assignment())}"
        )
    assert check_delivery(everyone, produced) == 0
    assert group_size(bootstrap, group) == 3

    # 2. a clean leave: the member is gone at once and its partitions go to the others
    c.leave()
    wait_until(
        lambda: group_size(bootstrap, group) == 2,
        SESSION_MS / 2000,
        lambda: (
            f"DescribeGroups still lists {group_size(bootstrap, group)} members after c "
            f"left (LeaveGroup), expected 2 before the session timeout ({SESSION_MS} ms)"
        ),
    )
    wait_balanced([a, b], partitions, SESSION_MS / 1000)
    more = produce(bootstrap, topic, dict.fromkeys(range(partitions), per_partition))
    produced |= more
    wait_processed([a, b], more, 30)
    assert check_delivery(everyone, produced) == 0

    # 3. kill -9 in the middle of processing
    b_parts = b.assignment()
    batch_at = time.monotonic_ns()
    produced |= produce(bootstrap, topic, dict.fromkeys(range(partitions), 3 * per_partition))
    wait_until(
        lambda: len(b.processed(since=batch_at)) >= 3,
        30,
        lambda: f"b processed {len(b.processed(since=batch_at))} new records\n{b.tail()}",
    )
    b.kill()
    killed_at = time.monotonic_ns()
    committed_at_kill = {
        p: max(
            (
                e.fields["o"]
                for m in everyone
                for e in m.events()
                if e.ev == "commit" and e.fields["p"] == p and e.t < killed_at
            ),
            default=0,
        )
        for p in b_parts
    }
    wait_until(
        lambda: a.assignment() == set(range(partitions)),
        SESSION_MS / 1000 + 20,
        lambda: (
            f"a owns {sorted(a.assignment())} after b was killed, expected all "
            f"{partitions} partitions once b's session ({SESSION_MS} ms) expired\n{a.tail()}"
        ),
    )
    wait_processed(everyone, produced, 30)
    ends = ends_of(produced)
    for p in sorted(b_parts):
        first = first_after(a, p, killed_at)
        c0 = committed_at_kill[p]
        allowed: set[int | None] = {c0} if c0 < ends[p] else {None}
        if (p, c0) in b.processed():
            allowed.add(c0 + 1 if c0 + 1 < ends[p] else None)  # b's last commit may have landed
        assert first in allowed, (
            f"partition {p}: b had committed up to {c0} when it was killed; a resumed at "
            f"{first}, expected one of {sorted(allowed, key=str)}\n{a.tail()}\n{b.tail()}"
        )
    check_delivery(everyone, produced)

    # 4. the last member leaves; everything is committed
    a.leave()
    assert committed_offsets(bootstrap, group, topic, partitions) == ends, (
        f"committed offsets {committed_offsets(bootstrap, group, topic, partitions)}, "
        f"expected the end offsets {ends}"
    )
