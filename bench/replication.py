"""Replication: a 3-broker cluster (RF 3, min.insync.replicas=2) beside a single node, one run.

    python bench/replication.py [--quick] [--only SECTION ...] [--session-timeout-ms 6000]
                                [--catchup-mb MB] [--data-root DIR] [--json PATH]
                                [--broker-key KEY=VALUE ...] [--warm-gib 8]

One ZooKeeper (``tests/cluster/zookeeper.py``) and three ``sluice broker start --broker-id N
--zookeeper ...`` processes (``tests/cluster/brokers.py``), every broker with
``min.insync.replicas=2``, ``default.replication.factor=3`` and ``zookeeper.session.timeout.ms``
of ``--session-timeout-ms``; beside them one Sluice broker without ZooKeeper, the reference.
Sections (``--only`` picks some), each figure the median of ``runs`` runs (3, 1 with ``--quick``):

* **throughput**: 100 B and 1 KB records through one confluent-kafka producer
  (``_clients.produce_run``) with acks=1 and acks=all, on the single node and on a 1-partition
  RF 3 topic of the cluster, the two taking turns run by run; then the same with one pre-encoded
  batch sent over and over (``_wire``), which takes the client out. The ratio the issue targets
  is cluster acks=all / single node acks=1 (≥ 0.5), printed beside Kafka's own (Kreps, 2014:
  421,823 vs 821,557 rec/s of 100 B, one producer, three machines: 0.51; acks=1 on RF 3 786,980).
  Beside each figure the CPU each broker process used per second of the run (leader first).
* **latency**: produce-to-consume p50/p99 at 20,000 records/s of 100 B (``broker_latency``,
  acks=all, linger.ms=1) on an RF 3 topic of the cluster, and on the single node.
* **aggregate**: three pre-encoded generators at once, 1 KB acks=all, each into its own
  1-partition topic: on the single node, and on the cluster with the three topics led by brokers
  1, 2 and 3 (RF 1, and RF 3). Does a cluster on one machine use more than one core? The CPU of
  each broker process answers.
* **catchup**: a follower of an RF 3 topic is stopped (SIGTERM: a controlled shutdown takes it
  out of the ISR), ``--catchup-mb`` MB are produced (pre-encoded, 1 KB, acks=all), the follower
  is started again; timed from its ready line until ZooKeeper's partition state lists it in
  the ISR again: MB/s.
* **failover**: a producer sends 1,000 records/s with acks=all; the partition's leader is killed
  with SIGKILL; timed until the first record sent after the kill is acknowledged (target: the
  session timeout + 2 s), with the moments its registration left ZooKeeper and a new leader was
  written there. Then every acknowledged record is looked for in the partition (none may be
  lost), and the killed broker is started again.

Every loop is bounded by a count and a deadline; every process (ZooKeeper, brokers, clients) is
stopped by PID when done, whatever happened. The cluster is ``_cluster.py``; the sections are
``_replication_load.py`` (throughput, latency, aggregate) and ``_replication_faults.py``
(catch-up, failover); this file runs them and prints the tables and the targets.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import broker_latency
from _cluster import ERRORS, running_cluster
from _harness import add_warm_option, running_broker, warmed
from _replication_faults import CatchUp, Failover, catch_up, failover
from _replication_load import (
    FULL,
    QUICK,
    RATE,
    SIZES,
    Aggregate,
    Plan,
    Rate,
    aggregate,
    latency,
    row_label,
    throughput,
)
from broker_throughput import _machine
from rich.console import Console
from rich.table import Table

SECTIONS = ("throughput", "latency", "aggregate", "catchup", "failover")
KAFKA = {"1": 786_980 / 821_557, "all": 421_823 / 821_557}
"""Kafka's RF 3 produce over one node's (acks=1), 100 B, one producer (Kreps, 2014)."""
TARGET_RATIO = 0.5
TARGET_P99_MS = 10.0
FAILOVER_MARGIN_S = 2.0


# --- the report -----------------------------------------------------------------------------


@dataclass
class Results:
    """Every section's figures (a string where a section failed as a whole)."""

    throughput: dict[str, dict[str, Rate]] = field(default_factory=dict)
    latency: dict[str, broker_latency.Latency | str] = field(default_factory=dict)
    aggregate: dict[str, Aggregate] = field(default_factory=dict)
    catchup: list[CatchUp] | str = field(default_factory=list)
    failover: list[Failover] | str = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def measure(
    sections: list[str],
    plan: Plan,
    session_timeout_ms: int,
    data_root: str | None,
    broker_keys: dict[str, str] | None = None,
) -> Results:
    """Start ZooKeeper, the cluster (with ``broker_keys`` added to each broker's
    ``server.properties``) and the single node; run ``sections``; stop everything."""
    console = Console(stderr=True)
    results = Results()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory("-replication", dir=data_root)))
        console.log("starting ZooKeeper and three brokers")
        cluster = stack.enter_context(running_cluster(tmp, session_timeout_ms, broker_keys))
        single = None
        if {"throughput", "latency", "aggregate"} & set(sections):
            keys = {"log.retention.check.interval.ms": "86400000"}
            single = stack.enter_context(running_broker("sluice", data_root, keys))
        for section in sections:
            try:
                if section == "throughput" and single:
                    results.throughput = throughput(cluster, single, plan, console)
                elif section == "latency" and single:
                    results.latency = latency(cluster, single, plan, console)
                elif section == "aggregate" and single:
                    results.aggregate = aggregate(cluster, single, plan, console)
                elif section == "catchup":
                    results.catchup = catch_up(cluster, plan, console)
                elif section == "failover":
                    results.failover = failover(cluster, plan, session_timeout_ms / 1000, console)
            except ERRORS as exc:
                results.errors[section] = str(exc).splitlines()[0]
    return results


