"""What ACL checks add to whole requests: one broker without an authorizer beside the same broker
with ``authorizer.class.name`` set and 10,000 ACLs (issue 22's target: ≤ 5 % at 100 B).

    python bench/acl_overhead.py [--quick] [--runs N] [--acls 10000] [--data-root DIR]
                                 [--json PATH]

In one run, two Sluice brokers side by side, each on a PLAINTEXT listener (the clients are
``User:ANONYMOUS``) with the same ``server.properties`` (``super.users=User:admin``) and the same
``<data_dir>/acls.json`` written before start (``broker/security/acl_store.py``'s format), except
that one also has ``authorizer.class.name`` set — **the reference** has none and never reads the
file. The ACLs: ``bench/acl_checks.py``'s mix (per-team PREFIXED topic and group patterns,
LITERAL service topics, a ``*``, some DENYs), and among them the client's own: WRITE, READ and
CREATE on the PREFIXED topic pattern ``acl-bench-``, READ on the PREFIXED group ``bench-`` and
DESCRIBE on the cluster. ``User:ANONYMOUS`` is not a super user, so every check runs the rules.
Before measuring, the bench checks that the authorizer holds every ACL (DescribeAcls) and that
it refuses a topic no ACL allows.

Figures, each the median of ``runs`` runs (6, or 2 with ``--quick``), the two brokers taking
turns run by run (A B, B A, A B, …: each goes first as often), each run a fresh child process:

* produce of 100 B records, acks=1, through one confluent-kafka producer
  (``_clients.produce_run``: ``broker_throughput.py``'s batching), bounded by 2,000,000 records
  and 2 s, timed until every record is acknowledged;
* consume of the same records from offset 0 (``_clients.consume_run``);
* pre-encoded produce (``_wire``: one Produce request of ~960 KB sent over and over, 5 in flight):
  the broker's ingest with the client taken out.

Beside each: the ratio to the reference and the broker's CPU µs per record (less disturbed by
other load than the rate). Then, in one child process holding a broker in-process (the path of
every frame, ``Server.handle``, without sockets) with the same ACLs: how many ``authorize()``
calls a Produce and a Fetch request make (expected: one per topic, whatever the partitions),
and µs per Produce request of one 100 B record — the worst case for a per-request cost — with
the authorizer and with ``broker.authorizer`` set to None, alternately. Brokers are stopped by PID
when done, whatever happened.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
import os
import platform
import random
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from _clients import Run, Workload, consume_run, produce_run
from _harness import Broker, create_topic, in_child, median, running_broker
from _wire import record_batch, wire_produce_run
from acl_checks import bindings
from rich.console import Console
from rich.table import Table

from sluice.broker.security.acl_store import FILE_NAME, FileAclStore
from sluice.broker.security.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    to_znode,
)

PRINCIPAL = "User:ANONYMOUS"
TOPIC_PREFIX = "acl-bench-"
GROUP_PREFIX = "bench-"  # _clients.consume_run's group is bench-consume
COMMON = {"super.users": "User:admin"}
AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
REFERENCE, CHECKED = "no authorizer (reference)", "authorizer"
TARGET_OVERHEAD = 0.05
VALUE_BYTES = 100


@dataclass(frozen=True)
class Plan:
    runs: int
    seconds: float
    records: int
    in_process_requests: int


FULL = Plan(6, 2.0, 2_000_000, 500)
QUICK = Plan(2, 1.5, 1_000_000, 300)
IN_PROCESS_TURNS = 40
"""Turns of ``in_process_requests`` Produce requests, with and without the authorizer in turn."""


# ---- the ACLs ---------------------------------------------------------------------------------


def own_acls() -> list[AclBinding]:
    """What the bench's clients need, as ``User:ANONYMOUS``: PREFIXED topic and group ACLs."""
    allow = AclPermissionType.ALLOW
    topics = ResourcePattern(ResourceType.TOPIC, TOPIC_PREFIX, PatternType.PREFIXED)
    groups = ResourcePattern(ResourceType.GROUP, GROUP_PREFIX, PatternType.PREFIXED)
    cluster = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)
    return [
        *(
            AclBinding(topics, AccessControlEntry(PRINCIPAL, "*", op, allow))
            for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.CREATE)
        ),
        AclBinding(groups, AccessControlEntry(PRINCIPAL, "*", AclOperation.READ, allow)),
        AclBinding(cluster, AccessControlEntry(PRINCIPAL, "*", AclOperation.DESCRIBE, allow)),
    ]


