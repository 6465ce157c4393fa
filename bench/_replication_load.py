"""The load sections of ``replication.py``: produce throughput and latency on the cluster beside
the single node, and three leaders at once."""

from __future__ import annotations

import importlib
import itertools
import math
import multiprocessing as mp
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import broker_latency
from _clients import Run, Workload, produce_run
from _cluster import (
    CLUSTER,
    ERRORS,
    BrokerCluster,
    create_assigned,
    partition_state,
    pids_leader_first,
    wait_in_sync,
)
from _harness import Broker, cpu_seconds, create_topic, delete_topic, in_child, median
from _wire import wire_produce_run
from rich.console import Console

SIZES = (100, 1000)
RATE = 20_000
_SPAWN = mp.get_context("spawn")


@dataclass(frozen=True)
class Plan:
    """How long each section runs: full (~10 min) or ``--quick`` (~3 min)."""

    runs: int
    seconds: float
    records: dict[int, int]
    latency_seconds: float
    catchup_mb: int


FULL = Plan(3, 3.0, {100: 5_000_000, 1000: 2_000_000}, 5.0, 200)
QUICK = Plan(1, 1.0, {100: 300_000, 1000: 100_000}, 3.0, 30)


@dataclass(frozen=True)
class Rate:
    """A median rate over runs, the CPU of each broker process per second of the run (leader
    first), the smallest ISR seen after a run; or the error that stopped the measurement."""

    rps: float = 0.0
    mbps: float = 0.0
    runs: int = 0
    cores: tuple[float, ...] = ()
    min_isr: int = 0
    error: str = ""

    def cell(self) -> str:
        if self.error:
            return f"[red]error[/]: {self.error[:70]}"
        return f"{self.rps:,.0f}/s · {self.mbps:,.1f} MB/s"

    def cores_cell(self) -> str:
        return " · ".join(f"{c:.2f}" for c in self.cores) if not self.error else ""


def _rate(results: list[tuple[Run, tuple[float, ...]]], min_isr: int = 0) -> Rate:
    if not results:
        return Rate(error="no run finished")
    runs = [run for run, _ in results]
    per_broker = zip(*[[c / run.seconds for c in cpu] for run, cpu in results], strict=True)
    return Rate(
        median([r.records_per_second for r in runs]),
        median([r.mb_per_second for r in runs]),
        len(runs),
        tuple(median(list(c)) for c in per_broker),
        min_isr,
    )


def _with_cpu(
    fn: Callable[[Workload], Run], load: Workload, pids: tuple[int, ...]
) -> tuple[Run, tuple[float, ...]]:
    """``fn(load)`` in this (child) process, and the CPU seconds each of ``pids`` used meanwhile
    (the producer's setup, ~0.1 s, included; the child's start and imports not)."""
    importlib.import_module("confluent_kafka")
    before = [cpu_seconds(pid) for pid in pids]
    run = fn(load)
    return run, tuple(cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True))


# --- throughput -----------------------------------------------------------------------------


def row_label(kind: str, size: int, acks: str) -> str:
    return f"{kind} {'100 B' if size == 100 else '1 KB'} acks={acks}"


def _where(
    cluster: BrokerCluster, single: Broker, side: str, topic: str, to_leader: bool
) -> tuple[str, tuple[int, ...]]:
    """Where a run on ``side`` sends (the cluster's bootstrap list, or its leader itself when
    ``to_leader``) and whose CPU it samples (the cluster's leader first)."""
    if side == "single":
        return single.bootstrap, (single.pid,)
    wait_in_sync(cluster, topic, timeout=30)
    leader = partition_state(cluster, topic)[0]
    bootstrap = cluster.broker(leader).bootstrap if to_leader else cluster.bootstrap
    return bootstrap, pids_leader_first(cluster, leader)


def throughput(
    cluster: BrokerCluster, single: Broker, plan: Plan, console: Console
) -> dict[str, dict[str, Rate]]:
    """Produce on the single node and on the cluster, taking turns; by row, then by side."""
    out: dict[str, dict[str, Rate]] = {}
    for kind, fn in (("produce", produce_run), ("pre-encoded", wire_produce_run)):
        for size, acks in itertools.product(SIZES, ("1", "all")):
            label = row_label(kind, size, acks)
            console.log(label)
            out[label] = _row(cluster, single, plan, fn, (f"{kind}-{size}-{acks}", size, acks))
    return out


