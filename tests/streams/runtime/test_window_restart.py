"""Persistent window and session stores across restarts: a clean stop leaves checkpoints, so
the next start restores nothing; after ``kill -9`` only the changelog records after the last
checkpoint are restored (at-least-once), or, under exactly-once, where a running task keeps no
checkpoint, the stores are wiped and restored whole (Kafka's rule, as for key-value stores).
Every time the results are those of one uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

from sluice import clients
from sluice.dsl import App
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import produce, read, wait_for
from tests.streams.runtime.window_worker import build

WORKER = Path(__file__).with_name("window_worker.py")
KEYS = 16
PARTITIONS = 2
FIRST, SECOND = range(0, 3_000), range(3_000, 6_000)
STORES = ("windows", "sessions")

Records = list[tuple[Any, Any, int]]


def _timestamp(i: int) -> int:
    # a 5-second pause between the two halves: every key starts a second session
    return 1_000 + i * 5 + (5_000 if i >= SECOND.start else 0)


def _events(ids: range) -> list[tuple[str, dict[str, Any], int]]:
    return [(f"k{i % KEYS}", {"id": i}, _timestamp(i)) for i in ids]


def _expected(ids: range) -> tuple[dict[Any, list[int]], dict[Any, list[int]]]:
    """What one uninterrupted run ends with: ids per (key, window start) and per (key, session
    start, session end)."""
    windows: dict[Any, set[int]] = defaultdict(set)
    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for key, event, timestamp in _events(ids):
        windows[(key, timestamp - timestamp % 10_000)].add(event["id"])
        by_key[key].append((timestamp, event["id"]))
    sessions: dict[Any, list[int]] = {}
    for key, seen in by_key.items():
        run: list[tuple[int, int]] = []
        for timestamp, event_id in sorted(seen):
            if run and timestamp - run[-1][0] > 2_000:
                sessions[(key, run[0][0], run[-1][0])] = sorted(i for _, i in run)
                run = []
            run.append((timestamp, event_id))
        sessions[(key, run[0][0], run[-1][0])] = sorted(i for _, i in run)
    return {w: sorted(ids) for w, ids in windows.items()}, sessions


def _final(records: Records, *, sessions: bool) -> dict[Any, Any]:
    latest: dict[Any, Any] = {}
    for key, value, _ in records:
        window = key["window"]
        bounds = (window["start"], window["end"]) if sessions else (window["start"],)
        latest[(key["key"], *bounds)] = value
    return {w: v for w, v in latest.items() if v is not None}


def _read_results(
    bootstrap: str, windows: str, sessions: str, ids: range, committed: bool
) -> tuple[dict[Any, Any], dict[Any, Any]]:
    expected_windows, expected_sessions = _expected(ids)
    got_windows = _final(
        read(
            bootstrap,
            windows,
            until=lambda rs: _final(rs, sessions=False) == expected_windows,
            committed_only=committed,
            explain=lambda rs: f"{len(_final(rs, sessions=False))} windows",
        ),
        sessions=False,
    )
    got_sessions = _final(
        read(
            bootstrap,
            sessions,
            until=lambda rs: _final(rs, sessions=True) == expected_sessions,
            committed_only=committed,
            explain=lambda rs: f"sessions: {sorted(_final(rs, sessions=True))[:4]}",
        ),
        sessions=True,
    )
    return got_windows, got_sessions


def _changelog_offsets(bootstrap: str, app_id: str) -> dict[tuple[str, int], tuple[int, int]]:
    """``(low, high)`` watermarks of every changelog partition of the app's two stores."""
    consumer = clients.consumer(bootstrap)
    try:
        found = {}
        for store in STORES:
            topic = f"{app_id}-{store}-changelog"
            for partition in range(PARTITIONS):
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=10
                )
                found[(topic, partition)] = (int(low), int(high))
        return found
    finally:
        consumer.close()


def _changelog_records(bootstrap: str, app_id: str) -> int:
    """Committed records in the changelogs of the app's two stores (what a full restore reads:
    the offsets count transaction markers too)."""
    ends = {tp: high for tp, (_, high) in _changelog_offsets(bootstrap, app_id).items()}
    consumer = clients.consumer(
        bootstrap, **{"isolation.level": "read_committed", "enable.partition.eof": True}
    )
    count, pending = 0, {tp for tp, high in ends.items() if high > 0}
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in pending])
    try:
        deadline = time.monotonic() + 30
        while pending and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.5):
                error = message.error()
                where = (str(message.topic()), int(message.partition() or 0))
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        pending.discard(where)
                    continue
                count += 1
    finally:
        consumer.close()
    assert not pending, f"changelog partitions {pending} not read to their end"
    return count


def _checkpoints(state_dir: Path, app_id: str) -> dict[tuple[str, int], int]:
    offsets: dict[tuple[str, int], int] = {}
    for path in (state_dir / app_id).glob("*/.checkpoint"):
        for name, offset in json.loads(path.read_text()).items():
            topic, _, partition = name.rpartition(":")
            offsets[(topic, int(partition))] = int(offset)
    return offsets


def _started(app: App) -> Any:
    app.start()
    runtime = app._runtime
    assert runtime is not None
    return runtime


