"""Replication: a 3-broker cluster (RF 3, min.insync.replicas=2) beside a single node, one run.

    python bench/replication.py [--quick] [--only SECTION ...] [--session-timeout-ms 6000]
                                [--data-root DIR] [--json PATH]

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
  with SIGKILL; timed until the first record acknowledged after the kill (target: the session
  timeout + 2 s), with the moments its registration left ZooKeeper and a new leader was written
  there. Then every acknowledged record is looked for in the partition (none may be lost), and
  the killed broker is started again.

Every loop is bounded by a count and a deadline; every process (ZooKeeper, brokers, clients) is
stopped by PID when done, whatever happened.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import json
import multiprocessing as mp
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import broker_latency
from _clients import Run, Workload, produce_run
from _harness import Broker, cpu_seconds, create_topic, in_child, median, running_broker
from _wire import wire_produce_run
from broker_throughput import _machine
from confluent_kafka import KafkaException
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the cluster harness of the tests: tests/cluster/*.py
    sys.path.insert(0, str(ROOT))

from tests.cluster.brokers import BrokerCluster  # noqa: E402
from tests.cluster.zookeeper import ZooKeeperServer  # noqa: E402
from tests.conftest import free_port  # noqa: E402

SECTIONS = ("throughput", "latency", "aggregate", "catchup", "failover")
SIZES = (100, 1000)
CLUSTER = (1, 2, 3)
KAFKA = {"1": 786_980 / 821_557, "all": 421_823 / 821_557}
"""Kafka's RF 3 produce over one node's (acks=1), 100 B, one producer (Kreps, 2014)."""
TARGET_RATIO = 0.5
TARGET_P99_MS = 10.0
FAILOVER_MARGIN_S = 2.0
RATE = 20_000
FAILOVER_RATE = 1_000
ERRORS = (RuntimeError, TimeoutError, AssertionError, KafkaException, OSError)
_SPAWN = mp.get_context("spawn")
_SEQ = struct.Struct(">q")


@dataclass(frozen=True)
class Plan:
    """How long each section runs: full (~10 min) or ``--quick`` (~3 min)."""

    runs: int
    seconds: float
    records: dict[int, int]
    latency_seconds: float
    catchup_mb: int


FULL = Plan(3, 2.0, {100: 1_000_000, 1000: 300_000}, 5.0, 200)
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


# --- the cluster ----------------------------------------------------------------------------


def cluster_keys(session_timeout_ms: int) -> dict[str, str]:
    """Every cluster broker's ``server.properties``."""
    return {
        "zookeeper.session.timeout.ms": str(session_timeout_ms),
        "min.insync.replicas": "2",
        "default.replication.factor": "3",
        "log.retention.check.interval.ms": "86400000",
        "group.initial.rebalance.delay.ms": "0",
    }


@contextlib.contextmanager
def running_cluster(root: Path, session_timeout_ms: int) -> Iterator[BrokerCluster]:
    """ZooKeeper and three brokers under ``root``, started; all stopped by PID at the end."""
    with (
        ZooKeeperServer(root / "zookeeper", free_port()) as zookeeper,
        BrokerCluster(
            root / "cluster",
            f"{zookeeper.hosts}/sluice-bench",
            len(CLUSTER),
            cluster_keys(session_timeout_ms),
        ) as cluster,
    ):
        for i in cluster.ids:  # one at a time: a start is mostly imports, 2 cores are shared
            cluster.start(i)
        yield cluster


def partition_state(
    cluster: BrokerCluster, topic: str, partition: int = 0
) -> tuple[int, list[int]]:
    """The leader and ISR that ZooKeeper holds for ``topic``-``partition``."""
    versioned = cluster.store().partition_state(topic, partition)
    if versioned is None:
        raise RuntimeError(f"{topic}-{partition} has no state in ZooKeeper")
    return versioned.value.leader, list(versioned.value.isr)


def wait_in_sync(
    cluster: BrokerCluster, topic: str, partitions: int = 1, timeout: float = 60
) -> None:
    """Wait (bounded) until every replica of every partition of ``topic`` is in its ISR."""
    assignment = cluster.store().topic_assignment(topic)
    if assignment is None:
        raise RuntimeError(f"topic {topic} is not in ZooKeeper")
    replicas = assignment.value.partitions

    def in_sync() -> bool:
        return all(
            sorted(partition_state(cluster, topic, p)[1]) == sorted(replicas[p].replicas)
            for p in range(partitions)
        )

    cluster.wait_until(in_sync, f"{topic}: every replica in the ISR", timeout)