def all_acls(count: int) -> list[AclBinding]:
    """``count`` distinct ACLs: ``acl_checks.bindings``' mix and the bench's own."""
    own = own_acls()
    return list(dict.fromkeys([*bindings(count - len(own), random.Random(7)), *own]))


_TYPE_NAMES = {ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group",
               ResourceType.CLUSTER: "Cluster"}  # fmt: skip


def write_acls(data_dir: Path, acls: list[AclBinding]) -> None:
    """``acls`` as the broker's ``<data_dir>/acls.json`` (``FileAclStore``'s format), read back
    with ``FileAclStore`` to be sure the broker will read them all."""
    rows = []
    for binding in acls:
        pattern = binding.pattern
        (entry,) = json.loads(to_znode([binding.entry]))["acls"]
        rows.append(
            {
                "resourceType": _TYPE_NAMES[pattern.resource_type],
                "name": pattern.name,
                "patternType": pattern.pattern_type.name,
                **entry,
            }
        )
    (data_dir / FILE_NAME).write_text(json.dumps({"version": 1, "acls": rows}))
    if len(set(FileAclStore(data_dir).load())) != len(acls):
        raise RuntimeError(f"{data_dir / FILE_NAME} does not read back as {len(acls)} ACLs")


def check_enforced(bootstrap: str, count: int) -> None:
    """The authorizing broker holds ``count`` ACLs and refuses a topic none allows."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AclBindingFilter, AdminClient, NewTopic
    from confluent_kafka.admin import AclOperation as Op
    from confluent_kafka.admin import AclPermissionType as Permission
    from confluent_kafka.admin import ResourcePatternType as Pattern
    from confluent_kafka.admin import ResourceType as Type

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    everything = AclBindingFilter(Type.ANY, None, Pattern.ANY, None, None, Op.ANY, Permission.ANY)
    held = admin.describe_acls(everything, request_timeout=20).result(20)
    if len(held) != count:
        raise RuntimeError(f"the broker holds {len(held)} ACLs, not {count}")
    try:
        for future in admin.create_topics([NewTopic("not-allowed", 1, 1)]).values():
            future.result(20)
    except KafkaException as exc:
        if "authorization" not in str(exc).lower():
            raise
    else:
        raise RuntimeError("the broker let User:ANONYMOUS create a topic no ACL allows")


# ---- the brokers' throughput ------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """A median over runs (records/s, broker CPU µs per record), or the error that stopped it."""

    rps: float = 0.0
    broker_us: float = 0.0
    runs: list[int] | None = None
    error: str = ""


def _figure(runs: list[Run]) -> Figure:
    return Figure(
        median([r.records_per_second for r in runs]),
        median([r.broker_cpu / r.records * 1e6 for r in runs if r.records]),
        [round(r.records_per_second) for r in runs],
    )


FIGURES: dict[str, tuple[Callable[[Workload], Run], str, int]] = {
    "produce 100 B, acks=1 (confluent-kafka)": (produce_run, "acl-bench-produce", 1),
    "consume 100 B (confluent-kafka)": (consume_run, "acl-bench-produce", 1),
    "pre-encoded produce 100 B, acks=1": (wire_produce_run, "acl-bench-wire", 3),
}
"""Label: (the run, its topic, records per run as a multiple of the plan's)."""


def throughput(
    brokers: dict[str, Broker], plan: Plan, console: Console
) -> dict[str, dict[str, Figure]]:
    """``{label: {broker: Figure}}``, the brokers taking turns (A B, B A, …) run by run."""
    figures: dict[str, dict[str, Figure]] = {}
    names = list(brokers)
    for label, (fn, topic, scale) in FIGURES.items():
        console.log(label)
        runs: dict[str, list[Run]] = {name: [] for name in names}
        errors: dict[str, str] = {}
        for turn in range(plan.runs):
            for name in names if turn % 2 == 0 else names[::-1]:
                if name in errors:
                    continue
                broker = brokers[name]
                load = Workload(
                    broker.bootstrap,
                    topic,
                    VALUE_BYTES,
                    scale * plan.records,
                    plan.seconds,
                    broker_pid=broker.pid,
                )
                try:
                    runs[name].append(in_child(fn, load))
                except (RuntimeError, TimeoutError) as exc:
                    errors[name] = str(exc).splitlines()[0]
        figures[label] = {
            name: Figure(error=errors[name]) if name in errors else _figure(runs[name])
            for name in names
        }
    return figures


# ---- in-process: authorize() calls and µs per request ------------------------------------------


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def produce_frame(correlation: int, topics: dict[str, int], batch: bytes) -> bytes:
    """A Produce v3 request (acks=1, without its size prefix) carrying ``batch`` to partitions
    ``0 … n-1`` of each topic (``_wire``'s layout, several topics and partitions)."""
    body = struct.pack(">hhi", 0, 3, correlation) + _string("bench-acl")
    body += struct.pack(">hhi", -1, 1, 30_000) + struct.pack(">i", len(topics))
    for topic, partitions in topics.items():
        body += _string(topic) + struct.pack(">i", partitions)
        for index in range(partitions):
            body += struct.pack(">ii", index, len(batch)) + batch
    return body


def fetch_frame(correlation: int, topic: str, partitions: int) -> bytes:
    """A Fetch v4 request (without its size prefix) from offset 0 of ``partitions``."""
    from kio.schema.fetch.v4 import request as fetch

    from sluice.wire import encode_request

    request = fetch.FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=0,
        topics=(
            fetch.FetchTopic(
                topic=topic,
                partitions=tuple(
                    fetch.FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=65_536)
                    for p in range(partitions)
                ),
            ),
        ),
    )
    return encode_request(request, correlation_id=correlation, client_id="bench-acl")[4:]