def _row(
    cluster: BrokerCluster,
    single: Broker,
    plan: Plan,
    fn: Callable[[Workload], Run],
    row: tuple[str, int, str],
) -> dict[str, Rate]:
    """``plan.runs`` runs of ``fn`` on each side, taking turns; ``row``: topic, size, acks.

    Each run writes into a topic of its own, deleted after it: the page cache a run filled is
    freed for the next (see ``_harness.warm_memory``), and the bench's footprint stays one run's.
    """
    name, size, acks = row
    runs: dict[str, list[tuple[Run, tuple[float, ...]]]] = {"single": [], "cluster": []}
    rows: dict[str, Rate] = {}  # a side that failed
    min_isr = len(CLUSTER)
    to_leader = fn is wire_produce_run  # pre-encoded requests name no leader
    for i, side in itertools.product(range(plan.runs), ("single", "cluster")):
        if side in rows:
            continue
        topic = f"{name}-{i}"
        on = single.bootstrap if side == "single" else cluster.bootstrap
        try:
            if side == "single":
                create_topic(on, topic)
            else:
                create_assigned(cluster, topic, [[1, 2, 3]])
            try:
                to, pids = _where(cluster, single, side, topic, to_leader)
                load = Workload(to, topic, size, plan.records[size], plan.seconds, acks)
                runs[side].append(in_child(_with_cpu, fn, load, pids))
                if side == "cluster":
                    min_isr = min(min_isr, len(partition_state(cluster, topic)[1]))
            finally:
                delete_topic(on, topic)
        except ERRORS as exc:
            rows[side] = Rate(error=str(exc).splitlines()[0])
    rows.setdefault("single", _rate(runs["single"]))
    rows.setdefault("cluster", _rate(runs["cluster"], min_isr))
    return rows


# --- latency --------------------------------------------------------------------------------


def latency(
    cluster: BrokerCluster, single: Broker, plan: Plan, console: Console
) -> dict[str, broker_latency.Latency | str]:
    """p50/p99 at ``RATE`` records/s on an RF 3 topic of the cluster and on the single node."""
    console.log(f"latency at {RATE:,} rec/s")
    runs: dict[str, list[broker_latency.Latency]] = {"single": [], "cluster": []}
    out: dict[str, broker_latency.Latency | str] = {}
    for i in range(plan.runs):
        for side, bootstrap, rf in (
            ("single", single.bootstrap, 1),
            ("cluster", cluster.bootstrap, len(CLUSTER)),
        ):
            if side in out:
                continue
            load = broker_latency.LatencyLoad(
                bootstrap, f"latency-{i}", RATE, plan.latency_seconds, replication_factor=rf
            )
            try:
                lat = broker_latency.latency_run(load)
            except ERRORS as exc:
                out[side] = str(exc).splitlines()[0]
                continue
            if math.isnan(lat.p50_ms):  # the consumer's bound passed before any counted record
                out[side] = f"no record after the warm-up arrived within {load.seconds + 15:g} s"
            else:
                runs[side].append(lat)
    for side, done in runs.items():
        if side not in out:
            out[side] = broker_latency.summarize(done) if done else "no run finished"
    return out


# --- aggregate ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Aggregate:
    """Three generators at once: records/s and MB/s over the longest of their windows, the CPU
    per second of each broker process (by broker id) and of the generators together."""

    rps: float = 0.0
    mbps: float = 0.0
    broker_cores: tuple[float, ...] = ()
    client_cores: float = 0.0
    runs: int = 0
    error: str = ""


