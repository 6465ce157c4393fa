"""kafka-python, aiokafka and kcat produce and consume through a leader change on a 3-broker
cluster (confluent-kafka's is in test_cluster_basics.py): half the records before the leader
of the partition stops (SIGTERM: its leadership moves), half after, and a consumer that starts
on the new leader reads every record, in order, once."""

from __future__ import annotations

import asyncio
import subprocess
import time
import warnings

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioPartition

from tests.compat.test_kafka_python import READ_TEXT

with warnings.catch_warnings():  # kafka-python loads its schemas with importlib's read_text
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpPartition

from tests.cluster.brokers import BrokerCluster
from tests.cluster.test_cluster_basics import create_topic, leaders

TIMEOUT = 30.0
HALF = 200

pytestmark = pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning")


def change_leader(cluster: BrokerCluster, topic: str) -> None:
    """Stop the partition's leader cleanly and wait until another broker leads it."""
    leader = leaders(cluster, topic, 1)[0][0]
    cluster.stop(leader)
    other = next(i for i in cluster.ids if i != leader)
    cluster.wait_until(
        lambda: leaders(cluster, topic, other)[0][0] not in (-1, leader), "a new leader"
    )


def test_kafka_python_through_a_leader_change(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    create_topic(cluster, "kp", partitions=1, rf=3, **{"min.insync.replicas": "2"})
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap.split(","),
        acks="all",
        retries=10,
        request_timeout_ms=int(TIMEOUT * 1000),
        max_block_ms=int(TIMEOUT * 1000),
    )
    try:
        for n in range(HALF):
            producer.send("kp", f"{n}".encode(), partition=0)
        producer.flush(TIMEOUT)
        change_leader(cluster, "kp")
        futures = [producer.send("kp", f"{n}".encode(), partition=0) for n in range(HALF, 2 * HALF)]
        producer.flush(TIMEOUT)
        for future in futures:
            future.get(timeout=TIMEOUT)
    finally:
        producer.close(timeout=TIMEOUT)
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap.split(","),
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=int(TIMEOUT * 1000),
    )
    try:
        consumer.assign([KpPartition("kp", 0)])
        seen: list[str] = []
        deadline = time.monotonic() + TIMEOUT
        while len(seen) < 2 * HALF and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                seen += [r.value.decode() for r in records]
    finally:
        consumer.close()
    assert seen == [str(n) for n in range(2 * HALF)]


# aiokafka may leave the socket of a connection attempt still in progress (to the stopped old
# leader, while its metadata is refreshed) unclosed when the producer stops: a client's leak,
# seen under load, that says nothing of the broker (every record is still checked below)
@pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_aiokafka_through_a_leader_change(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    create_topic(cluster, "aio", partitions=1, rf=3, **{"min.insync.replicas": "2"})

    async def run() -> list[str]:
        producer = AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap.split(","),
            acks="all",
            enable_idempotence=True,
            request_timeout_ms=int(TIMEOUT * 1000),
        )
        await asyncio.wait_for(producer.start(), TIMEOUT)
        try:
            first = [await producer.send("aio", f"{n}".encode(), partition=0) for n in range(HALF)]
            await asyncio.wait_for(asyncio.gather(*first), TIMEOUT)
            await asyncio.to_thread(change_leader, cluster, "aio")
            second = [
                await producer.send("aio", f"{n}".encode(), partition=0)
                for n in range(HALF, 2 * HALF)
            ]
            await asyncio.wait_for(asyncio.gather(*second), TIMEOUT)
        finally:
            await asyncio.wait_for(producer.stop(), TIMEOUT)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=cluster.bootstrap.split(","),
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=int(TIMEOUT * 1000),
        )
        await asyncio.wait_for(consumer.start(), TIMEOUT)
        tp = AioPartition("aio", 0)
        try:
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            seen: list[str] = []
            deadline = time.monotonic() + TIMEOUT
            while len(seen) < 2 * HALF and time.monotonic() < deadline:
                batch = await consumer.getmany(tp, timeout_ms=500)
                seen += [r.value.decode() for r in batch.get(tp, [])]
        finally:
            await asyncio.wait_for(consumer.stop(), TIMEOUT)
        return seen

    assert asyncio.run(run()) == [str(n) for n in range(2 * HALF)]


def kcat(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["/usr/bin/kcat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"kcat {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return done.stdout


def test_kcat_through_a_leader_change(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    create_topic(cluster, "kc", partitions=1, rf=3, **{"min.insync.replicas": "2"})
    bootstrap = cluster.bootstrap
    produce = ["-P", "-b", bootstrap, "-t", "kc", "-p", "0", "-X", "acks=all"]
    kcat(*produce, stdin="".join(f"{n}\n" for n in range(HALF)))
    change_leader(cluster, "kc")
    kcat(*produce, stdin="".join(f"{n}\n" for n in range(HALF, 2 * HALF)))
    out = kcat("-C", "-b", bootstrap, "-t", "kc", "-p", "0", "-o", "beginning", "-e")
    assert out.splitlines() == [str(n) for n in range(2 * HALF)]
    listing = kcat("-L", "-b", bootstrap, "-t", "kc")
    assert "3 brokers:" in listing or "2 brokers:" in listing, listing