@dataclass(frozen=True)
class InProcess:
    calls: dict[str, int]  # authorize() calls per request, by request
    best_us: dict[str, float]  # µs per 1-record Produce, by configuration (best turn)
    median_us: dict[str, float]  # the same, median turn
    added_us: float  # median over turn pairs of (with - without)
    check_us: float  # the Produce handler's check (access.denied) of its one topic, alone
    decision_us: float  # one authorize() of that check, called directly


def in_process(count: int, root: str, requests: int) -> InProcess:
    """In a broker built in this process (``tests/broker/inprocess.py``'s way) with ``count``
    ACLs loaded from its ``acls.json``: authorize() calls per request, and µs per Produce of one
    record with the authorizer and without (``broker.authorizer`` None), in short turns (the
    machine's other load comes and goes: the best turn of each is the figure to read)."""
    from sluice.broker.broker import Broker as SluiceBroker
    from sluice.broker.config import BrokerConfig
    from sluice.broker.protocol.context import Connection
    from sluice.broker.protocol.fetch_response import OutgoingFrame
    from sluice.broker.security.access import denied
    from sluice.broker.server import Server

    data = Path(root)
    acls = all_acls(count)
    write_acls(data, acls)
    config = BrokerConfig.from_properties({"log.dirs": str(data), **COMMON, **AUTHORIZER})
    broker = SluiceBroker(config)
    broker.open()
    authorizer = broker.authorizer
    if authorizer is None or len(authorizer) != len(acls):
        raise RuntimeError(f"the in-process broker holds {authorizer and len(authorizer)} ACLs")
    server, client = Server(broker), Connection("/127.0.0.1")
    one, three, other = f"{TOPIC_PREFIX}one", f"{TOPIC_PREFIX}three", f"{TOPIC_PREFIX}other"
    for name, partitions in ((one, 1), (three, 3), (other, 1)):
        broker.topics.create(name, partitions, {})
    batch = record_batch(b"x" * VALUE_BYTES, 1, int(time.time() * 1000))

    async def send(frame: bytes) -> bytes:
        answer: Any = await server.handle(bytearray(frame), client)
        if isinstance(answer, asyncio.Future):
            answer = await answer
        if isinstance(answer, OutgoingFrame):
            try:
                return answer.to_bytes()
            finally:
                answer.close()
        return bytes(answer)

    def produce_error(answer: bytes, topic: str) -> int:
        """The first partition's error (the size, then ``_wire._error_code``'s offsets)."""
        return int(struct.unpack_from(">h", answer, 4 + 4 + 4 + 2 + len(topic) + 4 + 4)[0])

    calls = 0
    decide = authorizer.authorize

    def counted(*args: Any) -> bool:
        nonlocal calls
        calls += 1
        return decide(*args)

    asks = {  # label: (request, the first topic of a Produce, None for a Fetch)
        "Produce, 1 topic, 1 partition": (produce_frame(1, {one: 1}, batch), one),
        "Produce, 1 topic, 3 partitions": (produce_frame(2, {three: 3}, batch), three),
        "Produce, 2 topics, 1 + 3 partitions": (
            produce_frame(3, {one: 1, three: 3}, batch),
            one,
        ),
        "Fetch, 1 topic, 3 partitions": (fetch_frame(4, three, 3), None),
    }

    async def count_calls() -> dict[str, int]:
        nonlocal calls
        found = {}
        authorizer.authorize = counted  # type: ignore[method-assign]
        try:
            for label, (request, first) in asks.items():
                calls = 0
                answer = await send(request)
                if first is not None and produce_error(answer, first):
                    raise RuntimeError(f"{label}: error {produce_error(answer, first)}")
                found[label] = calls
        finally:
            del authorizer.authorize
        return found

    frame = produce_frame(0, {one: 1}, batch)

    async def per_request(n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            await send(frame)
        return (time.perf_counter() - start) / n * 1e6

    runner = asyncio.Runner()
    try:
        found = runner.run(count_calls())
        if produce_error(runner.run(send(frame)), one):
            raise RuntimeError("the in-process broker refused the Produce")
        runner.run(per_request(requests))  # warm up: imports, the segment's first pages
        timings: dict[str, list[float]] = {REFERENCE: [], CHECKED: []}
        for turn in range(IN_PROCESS_TURNS):
            order = (CHECKED, REFERENCE) if turn % 2 else (REFERENCE, CHECKED)
            for name in order:
                broker.authorizer = None if name == REFERENCE else authorizer
                timings[name].append(runner.run(per_request(requests)))
        broker.authorizer = authorizer
        names = [one]

        def check() -> None:
            denied(authorizer, client, 0, ResourceType.TOPIC, names)

        def decision() -> None:
            decide(PRINCIPAL, "127.0.0.1", AclOperation.WRITE, ResourceType.TOPIC, one)

        alone = {fn: _best_us(fn) for fn in (check, decision)}
        runner.run(broker.close())
    finally:
        runner.close()
    pairs = zip(timings[CHECKED], timings[REFERENCE], strict=True)
    return InProcess(
        found,
        {name: min(values) for name, values in timings.items()},
        {name: median(values) for name, values in timings.items()},
        median([with_ - without for with_, without in pairs]),
        alone[check],
        alone[decision],
    )


def _best_us(fn: Callable[[], None], number: int = 50_000) -> float:
    """µs per call of ``fn``, best of 5."""
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, time.perf_counter() - start)
    return best / number * 1e6


