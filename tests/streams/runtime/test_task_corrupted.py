"""An exactly-once app whose producer refuses a record in the middle of a batch, outside a
commit, because of its transaction's state; it must not stop in ERROR (what it did before),
nor lose or count anything twice. The app stalls in a slow step while the fault happens:

- ``abortable``: the broker refuses writes to one output topic for a while
  (NOT_ENOUGH_REPLICAS: its ``min.insync.replicas`` raised above what the broker has, as when
  followers fall behind), the producer retries, and during the stall the records time out
  (``message.timeout.ms``): librdkafka makes the transaction abortable and refuses the app's
  next record (``_STATE``). As Kafka Streams does for a ``TaskCorruptedException``, the app
  aborts the transaction, rebuilds its tasks from their changelogs (their RocksDB stores hold
  counts of the aborted work) and reads their partitions again from the committed offsets —
  staying in the group: no rebalance.
- ``fenced``: the stall outlives ``transaction.timeout.ms``; the broker aborts the transaction
  and bumps the producer's epoch, the next records are answered INVALID_PRODUCER_EPOCH and
  librdkafka refuses the ones after (``_FATAL``, fenced). As Kafka Streams does for a
  ``TaskMigratedException``, the app aborts, replaces its producer, closes its tasks without
  committing and joins the group again.

The output read ``read_committed`` is what one run without the fault would have written:
every record echoed once, every key's counts 1, 2, … n with none skipped or repeated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

from sluice import clients
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic, stop_process
from tests.streams.runtime.corruption_worker import MESSAGE_TIMEOUT_MS
from tests.streams.runtime.fixtures import read, wait_for

WORKER = Path(__file__).with_name("corruption_worker.py")
KEYS = 10
BATCH = 200
"""Input records per batch: before the fault, the one that meets it, after it."""
STALLED_AT = BATCH + BATCH // 2
"""The record of the middle batch the app stalls on (records of its partition come before and
after it in that batch)."""
PARTITIONS = 2
"""Key ``k<n>`` is written to partition ``n % 2``; the middle batch has even keys only, so it
is one batch of one partition, read at once: the stall comes before any commit of it."""
SETTLED_AT = STALLED_AT + KEYS
"""The next record of the same key (so of the same partition and batch): the app stalls a
second there, time for the broker's answer to the records written after the first stall."""
TXN_TIMEOUT_MS = {"abortable": 120_000, "fenced": 3_000}
"""The app's ``transaction.timeout.ms``: the stall outlives it only when it is to fence."""
STALL_S = {"abortable": MESSAGE_TIMEOUT_MS / 1000 + 3.0, "fenced": 3.0 + 3.5}
"""How long the app stalls: past the records' timeout (librdkafka looks every second), or
past the transaction's (the broker looks every second)."""


Input = list[tuple[str, dict[str, Any]]]


def _input(ids: range, *, middle: bool = False) -> Input:
    """Records ``ids`` (of the even keys only for the middle batch)."""
    records = []
    for n in ids:
        if middle and n % KEYS % PARTITIONS:
            continue
        value: dict[str, Any] = {"id": n}
        if n == STALLED_AT:
            value["pause"] = True
        if n == SETTLED_AT:
            value["settle"] = True
        records.append((f"k{n % KEYS}", value))
    return records