def create_assigned(cluster: BrokerCluster, topic: str, assignment: list[list[int]]) -> None:
    """Create ``topic`` with one partition per entry of ``assignment`` (its replicas, the
    preferred leader first) and wait until every replica is in sync."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 0})
    new = NewTopic(topic, len(assignment), replica_assignment=assignment)
    for future in admin.create_topics([new]).values():
        future.result(30)
    wait_in_sync(cluster, topic, len(assignment))


def _pids(cluster: BrokerCluster, first: int) -> tuple[int, ...]:
    """The broker processes, broker ``first`` first."""
    order = [first, *(i for i in CLUSTER if i != first)]
    return tuple(cluster.broker(i).pid for i in order)


# --- throughput -----------------------------------------------------------------------------


def _label(kind: str, size: int, acks: str) -> str:
    return f"{kind} {'100 B' if size == 100 else '1 KB'} acks={acks}"


def throughput(
    cluster: BrokerCluster, single: Broker, plan: Plan, console: Console
) -> dict[str, dict[str, Rate]]:
    """Produce on the single node and on the cluster, taking turns; by row, then by side."""
    out: dict[str, dict[str, Rate]] = {}
    for kind, fn in (("produce", produce_run), ("pre-encoded", wire_produce_run)):
        for size in SIZES:
            topic = f"{kind}-{size}"
            create_topic(single.bootstrap, topic)
            create_assigned(cluster, topic, [[1, 2, 3]])
            for acks in ("1", "all"):
                label = _label(kind, size, acks)
                console.log(label)
                results: dict[str, list[tuple[Run, tuple[float, ...]]]] = {
                    "single": [],
                    "cluster": [],
                }
                errors: dict[str, str] = {}
                min_isr = len(CLUSTER)
                records = plan.records[size]
                for _ in range(plan.runs):
                    for side in ("single", "cluster"):
                        if side in errors:
                            continue
                        try:
                            if side == "single":
                                pids: tuple[int, ...] = (single.pid,)
                                bootstrap = single.bootstrap
                            else:
                                wait_in_sync(cluster, topic, timeout=30)
                                leader = partition_state(cluster, topic)[0]
                                pids = _pids(cluster, leader)
                                # pre-encoded requests go to the leader itself
                                bootstrap = (
                                    cluster.broker(leader).bootstrap
                                    if kind == "pre-encoded"
                                    else cluster.bootstrap
                                )
                            load = Workload(bootstrap, topic, size, records, plan.seconds, acks)
                            results[side].append(in_child(_with_cpu, fn, load, pids))
                            if side == "cluster":
                                min_isr = min(min_isr, len(partition_state(cluster, topic)[1]))
                        except ERRORS as exc:
                            errors[side] = str(exc).splitlines()[0]
                out[label] = {
                    side: Rate(error=errors[side])
                    if side in errors
                    else _rate(runs, min_isr if side == "cluster" else 0)
                    for side, runs in results.items()
                }
    return out


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
                runs[side].append(broker_latency.latency_run(load))
            except ERRORS as exc:
                out[side] = str(exc).splitlines()[0]
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


# --- follower catch-up ----------------------------------------------------------------------


@dataclass(frozen=True)
class CatchUp:
    """One follower's return: MB written while it was down, seconds from its process start and
    from its ready line to its place in the ISR, CPU per second of follower and leader meanwhile."""

    mb: float
    start_to_isr: float
    ready_to_isr: float
    follower_cores: float
    leader_cores: float

    @property
    def mb_per_second(self) -> float:
        return self.mb / self.ready_to_isr if self.ready_to_isr > 0 else 0.0


def catch_up(cluster: BrokerCluster, plan: Plan, console: Console) -> list[CatchUp] | str:
    """Stop a follower, produce ``plan.catchup_mb`` MB, start it, time its way back to the ISR."""
    topic, size = "catchup", 1000
    done: list[CatchUp] = []
    try:
        create_assigned(cluster, topic, [[1, 2, 3]])
        for _ in range(plan.runs):
            wait_in_sync(cluster, topic)
            leader, isr = partition_state(cluster, topic)
            controller = cluster.store().controller()
            followers = [i for i in isr if i != leader]
            calm = [i for i in followers if controller is None or i != controller.value.broker_id]
            follower = (calm or followers)[-1]  # not the controller, where there is a choice
            console.log(
                f"catch-up: broker {follower} stopped, {plan.catchup_mb} MB to leader {leader}"
            )
            cluster.stop(follower)
            cluster.wait_until(
                lambda f=follower: f not in partition_state(cluster, topic)[1],
                f"broker {follower} out of the ISR",
                30,
            )
            records = plan.catchup_mb * 1_000_000 // size
            load = Workload(cluster.broker(leader).bootstrap, topic, size, records, 300.0, "all")
            written = in_child(wire_produce_run, load, timeout=330)
            if written.records < records:
                raise RuntimeError(f"wrote only {written.records:,} of {records:,} records")
            leader_pid = cluster.broker(leader).pid
            start = time.monotonic()
            cluster.start(follower)
            ready = time.monotonic()
            cpu = (cpu_seconds(cluster.broker(follower).pid), cpu_seconds(leader_pid))
            cluster.wait_until(
                lambda f=follower: f in partition_state(cluster, topic)[1],
                f"broker {follower} back in the ISR",
                60 + plan.catchup_mb,
            )
            back = time.monotonic()
            took = back - ready
            done.append(
                CatchUp(
                    written.records * size / 1e6,
                    back - start,
                    took,
                    (cpu_seconds(cluster.broker(follower).pid) - cpu[0]) / took,
                    (cpu_seconds(leader_pid) - cpu[1]) / took,
                )
            )
    except ERRORS as exc:
        return str(exc).splitlines()[0]
    return done


# --- failover -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Failover:
    """One leader killed: seconds from the kill until its registration left ZooKeeper, until
    ZooKeeper named a new leader, until the first record acknowledged after the kill; records
    acknowledged (all of the run) and how many of them were not found afterwards."""

    killed: int
    was_controller: bool
    registration_gone: float
    new_leader: float
    first_ack: float
    acked: int
    lost: int


def _failover_producer(bootstrap: str, topic: str, bound: float, conn: Any) -> None:
    """Send ``FAILOVER_RATE`` records/s (value: a sequence number) with acks=all until one is
    acknowledged after the kill time the parent sends (plus 0.5 s), or ``bound`` s pass."""
    from confluent_kafka import Producer

    acked: list[tuple[int, int]] = []
    failed: list[str] = []

    def on_delivery(err: Any, msg: Any) -> None:
        if err is None:
            acked.append((_SEQ.unpack(msg.value())[0], time.monotonic_ns()))
        else:
            failed.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 0,
            "log_level": 0,
            "message.timeout.ms": int(bound * 1000),
            "on_delivery": on_delivery,
        }
    )
    try:
        sent, kill_ns, ready = 0, 0, False
        start = time.monotonic()
        stop_at = start + bound
        while time.monotonic() < stop_at:
            due = int((time.monotonic() - start) * FAILOVER_RATE) + 1
            while sent < due:
                producer.produce(topic, _SEQ.pack(sent))
                sent += 1
            producer.poll(0.001)
            if acked and not ready:
                conn.send("ready")
                ready = True
            if not kill_ns and conn.poll():
                kill_ns = conn.recv()
            if kill_ns and acked[-1][1] > kill_ns:
                stop_at = min(stop_at, time.monotonic() + 0.5)
        left = producer.flush(bound)
        after = [t for _, t in acked if kill_ns and t > kill_ns]
        conn.send(("ok", sorted(s for s, _ in acked), min(after) if after else 0, left, failed[:3]))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _consumed(bootstrap: str, topic: str, want: set[int], seconds: float) -> set[int]:
    """The sequence numbers of ``want`` found in ``topic`` from offset 0 (bounded)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-failover",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    found: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + seconds
        while found != want and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error() is None:
                    seq = _SEQ.unpack(msg.value())[0]
                    if seq in want:
                        found.add(seq)
    finally:
        consumer.close()
    return found