# ---- report -----------------------------------------------------------------------------------


def report(figures: dict[str, dict[str, Figure]], inside: InProcess | None, acls: int) -> None:
    console = Console(width=max(140, Console().width))
    table = Table(title=f"Throughput without and with the authorizer ({acls:,} ACLs), median")
    for column in ("figure", REFERENCE, f"{CHECKED}, {acls:,} ACLs", "ratio", "broker µs/record"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for label, by_broker in figures.items():
        ref, ours = by_broker[REFERENCE], by_broker[CHECKED]
        cells = [
            f"[red]error[/]: {f.error[:60]}" if f.error else f"{f.rps:,.0f}/s\nruns {f.runs}"
            for f in (ref, ours)
        ]
        ok = not ref.error and not ours.error and ref.rps
        ratio = f"{ours.rps / ref.rps:.3f}x" if ok else "—"
        cpu = f"{ref.broker_us:.2f} → {ours.broker_us:.2f}" if ok else "—"
        table.add_row(label, *cells, ratio, cpu)
    console.print(table)
    for label in list(figures)[:2]:
        ref, ours = figures[label][REFERENCE], figures[label][CHECKED]
        if ref.error or ours.error or not ref.rps:
            continue
        overhead = 1 - ours.rps / ref.rps
        verdict = "met" if overhead <= TARGET_OVERHEAD else "missed"
        console.print(
            f"{label}: the ACL checks cost {overhead:+.1%} of the rate "
            f"(target ≤ {TARGET_OVERHEAD:.0%}): {verdict}"
        )
    if inside is None:
        return
    calls = Table(title="authorize() calls per request (in-process broker, same ACLs)")
    calls.add_column("request")
    calls.add_column("calls", justify="right")
    for label, count in inside.calls.items():
        calls.add_row(label, str(count))
    console.print(calls)
    ref, ours = inside.best_us[REFERENCE], inside.best_us[CHECKED]
    console.print(
        f"Produce of one 100 B record per request, in-process ({IN_PROCESS_TURNS} turns each): "
        f"best turn {ref:.1f} µs per request without an authorizer, {ours:.1f} µs with it "
        f"({ours - ref:+.1f} µs, {ours / ref - 1:+.1%}); median turn "
        f"{inside.median_us[REFERENCE]:.1f} and {inside.median_us[CHECKED]:.1f} µs; median of "
        f"the paired differences {inside.added_us:+.1f} µs.\n"
        f"Alone: the Produce handler's check of its topic (access.denied) "
        f"{inside.check_us:.2f} µs, of which one authorize() {inside.decision_us:.2f} µs."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 short runs per figure")
    parser.add_argument("--runs", type=int, help="runs per figure and broker (6; 2 with --quick)")
    parser.add_argument("--acls", type=int, default=10_000, help="ACLs bound (with the bench's)")
    parser.add_argument("--data-root", help="where the brokers' temporary directories go")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.runs:
        plan = dataclasses.replace(plan, runs=args.runs)
    console = Console(stderr=True)
    started = datetime.datetime.now(datetime.UTC)
    load_before = os.getloadavg()
    acls = all_acls(args.acls)

    def prepare(data_dir: Path) -> None:
        write_acls(data_dir, acls)

    with (
        running_broker("sluice", args.data_root, COMMON, prepare) as reference,
        running_broker("sluice", args.data_root, COMMON | AUTHORIZER, prepare) as checked,
    ):
        brokers = {REFERENCE: reference, CHECKED: checked}
        for broker in brokers.values():
            for topic in {topic for _, topic, _ in FIGURES.values()}:
                create_topic(broker.bootstrap, topic)
        check_enforced(checked.bootstrap, len(acls))
        figures = throughput(brokers, plan, console)
    console.log("in-process: authorize() calls and µs per request")
    inside: InProcess | None
    with tempfile.TemporaryDirectory(prefix="bench-acl-", dir=args.data_root) as tmp:
        try:
            inside = in_child(in_process, args.acls, tmp, plan.in_process_requests)
        except (RuntimeError, TimeoutError) as exc:
            console.print(f"[red]in-process check failed: {exc}[/]")
            inside = None
    load_after = os.getloadavg()
    report(figures, inside, len(acls))
    Console().print(
        f"{started:%Y-%m-%d %H:%M} UTC, {platform.node()}, {os.cpu_count()} CPUs, "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; "
        f"python {sys.version.split()[0]}; {plan.runs} runs per figure and broker"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "load": [load_before[0], load_after[0]],
                    "acls": len(acls),
                    "plan": asdict(plan),
                    "throughput": {
                        label: {name: asdict(f) for name, f in by.items()}
                        for label, by in figures.items()
                    },
                    "in_process": asdict(inside) if inside else None,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
