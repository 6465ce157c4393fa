"""Consumer groups: joining, reassignment after kill -9, OffsetCommit throughput; beside tansu.

    python bench/groups.py [--quick] [--only sluice|tansu] [--data-root DIR] [--json PATH]

Figures, each the median of ``runs`` runs (3, or 1 with ``--quick``), for Sluice and for tansu
in the same run, the brokers side by side taking turns (``broker_throughput._Turns``):

* **join**: three confluent-kafka consumers, each in its own process, subscribe to a 6-partition
  topic holding records in every partition. Timed from the first member's ``Consumer()`` +
  ``subscribe()`` until every member holds an assignment, the assignments cover all 6
  partitions, and every member has received a record from each of its partitions. Sluice is
  measured twice: with its default ``group.initial.rebalance.delay.ms`` (3000, as Kafka's) and
  with 0 (a ``server.properties`` passed with ``--config``). tansu has no such setting.
* **reassign** (not on the delay-0 Sluice: same code): 0.5 s after one member received its
  assignment, before its first heartbeat, it is killed with SIGKILL (no LeaveGroup); timed from
  the kill until the two survivors again hold all 6 partitions and have received a record from
  each. Members use ``session.timeout.ms=6000`` (the least a broker allows by default) and
  ``heartbeat.interval.ms=1000``: the broker can only declare the death when the session, begun
  at the victim's SyncGroup, runs out (printed beside it), and the survivors only learn of the
  rebalance on their next heartbeat.
* **OffsetCommit** rate of one client: confluent-kafka ``commit(offsets=[...],
  asynchronous=False)`` in a loop; the same with ``asynchronous=True`` and completions counted
  in ``on_commit`` (at most 64 outstanding); and "pipelined": one OffsetCommit v8 request built
  once with kio and sent over one socket with 64 in flight, its offset and correlation id
  patched per request, so that the client is not the limit.

Members do not commit (``enable.auto.commit=false``), so after every rebalance each partition is
read from the start again and records are there at once: the figures are the group's, not a
producer's pace. Every loop is bounded by a count and a deadline; every member process is
stopped (SIGKILL by PID if it does not stop itself) whatever happens, and brokers by PID.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import math
import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from _harness import BROKERS, Broker, create_topic, in_child, median, running_broker
from _offset_commits import (
    IN_FLIGHT,
    PARTITIONS,
    CommitLoad,
    commit_async_run,
    commit_raw_run,
    commit_sync_run,
)
from broker_throughput import Figure, _machine, _Turns
from confluent_kafka import KafkaException
from rich.console import Console
from rich.table import Table

_SPAWN = mp.get_context("spawn")

MEMBERS = 3
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_INTERVAL_MS = 1000  # a sixth of the session (librdkafka's default 3000 blurs the figure)
RECORDS_PER_PARTITION = 200

# The brokers measured: label -> (broker name for the harness, server.properties or None).
SLUICE_DELAY_0 = "sluice, delay 0"
SETUPS: dict[str, tuple[str, dict[str, str] | None]] = {
    "sluice": ("sluice", None),
    SLUICE_DELAY_0: ("sluice", {"group.initial.rebalance.delay.ms": "0"}),
    "tansu": ("tansu", None),
}

JOIN = "join → all 6 partitions consumed, 3 members"
REBALANCES = "  assignments per member until then"
REASSIGN = "kill -9 of 1 → all 6 consumed by the 2 left"
SESSION_LEFT = "  the dead member's session left at the kill"
COMMIT_SYNC = "OffsetCommit: commit(), synchronous"
COMMIT_ASYNC = f"OffsetCommit: commit(), async, ≤{IN_FLIGHT} out"
COMMIT_RAW = f"OffsetCommit v8 pipelined, {IN_FLIGHT} in flight"


@dataclass(frozen=True)
class Plan:
    """How much each figure runs: full (~3 min for both brokers) or ``--quick`` (~1 min)."""

    runs: int
    commit_seconds: float
    commits: int = 1_000_000
    phase_timeout: float = 45.0  # bound of each group phase (join, reassign)


FULL = Plan(3, 2.0)
QUICK = Plan(1, 1.5)


# --- the group: three member processes and the orchestrator watching them -----------------------


@dataclass(frozen=True)
class GroupLoad:
    """One group run: ``members`` consumers of ``topic`` (``partitions`` partitions, pre-filled)
    in ``group``; with ``kill``, one of them is then killed and the reassignment timed."""

    bootstrap: str
    topic: str
    group: str
    kill: bool
    phase_timeout: float
    partitions: int = PARTITIONS
    members: int = MEMBERS
    session_timeout_ms: int = SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = HEARTBEAT_INTERVAL_MS
    settle: float = 0.5  # seconds from the victim's assignment to the kill (< the heartbeat)


@dataclass(frozen=True)
class GroupRun:
    """Seconds from the first ``subscribe()`` to all partitions consumed, how many assignments
    each member received until then (the most of any member), seconds from the kill to all
    partitions consumed again, and how much of the dead member's session was left at the kill,
    counted from its SyncGroup (NaN without a kill)."""

    join_seconds: float
    assignments: int
    reassign_seconds: float = math.nan
    session_left: float = math.nan  # seconds from the kill until the dead member's session ends


def _prefill(load: GroupLoad) -> int:
    """``RECORDS_PER_PARTITION`` records of 100 B into each partition, every one acknowledged."""
    from confluent_kafka import Producer

    failed: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    producer = Producer(
        {"bootstrap.servers": load.bootstrap, "linger.ms": 5, "log_level": 0},
    )
    value = b"x" * 100
    for partition in range(load.partitions):
        for _ in range(RECORDS_PER_PARTITION):
            producer.produce(load.topic, value, partition=partition, on_delivery=on_delivery)
        producer.poll(0)
    left = producer.flush(30)
    if left or failed:
        raise RuntimeError(f"pre-fill: {left} unacknowledged, {len(failed)} failed: {failed[:3]}")
    return load.partitions * RECORDS_PER_PARTITION


def _member(load: GroupLoad, index: int, conn: Connection) -> None:
    """One group member: waits for "go", subscribes, and reports to ``conn`` (its own pipe, so a
    member killed mid-send corrupts no other member's reports) as ``(event, value, monotonic)``:
    ``assign`` (its partitions), ``revoke``, ``record`` (the first from a partition since the
    assignment), ``error``. Stops on "stop" or after twice the phase timeout."""
    from confluent_kafka import Consumer

    def report(event: str, value: Any = None) -> None:
        conn.send((event, value, time.monotonic()))

    report("ready", os.getpid())
    if not conn.poll(60) or conn.recv() != "go":
        return
    assigned: set[int] = set()
    seen: set[int] = set()

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        assigned.clear()
        seen.clear()
        assigned.update(p.partition for p in partitions)
        report("assign", sorted(assigned))

    def on_revoke(_consumer: Any, _partitions: list[Any]) -> None:
        assigned.clear()
        seen.clear()
        report("revoke")

    report("start")
    consumer = Consumer(
        {
            "bootstrap.servers": load.bootstrap,
            "group.id": load.group,
            "client.id": f"member-{index}",
            "session.timeout.ms": load.session_timeout_ms,
            "heartbeat.interval.ms": load.heartbeat_interval_ms,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    consumer.subscribe([load.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    deadline = time.monotonic() + 2 * load.phase_timeout + 10
    try:
        while time.monotonic() < deadline and not conn.poll():
            # poll() returns as soon as one record is there; consume(timeout=0) takes the rest.
            first = consumer.poll(0.05)
            if first is None:
                continue
            now = time.monotonic()
            for msg in [first, *consumer.consume(num_messages=1000, timeout=0)]:
                if msg.error() is not None:
                    conn.send(("error", str(msg.error()), now))
                    continue
                partition = msg.partition()
                if partition in assigned and partition not in seen:
                    seen.add(partition)
                    conn.send(("record", partition, now))
    finally:
        consumer.close()


@dataclass
class _Group:
    """What the orchestrator knows of each member, from its reports."""

    partitions: int
    assigned: dict[int, frozenset[int]] = field(default_factory=dict)
    assigned_at: dict[int, float] = field(default_factory=dict)
    seen: dict[int, set[int]] = field(default_factory=dict)
    assignments: dict[int, int] = field(default_factory=dict)
    starts: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def apply(self, index: int, event: str, value: Any, when: float) -> None:
        if event == "assign":
            self.assigned[index] = frozenset(value)
            self.assigned_at[index] = when
            self.seen[index] = set()
            self.assignments[index] = self.assignments.get(index, 0) + 1
        elif event == "revoke":
            self.assigned.pop(index, None)
            self.seen.pop(index, None)
        elif event == "record" and index in self.seen:
            self.seen[index].add(value)
        elif event == "start":
            self.starts.append(when)
        elif event == "error":
            self.errors.append(f"member {index}: {value}")

    def consuming(self, live: set[int]) -> bool:
        """Every live member assigned, the assignments disjoint and covering every partition,
        and every member has received a record from each of its partitions."""
        if any(i not in self.assigned for i in live):
            return False
        parts = [p for i in live for p in self.assigned[i]]
        if len(parts) != len(set(parts)) or set(parts) != set(range(self.partitions)):
            return False
        return all(self.assigned[i] <= self.seen[i] for i in live)


def _watch(conns: dict[int, Connection], group: _Group, live: set[int], timeout: float) -> float:
    """Apply the members' reports until ``live`` members consume every partition; return the
    time of the report that completed it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = wait(list(conns.values()), timeout=max(0.0, deadline - time.monotonic()))
        for conn in ready:
            index = next(i for i, c in conns.items() if c is conn)
            try:
                event, value, when = conn.recv()
            except (EOFError, OSError):
                del conns[index]  # a member gone (killed, or failed: its error is reported)
                continue
            group.apply(index, event, value, when)
            if group.consuming(live):
                return float(when)
        if not conns:
            break
    state = {i: sorted(p) for i, p in group.assigned.items() if i in live}
    seen = {i: sorted(p) for i, p in group.seen.items() if i in live}
    errors = f"; errors: {group.errors[:3]}" if group.errors else ""
    raise TimeoutError(
        f"members {sorted(live)} did not consume all {group.partitions} partitions within "
        f"{timeout:.0f}s (assigned {state}, received from {seen}){errors}"
    )


def _drain(conns: dict[int, Connection], group: _Group, seconds: float) -> None:
    """Keep applying reports for ``seconds``."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0 and conns:
        for conn in wait(list(conns.values()), timeout=left):
            index = next(i for i, c in conns.items() if c is conn)
            try:
                group.apply(index, *conn.recv())
            except (EOFError, OSError):
                del conns[index]


def group_run(load: GroupLoad) -> GroupRun:
    """One group run on a fresh topic and group (see the module's docstring)."""
    try:
        create_topic(load.bootstrap, load.topic, load.partitions)
    except KafkaException as exc:
        raise RuntimeError(f"creating {load.topic}: {exc}") from None
    in_child(_prefill, load)
    pipes = [_SPAWN.Pipe() for _ in range(load.members)]
    procs = [
        _SPAWN.Process(target=_member, args=(load, i, child), daemon=True)
        for i, (_parent, child) in enumerate(pipes)
    ]
    conns = {i: parent for i, (parent, _child) in enumerate(pipes)}
    for proc in procs:
        proc.start()
    for _parent, child in pipes:
        child.close()
    try:
        for i, conn in conns.items():  # imports done, before anything is timed
            if not conn.poll(60) or conn.recv()[0] != "ready":
                raise TimeoutError(f"member {i} never became ready")
        for conn in conns.values():
            conn.send("go")
        group = _Group(load.partitions)
        everyone = set(range(load.members))
        joined = _watch(conns, group, everyone, load.phase_timeout)
        result = GroupRun(joined - min(group.starts), max(group.assignments.values()))
        if not load.kill:
            return result
        # The victim is killed ``settle`` after it received its assignment (the SyncGroup
        # response): before its first heartbeat, so its session is known to have begun then.
        victim = 0
        _drain(conns, group, group.assigned_at[victim] + load.settle - time.monotonic())
        conns.pop(victim)
        killed = time.monotonic()
        os.kill(procs[victim].pid or 0, signal.SIGKILL)
        session_end = group.assigned_at[victim] + load.session_timeout_ms / 1000
        if killed - group.assigned_at[victim] >= load.heartbeat_interval_ms / 1000:
            session_end = math.nan  # it may have sent a heartbeat since: not known
        again = _watch(conns, group, everyone - {victim}, load.phase_timeout)
        return GroupRun(
            result.join_seconds, result.assignments, again - killed, session_end - killed
        )
    finally:
        for conn in conns.values():
            with contextlib.suppress(OSError):
                conn.send("stop")
        end = time.monotonic() + 10
        for proc in procs:
            proc.join(max(0.1, end - time.monotonic()))
            if proc.is_alive() and proc.pid is not None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.join()
        for conn in conns.values():
            conn.close()


# --- OffsetCommit throughput ---------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """A median in seconds with its range, or the error that stopped it."""

    seconds: float = math.nan
    low: float = math.nan
    high: float = math.nan
    runs: int = 0
    error: str = ""

    def cell(self) -> str:
        if self.error:
            reason = self.error.split(" failed: ", 1)[-1]
            return f"[red]error[/]: {reason[:90]}"
        if math.isnan(self.seconds):
            return "—"
        if self.runs == 1:
            return f"{self.seconds:.2f} s"
        return f"{self.seconds:.2f} s ({self.low:.2f} to {self.high:.2f})"


def _timing(values: list[float]) -> Timing:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return Timing()
    return Timing(median(values), min(values), max(values), len(values))


def measure_all(
    labels: list[str], plan: Plan, data_root: str | None = None
) -> dict[str, dict[str, Any]]:
    """Every figure for every broker set-up named, by set-up label and row label."""
    console = Console(stderr=True)
    counter = itertools.count()
    figures: dict[str, dict[str, Any]] = {label: {} for label in labels}
    with contextlib.ExitStack() as stack:
        brokers: dict[str, Broker] = {}
        for label in labels:
            name, config = SETUPS[label]
            try:
                brokers[label] = stack.enter_context(running_broker(name, data_root, config))
                create_topic(brokers[label].bootstrap, "commits", PARTITIONS)
                # One commit first, so that no figure includes creating __consumer_offsets.
                warm = CommitLoad(brokers[label].bootstrap, "commits", "bench-warm-up", 0, 0, 0)
                in_child(commit_sync_run, warm)
            except (RuntimeError, TimeoutError, KafkaException) as exc:
                console.print(f"[red]{label} could not be measured: {exc}[/]")
                figures[label]["error"] = str(exc).splitlines()[0]
                brokers.pop(label, None)
        turns = _Turns(brokers, plan.runs)

        def group_load(broker: Broker) -> GroupLoad:
            n = next(counter)
            # The reassignment is the same code whatever the initial delay: timed on one Sluice.
            kill = broker.bootstrap != brokers.get(SLUICE_DELAY_0, Broker("", "", 0)).bootstrap
            return GroupLoad(
                broker.bootstrap, f"group-{n}", f"bench-group-{n}", kill, plan.phase_timeout
            )

        runs = turns.measure("groups", group_run, group_load, isolated=False)
        for label, results in runs.items():
            failed = turns.figures[label].get("groups")
            if failed is not None:
                error = Timing(error=failed.error)
                figures[label].update({JOIN: error, REASSIGN: error})
                continue
            figures[label][JOIN] = _timing([r.join_seconds for r in results])
            figures[label][REBALANCES] = [r.assignments for r in results]
            figures[label][REASSIGN] = _timing([r.reassign_seconds for r in results])
            figures[label][SESSION_LEFT] = _timing([r.session_left for r in results])

        committers = {k: v for k, v in brokers.items() if k != SLUICE_DELAY_0}
        turns = _Turns(committers, plan.runs)
        for row, fn in (
            (COMMIT_SYNC, commit_sync_run),
            (COMMIT_ASYNC, commit_async_run),
            (COMMIT_RAW, commit_raw_run),
        ):
            results = turns.measure(
                row,
                fn,
                lambda b: CommitLoad(
                    b.bootstrap,
                    "commits",
                    f"bench-commit-{next(counter)}",
                    plan.commits,
                    plan.commit_seconds,
                    b.pid,
                ),
            )
            turns.record(row, results)
        for label, rows in turns.figures.items():
            figures[label].update(rows)
    return figures


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, Timing):
        return value.cell()
    if isinstance(value, Figure):
        if value.error:
            return value.cell()
        return f"{value.rps:,.0f}/s"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def _cores(value: Any) -> str:
    if isinstance(value, Figure) and not value.error and value.broker_cores:
        return f"{value.broker_cores:.2f} · {value.client_cores:.2f}"
    return ""


def _ratio(row: str, ours: Any, ref: Any) -> str:
    if row == SESSION_LEFT:
        return "—"
    if isinstance(ours, Timing) and isinstance(ref, Timing):
        if ours.error or ref.error or not ours.seconds or math.isnan(ours.seconds / ref.seconds):
            return "—"
        return f"{ours.seconds / ref.seconds:.2f}x the time"
    if isinstance(ours, Figure) and isinstance(ref, Figure):
        if ours.error or ref.error or not ref.rps:
            return "—"
        return f"{ours.rps / ref.rps:.2f}x"
    return "—"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run of each (~1 min)")
    parser.add_argument("--only", choices=BROKERS, help="measure one broker only")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--data-root",
        help="where Sluice's log lives (default: the system temporary directory, on disk)",
    )
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    console = Console(width=max(170, Console().width))
    machine = _machine()  # the load average before the bench adds its own
    machine += f", Sluice's log under {args.data_root or tempfile.gettempdir()}, tansu memory://"
    started = datetime.datetime.now(datetime.UTC)
    labels = [label for label, (name, _) in SETUPS.items() if args.only in (None, name)]
    figures = measure_all(labels, plan, args.data_root)

    table = Table(
        title=f"Consumer groups, {started:%Y-%m-%d %H:%M} UTC, median of {plan.runs} "
        "(range in brackets)",
        caption=machine,
    )
    table.add_column("figure")
    for label in labels:
        table.add_column(label, justify="right")
        if label != SLUICE_DELAY_0:
            table.add_column("cores b · c", justify="right")
    table.add_column("sluice / tansu", justify="right")
    rows = (JOIN, REBALANCES, REASSIGN, SESSION_LEFT, COMMIT_SYNC, COMMIT_ASYNC, COMMIT_RAW)
    for row in rows:
        cells = []
        for label in labels:
            cells.append(_cell(figures[label].get(row, figures[label].get("error"))))
            if label != SLUICE_DELAY_0:
                cells.append(_cores(figures[label].get(row)))
        ratio = _ratio(row, figures.get("sluice", {}).get(row), figures.get("tansu", {}).get(row))
        table.add_row(row, *cells, ratio)
    console.print(table)
    console.print(
        f"Members: session.timeout.ms={SESSION_TIMEOUT_MS}, "
        f"heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}, librdkafka's default assignor "
        "(range, eager). Sluice: group.initial.rebalance.delay.ms 3000 (its default, as Kafka's) "
        "and 0. The reassignment cannot take less than what was left of the dead member's "
        f"session at the kill ({SESSION_TIMEOUT_MS / 1000:g} s from its SyncGroup, which it got "
        "0.5 s before the kill and before its first heartbeat); the survivors hear of it at "
        f"their next heartbeat (≤ {HEARTBEAT_INTERVAL_MS / 1000:g} s later).\n"
        "cores b · c: CPU seconds per second of the broker (b) and of the committing client (c)."
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "machine": machine,
                    "plan": asdict(plan),
                    "brokers": {
                        label: {
                            row: asdict(v) if isinstance(v, Timing | Figure) else v
                            for row, v in rows_.items()
                        }
                        for label, rows_ in figures.items()
                    },
                },
                indent=2,
            )
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
