"""Fixtures of the distributed-mode tests: workers of a fresh group in this process, and a
compacted topic read back as a map."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
from fastapi.testclient import TestClient

from sluice import clients
from sluice.connect.rest import create_app
from sluice.connect.runtime.distributed import cluster_worker
from sluice.connect.runtime.herder import Herder
from sluice.connect.runtime.reconciler import Reconciler
from tests.conftest import BrokerProcess
from tests.connect.plugins_for_tests import CollectingSink, CountingSource
from tests.connect.rest_fixtures import wait_for

BAD_TASKS = "tests.connect.plugins_for_tests.BadTaskConfigSource"

Cluster = Callable[[str], tuple[Reconciler, TestClient]]


@pytest.fixture
def cluster(shared_broker: BrokerProcess) -> Iterator[Cluster]:
    """Makes workers of one fresh group (``join(worker_id)``); stops them all afterwards."""
    suffix = uuid.uuid4().hex[:8]
    settings = {
        "bootstrap.servers": shared_broker.bootstrap,
        "group.id": f"connect-{suffix}",
        "config.storage.topic": f"configs-{suffix}",
        "offset.storage.topic": f"offsets-{suffix}",
        "status.storage.topic": f"status-{suffix}",
        "offset.storage.partitions": "8",
        "offset.flush.interval.ms": "100",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1000",
    }
    made: list[tuple[Reconciler, TestClient]] = []

    def join(worker_id: str) -> tuple[Reconciler, TestClient]:
        worker = cluster_worker(settings)
        herder = Herder(worker, plugins=[CountingSource, CollectingSink], timeout_s=10)
        client = TestClient(create_app(herder))
        made.append((worker, client))
        if worker_id:
            worker.start(worker_id)
            wait_for(lambda: not worker.rebalancing, f"{worker_id} to join")
        return worker, client

    try:
        yield join
    finally:
        for worker, client in made:
            client.close()
            worker.stop()


def topic_records(bootstrap: str, topic: str) -> dict[str, Any]:
    """The latest value of each key of a topic (None: a tombstone), read from the start."""
    consumer = clients.consumer(bootstrap)
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        found: dict[str, Any] = {}
        for _ in range(20):
            batch = consumer.consume(1000, 0.5)
            for message in batch:
                if message.error() is None and message.key() is not None:
                    raw = message.value()
                    found[message.key().decode()] = None if raw is None else json.loads(raw)
            if not batch and found:
                break
        return found
    finally:
        consumer.close()


def read_topic(bootstrap: str, topic: str) -> list[str]:
    """Every value of the (one-partition) topic, up to its high watermark."""
    consumer = clients.consumer(bootstrap)
    try:
        partition = TopicPartition(topic, 0, OFFSET_BEGINNING)
        try:
            _, high = consumer.get_watermark_offsets(partition, timeout=10)
        except KafkaException:  # not created yet
            return []
        consumer.assign([partition])
        values: list[str] = []
        deadline = time.monotonic() + 30
        while len(values) < high and time.monotonic() < deadline:
            batch = consumer.consume(10_000, 0.5)
            values += [m.value().decode() for m in batch if m.error() is None]
        return values
    finally:
        consumer.close()
