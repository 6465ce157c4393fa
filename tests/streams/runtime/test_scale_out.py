"""Scaling out from one instance to three while records flow, under exactly-once: the new
instances warm the tasks' state up first (KIP-441), a task becomes active on one of them only
once its state caught up — it restores at most ``acceptable_recovery_lag`` records then — and
the counts are exactly what one instance would have counted."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from sluice.dsl import App
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import read, wait_for

KEYS = 30
PARTITIONS = 6
ACCEPTABLE_LAG = 20
RUN_S = 25.0


def _app(bootstrap: str, app_id: str, words: str, counts: str, state_dir: Path) -> App:
    app = App(
        app_id,
        bootstrap,
        processing_guarantee="exactly_once_v2",
        state_dir=state_dir,
        commit_interval_ms=100,
        session_timeout_ms=10_000,
        statestore_cache_max_bytes=0,
        acceptable_recovery_lag=ACCEPTABLE_LAG,
        max_warmup_replicas=PARTITIONS,
        probing_rebalance_interval_ms=1000,
    )
    app.stream(words).group_by_key().count(name="counts").to_stream().to(counts)
    return app


def test_scale_out_warms_up_before_moving_and_counts_exactly(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    words, counts = create_topic(bootstrap, PARTITIONS), create_topic(bootstrap, PARTITIONS)
    app_id = f"scale-{uuid.uuid4().hex[:8]}"
    sent: dict[str, int] = {}
    stop = threading.Event()

    def load() -> None:  # bounded: RUN_S seconds at ~500 records/s
        producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
        deadline = time.monotonic() + RUN_S
        n = 0
        while not stop.is_set() and time.monotonic() < deadline:
            key = f"k{n % KEYS}"
            producer.produce(words, b"1", key.encode())
            sent[key] = sent.get(key, 0) + 1
            n += 1
            if n % 50 == 0:
                producer.poll(0)
                time.sleep(0.1)
        assert producer.flush(30) == 0

    instances = [_app(bootstrap, app_id, words, counts, tmp_path / "s0")]
    loader = threading.Thread(target=load)
    try:
        instances[0].start()
        loader.start()
        time.sleep(4)  # the first instance has state for every task
        for n in (1, 2):
            instances.append(_app(bootstrap, app_id, words, counts, tmp_path / f"s{n}"))
            instances[-1].start()

        def threads() -> list[Any]:
            return [app._runtime.thread for app in instances]  # type: ignore[union-attr]

        wait_for(
            lambda: (
                all(t.tasks for t in threads()) and not any(t.assignment.warmup for t in threads())
            ),
            "the tasks spread over the three instances, warm-ups done",
            timeout=60,
        )
        loader.join(RUN_S + 30)
    finally:
        stop.set()
        loader.join(30)
        for app in instances:
            app.close()
    # no task went active on a new instance before its state had caught up
    for instance in instances[1:]:
        thread = instance._runtime.thread  # type: ignore[union-attr]
        for (task, store), items in thread.restorations.items():
            restored = sum(item.restored for item in items)
            assert restored <= ACCEPTABLE_LAG, (task, store, restored)
    # exactly once: every key's last count is what was sent, and no count ran past it
    total = sum(sent.values())
    records = read(
        bootstrap,
        counts,
        committed_only=True,
        until=lambda rs: {k: v for k, v, _ in rs} == sent,
        explain=lambda rs: f"{len(rs)} records of {total} updates",
    )
    highest: dict[str, int] = {}
    for key, value, _ in records:
        highest[key] = max(highest.get(key, 0), value)
    assert highest == sent