def failover_once(cluster: BrokerCluster, topic: str, session_s: float) -> Failover:
    """Kill the leader of ``topic``-0 under acks=all load; restart it once measured."""
    wait_in_sync(cluster, topic, timeout=session_s + 60)
    leader = partition_state(cluster, topic)[0]
    controller = cluster.store().controller()
    bound = session_s + 30
    parent, child = _SPAWN.Pipe()
    proc = _SPAWN.Process(
        target=_failover_producer, args=(cluster.bootstrap, topic, bound, child), daemon=True
    )
    proc.start()
    try:
        if not parent.poll(30) or parent.recv() != "ready":
            raise TimeoutError("the failover producer got no acknowledgement in 30 s")
        time.sleep(0.5)
        kill_ns = time.monotonic_ns()
        cluster.kill(leader)
        parent.send(kill_ns)
        gone = elected = 0
        deadline = time.monotonic() + bound + 5
        while not parent.poll(0.02) and time.monotonic() < deadline:
            now = time.monotonic_ns()
            if not gone and leader not in cluster.store().live_brokers():
                gone = now
            if not elected and partition_state(cluster, topic)[0] not in (leader, -1):
                elected = now
        if not parent.poll(bound):
            raise TimeoutError(f"the failover producer did not report in {bound:g} s")
        status, *result = parent.recv()
        if status != "ok":
            raise RuntimeError(result[0])
        acked, first_ns, _unsettled, failed = result
    finally:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if not first_ns:
        raise RuntimeError(f"no record acknowledged within {bound:g} s of the kill: {failed}")
    found = in_child(_consumed, cluster.bootstrap, topic, set(acked), 30.0, timeout=60)
    cluster.start(leader)
    return Failover(
        leader,
        controller is not None and controller.value.broker_id == leader,
        (gone - kill_ns) / 1e9 if gone else float("nan"),
        (elected - kill_ns) / 1e9 if elected else float("nan"),
        (first_ns - kill_ns) / 1e9,
        len(acked),
        len(set(acked) - found),
    )