def _ratio(ours: Rate | None, ref: Rate | None) -> float | None:
    if ours is None or ref is None or ours.error or ref.error or not ref.rps:
        return None
    return ours.rps / ref.rps


def _print_throughput(console: Console, results: Results, title: str) -> None:
    table = Table(title=f"Produce, one producer, median of {title}")
    for column in (
        "figure",
        "single node",
        "cores",
        "cluster RF 3",
        "cores L · F · F",
        "min ISR",
        "cluster / single",
        "cluster / single acks=1",
        "Kafka (100 B)",
    ):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for label, sides in results.throughput.items():
        single, cluster = sides.get("single"), sides.get("cluster")
        base = results.throughput.get(label.replace("acks=all", "acks=1"), {}).get("single")
        same, vs_one = _ratio(cluster, single), _ratio(cluster, base)
        acks = label.rsplit("=", 1)[1]
        table.add_row(
            label,
            single.cell() if single else "—",
            single.cores_cell() if single else "",
            cluster.cell() if cluster else "—",
            cluster.cores_cell() if cluster else "",
            str(cluster.min_isr) if cluster and not cluster.error else "",
            f"{same:.2f}x" if same is not None else "—",
            f"{vs_one:.2f}x" if vs_one is not None else "—",
            f"{KAFKA[acks]:.2f}x" if label.startswith("produce") else "",
        )
    console.print(table)


def _print_others(console: Console, results: Results, session_s: float) -> None:
    if results.latency:
        table = Table(title=f"Produce-to-consume latency at {RATE:,} rec/s, 100 B, acks=all")
        for column in ("where", "p50", "p99", "max", "achieved rate"):
            table.add_column(column, justify="left" if column == "where" else "right")
        for side, lat in results.latency.items():
            if isinstance(lat, str):
                table.add_row(side, f"[red]error[/]: {lat[:70]}")
            else:
                table.add_row(
                    "single node" if side == "single" else "cluster RF 3",
                    f"{lat.p50_ms:.2f} ms",
                    f"{lat.p99_ms:.2f} ms",
                    f"{lat.max_ms:.2f} ms",
                    f"{lat.achieved_rate:,.0f}/s",
                )
        console.print(table)
    if results.aggregate:
        table = Table(title="Aggregate: three pre-encoded generators at once, 1 KB, acks=all")
        for column in ("where", "records/s", "MB/s", "cores of each broker", "all brokers", "gens"):
            table.add_column(column, justify="left" if column == "where" else "right")
        for row, agg in results.aggregate.items():
            if agg.error:
                table.add_row(row, f"[red]error[/]: {agg.error[:70]}")
                continue
            table.add_row(
                row,
                f"{agg.rps:,.0f}",
                f"{agg.mbps:,.1f}",
                " · ".join(f"{c:.2f}" for c in agg.broker_cores),
                f"{sum(agg.broker_cores):.2f}",
                f"{agg.client_cores:.2f}",
            )
        console.print(table)
    if isinstance(results.catchup, str):
        console.print(f"[red]catch-up failed[/]: {results.catchup}")
    elif results.catchup:
        table = Table(title="Follower catch-up (1 KB records, written while it was stopped)")
        for column in ("MB behind", "start → ISR", "ready → ISR", "MB/s", "cores F · L"):
            table.add_column(column, justify="right")
        for c in results.catchup:
            table.add_row(
                f"{c.mb:,.0f}",
                f"{c.start_to_isr:.2f} s",
                f"{c.ready_to_isr:.2f} s",
                f"{c.mb_per_second:,.1f}",
                f"{c.follower_cores:.2f} · {c.leader_cores:.2f}",
            )
        console.print(table)
    if isinstance(results.failover, str):
        console.print(f"[red]failover failed[/]: {results.failover}")
    elif results.failover:
        table = Table(title=f"Failover: kill -9 of a leader, session timeout {session_s:g} s")
        for column in (
            "killed",
            "→ registration gone",
            "→ new leader",
            "→ first ack",
            "acked",
            "lost",
        ):
            table.add_column(column, justify="right")
        for f in results.failover:
            table.add_row(
                f"broker {f.killed}" + (" (controller)" if f.was_controller else ""),
                f"{f.registration_gone:.2f} s",
                f"{f.new_leader:.2f} s",
                f"{f.first_ack:.2f} s",
                f"{f.acked:,}",
                str(f.lost),
            )
        console.print(table)