def test_a_clean_restart_restores_nothing(shared_broker: BrokerProcess, tmp_path: Path) -> None:
    bootstrap = shared_broker.bootstrap
    events, windows, sessions = (create_topic(bootstrap, PARTITIONS) for _ in range(3))
    app_id = f"wrestart-{uuid.uuid4().hex[:8]}"
    args = [bootstrap, app_id, "exactly_once_v2", str(tmp_path), events, windows, sessions]
    first = build(args)
    _started(first)
    try:
        produce(bootstrap, events, _events(FIRST))
        _read_results(bootstrap, windows, sessions, FIRST, committed=True)
    finally:
        first.close()
    # a clean stop under exactly-once: every task wrote its checkpoint, at the changelog's end
    offsets = _changelog_offsets(bootstrap, app_id)
    assert _checkpoints(tmp_path, app_id) == {tp: high for tp, (_, high) in offsets.items()}
    segments = sorted(p.name for p in tmp_path.glob(f"{app_id}/*/windows/windows.*"))
    assert segments, "no segment directory of the window store on disk"
    second = build(args)
    runtime = _started(second)
    try:
        produce(bootstrap, events, _events(SECOND))
        got_windows, got_sessions = _read_results(
            bootstrap, windows, sessions, range(FIRST.start, SECOND.stop), committed=True
        )
        restored = runtime.metrics()["restored_records"]
    finally:
        second.close()
    assert restored == 0, f"{restored} records restored after a clean stop"
    assert (got_windows, got_sessions) == _expected(range(FIRST.start, SECOND.stop))


def test_after_kill_9_only_the_tail_after_the_checkpoint_is_restored(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    events, windows, sessions = (create_topic(bootstrap, PARTITIONS) for _ in range(3))
    app_id = f"wkill-{uuid.uuid4().hex[:8]}"
    args = [bootstrap, app_id, "at_least_once", str(tmp_path), events, windows, sessions]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    with open(tmp_path / "worker.log", "ab") as log:
        worker = subprocess.Popen(
            [sys.executable, str(WORKER), *args], stdout=log, stderr=subprocess.STDOUT, env=env
        )
    half = SECOND.start + len(SECOND) // 2
    try:
        produce(bootstrap, events, _events(FIRST))
        wait_for(
            lambda: (
                len(_checkpoints(tmp_path, app_id)) == len(STORES) * PARTITIONS
                and sum(_checkpoints(tmp_path, app_id).values()) > 0
            ),
            "a checkpoint of every store of both tasks, after some processing",
        )
        # Keep the checkpoint files of that moment: put back after the kill, they stand for a
        # crash between writing the stores and writing the checkpoint, so the tail is not empty.
        early = {path: path.read_text() for path in tmp_path.glob(f"{app_id}/*/.checkpoint")}
        saved = _checkpoints(tmp_path, app_id)
        produce(bootstrap, events, _events(range(SECOND.start, half)))
        wait_for(
            lambda: sum(_checkpoints(tmp_path, app_id).values()) > sum(saved.values()),
            "a later checkpoint",
        )
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    for path, text in early.items():
        path.write_text(text)
    offsets = _changelog_offsets(bootstrap, app_id)
    tail = sum(high - saved.get(tp, low) for tp, (low, high) in offsets.items())
    total = sum(high - low for low, high in offsets.values())
    assert 0 < tail < total, f"checkpoints {saved}, changelogs {offsets}"
    again = build(args)
    runtime = _started(again)
    try:
        produce(bootstrap, events, _events(range(half, SECOND.stop)))
        got_windows, got_sessions = _read_results(
            bootstrap, windows, sessions, range(FIRST.start, SECOND.stop), committed=False
        )
        restored = runtime.metrics()["restored_records"]
    finally:
        again.close()
    assert restored == tail, f"restored {restored} records; the tail was {tail} of {total}"
    assert (got_windows, got_sessions) == _expected(range(FIRST.start, SECOND.stop))


def test_after_kill_9_under_exactly_once_the_stores_are_wiped_and_restored_whole(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    events, windows, sessions = (create_topic(bootstrap, PARTITIONS) for _ in range(3))
    app_id = f"wkill-eos-{uuid.uuid4().hex[:8]}"
    args = [bootstrap, app_id, "exactly_once_v2", str(tmp_path), events, windows, sessions]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])}
    with open(tmp_path / "worker.log", "ab") as log:
        worker = subprocess.Popen(
            [sys.executable, str(WORKER), *args], stdout=log, stderr=subprocess.STDOUT, env=env
        )
    try:
        produce(bootstrap, events, _events(FIRST))
        _read_results(bootstrap, windows, sessions, FIRST, committed=True)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    # under exactly-once a running task has no checkpoint: local state cannot be trusted
    assert _checkpoints(tmp_path, app_id) == {}
    segments = list(tmp_path.glob(f"{app_id}/*/windows/windows.*"))
    assert segments, "the killed instance left no window segments to wipe"
    committed = _changelog_records(bootstrap, app_id)
    again = build(args)
    runtime = _started(again)
    try:
        produce(bootstrap, events, _events(SECOND))
        got_windows, got_sessions = _read_results(
            bootstrap, windows, sessions, range(FIRST.start, SECOND.stop), committed=True
        )
        restored = runtime.metrics()["restored_records"]
    finally:
        again.close()
    assert restored == committed, f"restored {restored} of {committed} changelog records"
    assert (got_windows, got_sessions) == _expected(range(FIRST.start, SECOND.stop))
