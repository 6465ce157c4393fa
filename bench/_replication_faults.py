"""The fault sections of ``replication.py``: a stopped follower catching up, a killed leader
replaced."""

from __future__ import annotations

import multiprocessing as mp
import struct
import time
from dataclasses import dataclass
from typing import Any

from _clients import Workload
from _cluster import (
    CLUSTER,
    ERRORS,
    BrokerCluster,
    create_assigned,
    partition_state,
    restart_stopped,
    wait_in_sync,
)
from _harness import cpu_seconds, in_child
from _replication_load import Plan
from _wire import wire_produce_run
from rich.console import Console

FAILOVER_RATE = 1_000
_SPAWN = mp.get_context("spawn")
_SEQ = struct.Struct(">q")


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
        restart_stopped(cluster)
        return str(exc).splitlines()[0]
    return done


# --- failover -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Failover:
    """One leader killed: seconds from the kill until its registration left ZooKeeper, until
    ZooKeeper named a new leader, until the first record sent after the kill was acknowledged;
    records acknowledged (all of the run) and how many of them were not found afterwards."""

    killed: int
    was_controller: bool
    registration_gone: float
    new_leader: float
    first_ack: float
    acked: int
    lost: int


def _failover_producer(bootstrap: str, topic: str, bound: float, conn: Any) -> None:
    """Send ``FAILOVER_RATE`` records/s (value: a sequence number) with acks=all until one
    sent after the kill (the parent sends its time) is acknowledged (plus 0.5 s), or ``bound``
    s pass. Only a new leader can acknowledge a record sent after the kill: an acknowledgement
    the old leader sent just before it, but delivered here just after, does not count."""
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
        sent, kill_ns, ready, sent_at_kill = 0, 0, False, -1
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
                kill_ns, sent_at_kill = conn.recv(), sent
            if kill_ns and acked[-1][0] >= sent_at_kill:
                stop_at = min(stop_at, time.monotonic() + 0.5)
        left = producer.flush(bound)
        after = [t for seq, t in acked if kill_ns and seq >= sent_at_kill]
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
        restart_stopped(cluster)
        return str(exc).splitlines()[0]
    return done