def failover(
    cluster: BrokerCluster, plan: Plan, session_s: float, console: Console
) -> list[Failover] | str:
    """``plan.runs`` leader kills, each on a fresh topic."""
    done = []
    try:
        for i in range(plan.runs):
            topic = f"failover-{i}"
            create_assigned(cluster, topic, [[1 + i % 3, *(j for j in CLUSTER if j != 1 + i % 3)]])
            console.log(f"failover {i + 1}: kill -9 of the leader of {topic}")
            done.append(failover_once(cluster, topic, session_s))
    except ERRORS as exc:
        return str(exc).splitlines()[0]
    return done


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
    sections: list[str], plan: Plan, session_timeout_ms: int, data_root: str | None
) -> Results:
    """Start ZooKeeper, the cluster and the single node; run ``sections``; stop everything."""
    console = Console(stderr=True)
    results = Results()
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory("-replication", dir=data_root)))
        console.log("starting ZooKeeper and three brokers")
        cluster = stack.enter_context(running_cluster(tmp, session_timeout_ms))
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
        ours = results.throughput.get(_label("produce", size, "all"), {}).get("cluster")
        ref = results.throughput.get(_label("produce", size, "1"), {}).get("single")
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
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--data-root",
        help="where the brokers' logs and ZooKeeper's data live (default: the system "
        "temporary directory, on disk)",
    )
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    if args.catchup_mb:
        plan = Plan(plan.runs, plan.seconds, plan.records, plan.latency_seconds, args.catchup_mb)
    sections = [s for s in SECTIONS if not args.only or s in args.only]
    session_s = args.session_timeout_ms / 1000
    console = Console(width=max(160, Console().width))
    machine = _machine()  # the load average before the bench adds its own
    machine += f", logs under {args.data_root or tempfile.gettempdir()}"
    started = datetime.datetime.now(datetime.UTC)
    results = measure(sections, plan, args.session_timeout_ms, args.data_root)

    console.print(f"Replication, {started:%Y-%m-%d %H:%M} UTC; {machine}")
    console.print(
        "cluster: 3 brokers and ZooKeeper on this machine, min.insync.replicas=2, "
        f"zookeeper.session.timeout.ms={args.session_timeout_ms}; single node: no ZooKeeper"
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