Target = tuple[str, str, bool | None]


def targets(results: Results, session_s: float) -> list[Target]:
    """The issue's targets, judged on this run."""
    out: list[Target] = []
    for size in SIZES:
        ours = results.throughput.get(row_label("produce", size, "all"), {}).get("cluster")
        ref = results.throughput.get(row_label("produce", size, "1"), {}).get("single")
        ratio = _ratio(ours, ref)
        out.append(
            (
                f"{'100 B' if size == 100 else '1 KB'} acks=all RF 3 ≥ {TARGET_RATIO:.0%} of "
                f"single-node acks=1 (Kafka: {KAFKA['all']:.2f})",
                f"{ratio:.2f}" if ratio is not None else "n/a",
                ratio >= TARGET_RATIO if ratio is not None else None,
            )
        )
    lat = results.latency.get("cluster")
    p99 = lat.p99_ms if isinstance(lat, broker_latency.Latency) else None
    out.append(
        (
            f"p99 ≤ {TARGET_P99_MS:g} ms at {RATE:,} rec/s on the cluster",
            f"{p99:.2f} ms" if p99 is not None else "n/a",
            p99 <= TARGET_P99_MS if p99 is not None else None,
        )
    )
    runs = results.failover if isinstance(results.failover, list) else []
    worst = max((f.first_ack for f in runs), default=None)
    out.append(
        (
            f"failover ≤ session timeout + {FAILOVER_MARGIN_S:g} s "
            f"({session_s + FAILOVER_MARGIN_S:g} s; the worst run)",
            f"{worst:.2f} s" if worst is not None else "n/a",
            worst <= session_s + FAILOVER_MARGIN_S if worst is not None else None,
        )
    )
    lost = sum(f.lost for f in runs)
    out.append(
        (
            "no acknowledged record lost in the failovers",
            f"{lost} of {sum(f.acked for f in runs):,}" if runs else "n/a",
            lost == 0 if runs else None,
        )
    )
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short run of each (~3 min)")
    parser.add_argument(
        "--only", action="append", choices=SECTIONS, help="run this section (repeatable)"
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=6000,
        help="the brokers' zookeeper.session.timeout.ms (0.4 to 20 s here; Kafka's default 18000)",
    )
    parser.add_argument(
        "--catchup-mb", type=int, help="MB a stopped follower falls behind (200; 30 with --quick)"
    )
    add_warm_option(parser)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--data-root",
        help="where the brokers' logs and ZooKeeper's data live (default: the system "
        "temporary directory, on disk)",
    )
    parser.add_argument(
        "--broker-key",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a server.properties key of every cluster broker (repeatable), e.g. "
        "max.incremental.fetch.session.cache.slots=0 to measure without fetch sessions",
    )
    args = parser.parse_args()
    broker_keys = dict(kv.split("=", 1) for kv in args.broker_key)
    plan = QUICK if args.quick else FULL
    if args.catchup_mb:
        plan = Plan(plan.runs, plan.seconds, plan.records, plan.latency_seconds, args.catchup_mb)
    sections = [s for s in SECTIONS if not args.only or s in args.only]
    session_s = args.session_timeout_ms / 1000
    console = Console(width=max(160, Console().width))
    machine = _machine()  # the load average before the bench adds its own
    machine += f", logs under {args.data_root or tempfile.gettempdir()}"
    machine += warmed(args.warm_gib)
    started = datetime.datetime.now(datetime.UTC)
    results = measure(sections, plan, args.session_timeout_ms, args.data_root, broker_keys)

    console.print(f"Replication, {started:%Y-%m-%d %H:%M} UTC; {machine}")
    console.print(
        "cluster: 3 brokers and ZooKeeper on this machine, min.insync.replicas=2, "
        f"zookeeper.session.timeout.ms={args.session_timeout_ms}"
        + "".join(f", {k}={v}" for k, v in broker_keys.items())
        + "; single node: no ZooKeeper"
    )
    if results.throughput:
        _print_throughput(console, results, f"{plan.runs}")
    _print_others(console, results, session_s)
    for section, error in results.errors.items():
        console.print(f"[red]{section} failed[/]: {error}")
    table = Table(title="Targets (issue 20)")
    for column in ("target", "measured", "result"):
        table.add_column(column)
    for text, value, ok in targets(results, session_s):
        verdict = "n/a" if ok is None else ("[green]PASS[/]" if ok else "[red]FAIL[/]")
        table.add_row(text, value, verdict)
    console.print(table)
    console.print(
        "cores: CPU seconds per second of each broker process while its run lasted (leader "
        "first, L · F · F). Kafka: Kreps 2014, one producer of 100 B records, three machines: "
        "821,557 rec/s on one node, 786,980 acks=1 and 421,823 acks=all on RF 3."
    )
    if args.json:
        payload = {"started": started.isoformat(), "machine": machine, "plan": asdict(plan)}
        payload.update(_plain(asdict(results)))
        args.json.write_text(json.dumps(payload, indent=2, default=str))
    sys.exit(0)


if __name__ == "__main__":
    main()