def _generator(load: Workload, go: Any, conn: Any) -> None:
    """A pre-encoded producer in a child process: ready, wait for ``go``, run, report."""
    try:
        conn.send("ready")
        if not go.wait(60):
            raise TimeoutError("never told to start")
        conn.send(("ok", wire_produce_run(load)))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _parallel(loads: list[Workload], brokers: tuple[int, ...], seconds: float) -> Aggregate:
    """Run one generator per load at once; CPU of ``brokers`` (pids) sampled around them."""
    go = _SPAWN.Event()
    procs, conns = [], []
    try:
        for load in loads:
            parent, child = _SPAWN.Pipe(duplex=False)
            proc = _SPAWN.Process(target=_generator, args=(load, go, child), daemon=True)
            proc.start()
            child.close()
            procs.append(proc)
            conns.append(parent)
        for conn in conns:
            if not conn.poll(60) or conn.recv() != "ready":
                raise TimeoutError("a generator did not get ready in 60 s")
        gens = tuple(p.pid or 0 for p in procs)
        before = [cpu_seconds(pid) for pid in (*brokers, *gens)]
        start = time.monotonic()
        go.set()
        runs: list[Run] = []
        for conn in conns:
            if not conn.poll(seconds + 60):
                raise TimeoutError(f"a generator did not finish in {seconds + 60:g} s")
            status, value = conn.recv()
            if status != "ok":
                raise RuntimeError(value)
            runs.append(value)
        wall = time.monotonic() - start
        used = [cpu_seconds(pid) - b for pid, b in zip((*brokers, *gens), before, strict=True)]
    finally:
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
                proc.join()
    window = max(r.seconds for r in runs)
    records = sum(r.records for r in runs)
    return Aggregate(
        records / window,
        records * loads[0].value_bytes / window / 1e6,
        tuple(c / wall for c in used[: len(brokers)]),
        sum(used[len(brokers) :]) / wall,
        1,
    )


def aggregate(
    cluster: BrokerCluster, single: Broker, plan: Plan, console: Console
) -> dict[str, Aggregate]:
    """Three 1 KB acks=all generators on the single node, and on the cluster with the three
    topics led by brokers 1, 2 and 3 (RF 1, RF 3); by row."""
    size, records = 1000, 3 * plan.records[1000]
    rows: dict[str, Callable[[], tuple[list[Workload], tuple[int, ...]]]] = {}
    for i in CLUSTER:
        create_topic(single.bootstrap, f"aggregate-{i}")
        create_assigned(cluster, f"aggregate-rf1-{i}", [[i]])
        create_assigned(cluster, f"aggregate-rf3-{i}", [[i, *(j for j in CLUSTER if j != i)]])

    def on_single() -> tuple[list[Workload], tuple[int, ...]]:
        loads = [
            Workload(single.bootstrap, f"aggregate-{i}", size, records, plan.seconds, "all")
            for i in CLUSTER
        ]
        return loads, (single.pid,)

    def on_cluster(rf: int) -> Callable[[], tuple[list[Workload], tuple[int, ...]]]:
        def loads() -> tuple[list[Workload], tuple[int, ...]]:
            out = []
            for i in CLUSTER:
                topic = f"aggregate-rf{rf}-{i}"
                wait_in_sync(cluster, topic, timeout=30)
                leader = partition_state(cluster, topic)[0]
                bootstrap = cluster.broker(leader).bootstrap
                out.append(Workload(bootstrap, topic, size, records, plan.seconds, "all"))
            return out, tuple(cluster.broker(i).pid for i in CLUSTER)

        return loads

    rows["single node, 3 topics"] = on_single
    rows["cluster, 3 leaders, RF 1"] = on_cluster(1)
    rows["cluster, 3 leaders, RF 3"] = on_cluster(3)
    results: dict[str, list[Aggregate]] = {row: [] for row in rows}
    errors: dict[str, str] = {}
    for _ in range(plan.runs):
        for row, make in rows.items():
            if row in errors:
                continue
            console.log(f"aggregate: {row}")
            try:
                loads, pids = make()
                results[row].append(_parallel(loads, pids, plan.seconds))
            except ERRORS as exc:
                errors[row] = str(exc).splitlines()[0]
    out: dict[str, Aggregate] = {}
    for row, done in results.items():
        if row in errors or not done:
            out[row] = Aggregate(error=errors.get(row, "no run finished"))
            continue
        by_broker = zip(*[a.broker_cores for a in done], strict=True)
        out[row] = Aggregate(
            median([a.rps for a in done]),
            median([a.mbps for a in done]),
            tuple(median(list(c)) for c in by_broker),
            median([a.client_cores for a in done]),
            len(done),
        )
    return out
