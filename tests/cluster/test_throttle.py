"""Replication throttles on a real three-broker cluster: ``sluice partitions reassign --execute
--throttle`` moves a partition holding 3 MB at the throttled rate (±20 %, measured on the new
replica's log) while a producer writes, nothing acknowledged is lost, and ``--verify`` removes
the throttle configs once the move is done."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from tests.cli.conftest import run_sluice
from tests.cluster.brokers import BrokerCluster
from tests.cluster.test_reassignment import Writing, create, partition_dir, state

pytestmark = pytest.mark.timeout(180)

THROTTLE = 200_000
"""Bytes/s: small enough that the machine is never the bottleneck."""
DATA = 3_000_000


def log_bytes(cluster: BrokerCluster, broker: int, topic: str) -> int:
    directory = partition_dir(cluster, broker, topic)
    try:
        return sum(p.stat().st_size for p in directory.glob("*.log"))
    except FileNotFoundError:  # not created yet, or a segment deleted while listed
        return 0


def check(cluster: BrokerCluster, topic: str, writing: Writing) -> None:
    """No producer error, every acknowledged record of ``writing`` read back once, and the
    filler records before them all there."""
    assert writing.errors == []
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"check-{topic}"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[int] = []
    filler = 0
    deadline = time.monotonic() + 60
    while len(seen) < len(writing.acked) and time.monotonic() < deadline:
        for msg in consumer.consume(1000, timeout=1):
            if msg.error() is None and msg.value().startswith(b"x"):
                filler += 1
            elif msg.error() is None:
                seen.append(int(msg.value()))
    consumer.close()
    assert filler == DATA // 1000
    assert sorted(seen) == sorted(writing.acked) == list(range(len(writing.acked)))


def configs(
    cluster: BrokerCluster, kind: ResourceType, name: str, keys: set[str]
) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    [future] = admin.describe_configs([ConfigResource(kind, name)]).values()
    return {k: v.value for k, v in future.result(30).items() if k in keys}


def test_a_throttled_move_runs_at_the_throttle_and_verify_removes_it(
    broker_cluster_factory: Callable[..., BrokerCluster], tmp_path: Path
) -> None:
    cluster = broker_cluster_factory(
        **{
            # 16 KiB per fetch and 2 windows of 1 s: the rate is held over short cycles
            "replica.fetch.max.bytes": "16384",
            "replication.quota.window.num": "2",
        }
    )
    topic = "throttled"
    create(cluster, topic, [1, 2])
    producer = Producer(  # small batches: the leader sends at least one whole batch
        {"bootstrap.servers": cluster.bootstrap, "batch.size": 16384, "acks": "all"}
    )
    for _ in range(DATA // 1000):
        producer.produce(topic, b"x" * 1000)
        producer.poll(0)
    assert producer.flush(60) == 0
    filled = log_bytes(cluster, 1, topic)
    assert filled >= DATA

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 3]}]}))  # fmt: skip
    bs = ("-b", cluster.bootstrap)
    with Writing(cluster, topic) as writing:
        executed = run_sluice(
            "partitions", "reassign", "--execute", str(plan), "--throttle", str(THROTTLE), *bs
        )
        assert executed.code == 0, executed
        assert f"throttle limit was set to {THROTTLE} B/s on brokers 1,2,3" in executed.out
        throttled_replicas = {
            "leader.replication.throttled.replicas",
            "follower.replication.throttled.replicas",
        }
        assert configs(cluster, ResourceType.TOPIC, topic, throttled_replicas) == {
            "leader.replication.throttled.replicas": "0:1,0:2",
            "follower.replication.throttled.replicas": "0:3",
        }
        samples: list[tuple[float, int]] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            size = log_bytes(cluster, 3, topic)
            samples.append((time.monotonic(), size))
            if size >= filled:
                break
            time.sleep(0.2)
        cluster.wait_until(lambda: state(cluster, topic)[0] == [2, 3], "moved to brokers 2, 3")

    low, high = 0.25 * filled, 0.9 * filled
    t0, s0 = next((t, s) for t, s in samples if s >= low)
    t1, s1 = next((t, s) for t, s in samples if s >= high)
    rate = (s1 - s0) / (t1 - t0)
    assert rate == pytest.approx(THROTTLE, rel=0.2), (
        f"moved at {rate:.0f} B/s with a throttle of {THROTTLE} B/s: {samples}"
    )
    check(cluster, topic, writing)

    rates = {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
    assert configs(cluster, ResourceType.BROKER, "3", rates) == dict.fromkeys(rates, str(THROTTLE))
    verified = run_sluice("partitions", "reassign", "--verify", str(plan), *bs)
    assert verified.code == 0, verified
    assert "Reassignment of partition throttled-0 is completed." in verified.out
    assert "Clearing broker-level throttles on brokers 1,2,3" in verified.out
    assert "Clearing topic-level throttles on topic throttled" in verified.out
    assert configs(cluster, ResourceType.TOPIC, topic, throttled_replicas) == dict.fromkeys(
        throttled_replicas, ""
    )
    for broker in (1, 2, 3):
        unlimited = str(2**63 - 1)
        assert configs(cluster, ResourceType.BROKER, str(broker), rates) == dict.fromkeys(
            rates, unlimited
        ), f"broker {broker}"