def _produce_at_once(bootstrap: str, topic: str, records: Input) -> None:
    """One request: each partition's records are one batch, read in one poll."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 500})
    for key, value in records:
        partition = int(key[1:]) % PARTITIONS
        producer.produce(
            topic, json.dumps(value).encode(), key.encode(), partition, timestamp=1_000
        )
    assert producer.flush(30) == 0


def _set_min_insync(admin: Any, topic: str, replicas: int) -> None:
    entry = ConfigEntry(
        "min.insync.replicas", str(replicas), incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(CLIENT_TIMEOUT)


def _members(admin: Any, group: str) -> list[str]:
    [future] = admin.describe_consumer_groups([group], request_timeout=CLIENT_TIMEOUT).values()
    return sorted(m.member_id for m in future.result(CLIENT_TIMEOUT).members)


def _counts_by_key(records: list[tuple[Any, Any, int]]) -> dict[str, list[int]]:
    counts: dict[str, list[int]] = defaultdict(list)
    for key, value, _ in records:
        counts[key].append(value)
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["abortable", "fenced"])
def test_a_record_refused_mid_batch_aborts_and_the_app_goes_on(
    shared_broker: BrokerProcess, tmp_path: Path, fault: str
) -> None:
    bootstrap = shared_broker.bootstrap
    source, echo, counts = (create_topic(bootstrap, PARTITIONS) for _ in range(3))
    app_id = f"corrupted-{uuid.uuid4().hex[:8]}"
    admin = clients.admin(bootstrap)
    pause_dir = tmp_path / "pause"
    pause_dir.mkdir()
    log = tmp_path / "worker.log"
    args = [bootstrap, app_id, str(tmp_path / "state"), source, echo, counts, str(pause_dir)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    with open(log, "ab") as out:
        worker = subprocess.Popen(
            [sys.executable, str(WORKER), *args, str(TXN_TIMEOUT_MS[fault])],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    batches = [
        _input(range(BATCH)),
        _input(range(BATCH, 2 * BATCH), middle=True),
        _input(range(2 * BATCH, 3 * BATCH)),
    ]
    expected: dict[str, list[int]] = defaultdict(list)
    for key, _ in [record for batch in batches for record in batch]:
        expected[key].append(len(expected[key]) + 1)
    produced = sorted(value["id"] for batch in batches for _, value in batch)
    try:
        _produce_at_once(bootstrap, source, batches[0])
        # the first batch is committed: the fault hits a transaction of the second alone
        read(bootstrap, counts, until=lambda rs: len(rs) >= BATCH, committed_only=True)
        members = _members(admin, app_id)
        if fault == "abortable":
            _set_min_insync(admin, echo, 2)
        _produce_at_once(bootstrap, source, batches[1])
        wait_for((pause_dir / "paused").exists, "the app to stall on its record", 60)
        time.sleep(STALL_S[fault])  # the fault happens while the app stalls
        if fault == "abortable":
            _set_min_insync(admin, echo, 1)
        (pause_dir / "resume").touch()
        _produce_at_once(bootstrap, source, batches[2])

        def complete(records: list[tuple[Any, Any, int]]) -> bool:
            got = _counts_by_key(records)
            return all(got[k][-1:] == [n[-1]] for k, n in expected.items())

        def latest(records: list[tuple[Any, Any, int]]) -> str:
            return f"last counts: { {k: v[-3:] for k, v in _counts_by_key(records).items()} }"

        output = read(
            bootstrap, counts, until=complete, committed_only=True, timeout=90, explain=latest
        )
        echoed = read(
            bootstrap, echo, until=lambda rs: len(rs) >= len(produced), committed_only=True
        )
        assert worker.poll() is None, f"the app exited with {worker.returncode}"
        still = _members(admin, app_id)
    finally:
        stop_process(worker)
    text = log.read_text()
    assert "stream thread stopped" not in text, "the stream thread stopped in ERROR"
    # exactly once: every record echoed once, every count once and in order
    ids = sorted(value["id"] for _, value, _ in echoed)
    assert ids == produced, f"{len(ids)} echoed, {len(set(ids))} distinct, {len(produced)} in"
    got = _counts_by_key(output)
    wrong = {
        k: (got.get(k, [])[-3:], len(got.get(k, []))) for k, n in expected.items() if got[k] != n
    }
    assert not wrong, f"counts differ from one run's (last three, how many): {wrong}"
    joins = text.count(f"joined {app_id}: generation")
    if fault == "abortable":
        assert "rebuilding the tasks from changelogs" in text, "no transaction was aborted"
        # the member stayed in the group: the same member, and it joined only once
        assert still == members, f"members {members} before, {still} after"
        assert joins == 1, f"the app joined its group {joins} times"
    else:
        assert "the producer was fenced" in text, "the producer was not fenced"
        assert joins >= 2, "the app did not join its group again"
