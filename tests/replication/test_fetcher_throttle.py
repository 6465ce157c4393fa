"""The follower side of replication throttles: a replica fetcher following two partitions from a
real broker process, one of them listed in ``follower.replication.throttled.replicas`` for this
follower, copies that one at ``follower.replication.throttled.rate`` (the fetch leaves it out
while the quota is exceeded) and the other at full speed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from sluice.broker.log import Log
from sluice.broker.replication.fetcher import ReplicaFetcherManager
from sluice.broker.topics import Partition
from tests.broker.conftest import produce_values
from tests.conftest import BrokerProcess, create_topic
from tests.replication.test_fetcher import FOLLOWER_ID, follow, leader_bytes

pytestmark = pytest.mark.timeout(120)

RATE = 60_000
RECORDS = 300


def test_the_follower_holds_throttled_partitions_to_its_rate(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    topics = [create_topic(broker.bootstrap), create_topic(broker.bootstrap)]
    for topic in topics:  # ~4 KB batches: one per partition and round (replica.fetch.max.bytes)
        produce_values(broker.bootstrap, topic, [b"v" * 1000] * RECORDS,
                       config={"batch.size": 4096, "linger.ms": 0})  # fmt: skip
    size = len(leader_bytes(broker, topics[0]))
    mine, another = [f"0:{FOLLOWER_ID}"], [f"0:{FOLLOWER_ID + 1}"]  # this follower; another
    throttled, free = (
        Partition(
            topic,
            0,
            Log.open(tmp_path / f"{topic}-0", {"follower.replication.throttled.replicas": entries}),
            is_leader=False,
        )
        for topic, entries in ((topics[0], mine), (topics[1], another))
    )

    async def body(fetcher: ReplicaFetcherManager) -> None:
        samples: list[tuple[float, int]] = []
        free_done = None
        deadline = time.monotonic() + 60
        while throttled.log.log_end_offset < RECORDS:
            assert time.monotonic() < deadline, f"throttled partition at {throttled.log!r}"
            now = time.monotonic()
            samples.append((now, throttled.log.log_end_offset))
            if free_done is None and free.log.log_end_offset == RECORDS:
                free_done = now
            await asyncio.sleep(0.02)
        samples.append((time.monotonic(), throttled.log.log_end_offset))
        assert free_done is not None, "the partition without throttle came first"
        t0, n0 = next((t, n) for t, n in samples if n >= RECORDS // 4)
        t1, n1 = next((t, n) for t, n in samples if n >= RECORDS * 9 // 10)
        rate = (n1 - n0) * size / RECORDS / (t1 - t0)
        # never faster than the throttle; slower only as much as a loaded machine makes it
        assert RATE * 0.5 < rate < RATE * 1.25, f"copied at {rate:.0f} B/s, not {RATE}"
        assert free_done - samples[0][0] < (t1 - samples[0][0]) / 2
        assert fetcher.throttles.follower.rate() > 0, "the bytes received were recorded"

    follow(
        broker,
        [throttled, free],
        body,
        epoch=0,
        **{
            "follower.replication.throttled.rate": str(RATE),
            "replication.quota.window.num": "2",
        },
    )
