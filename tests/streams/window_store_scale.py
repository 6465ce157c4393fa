"""Run by ``test_window_store_scale.py`` in a process of its own, so that its RSS is its own.

Writes ``KEYS × WINDOWS`` entries through a :class:`WindowStore` (one flush per window, as one
commit per window of stream time), samples RSS through psutil after each flush, checks reads, then
moves stream time past retention; prints what it saw as JSON::

    python window_store_scale.py rocksdb|memory DIRECTORY [KEYS WINDOWS]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import psutil

from sluice.serde import INT64, STRING
from sluice.streams.state.base import StoreContext
from sluice.streams.state.window import MemoryWindowBackend, WindowBackend, WindowStore

MINUTE = 60_000


def value(i: int, window: int) -> int:
    """What key ``i`` holds in window ``window``."""
    return i * 1_000 + window


def _store(kind: str, directory: Path, retention: int) -> WindowStore:
    backend: WindowBackend = MemoryWindowBackend()
    if kind == "rocksdb":
        from sluice.streams.state.rocksdb_window import RocksDBWindowBackend

        backend = RocksDBWindowBackend(STRING, INT64, retention)
    store = WindowStore(STRING, INT64, retention, backend=backend)
    store.logged = False
    store.init(StoreContext(None, 0, lambda *record: None, directory))
    return store


def _segments(directory: Path) -> list[str]:
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if p.is_dir())


def run(kind: str, directory: Path, keys: int, windows: int) -> dict[str, Any]:
    """The scenario; see the module docstring."""
    process = psutil.Process()
    retention = windows * MINUTE  # every window written is live at the end
    names = [f"key-{i:06d}" for i in range(keys)]
    store = _store(kind, directory, retention)
    baseline = process.memory_info().rss
    peak = baseline
    for window in range(windows):
        start = window * MINUTE
        put = store.put
        for i, name in enumerate(names):
            put(name, value(i, window), start, start + i % MINUTE)
        store.flush()
        peak = max(peak, process.memory_info().rss)
    samples = [0, keys // 3, keys - 1]
    fetched = {
        names[i]: [list(pair) for pair in store.fetch_range(names[i], 0, windows * MINUTE)]
        for i in samples
    }
    points = {names[i]: store.fetch_with_timestamp(names[i], 7 * MINUTE) for i in samples}
    in_one_window = sum(1 for _ in store.fetch_all(5 * MINUTE, 5 * MINUTE))
    before = _segments(directory)
    # stream time jumps: every window written so far passes retention
    later = (2 * windows + 1) * MINUTE
    store.put(names[0], -1, later, later)
    store.flush()
    after = _segments(directory)
    old_after_expiry = list(store.fetch_range(names[1], 0, windows * MINUTE))
    store.close()
    reopened = _store(kind, directory, retention)  # a clean restart: nothing restored
    result = {
        "baseline_rss": baseline,
        "peak_rss": peak,
        "fetched": fetched,
        "points": {k: None if v is None else list(v) for k, v in points.items()},
        "in_one_window": in_one_window,
        "segments_before": before,
        "segments_after": after,
        "old_after_expiry": old_after_expiry,
        "reopened_observed": reopened.observed_time,
        "reopened_latest": reopened.fetch(names[0], later),
        "reopened_old": reopened.fetch(names[1], (windows - 1) * MINUTE),
    }
    reopened.close()
    return result


if __name__ == "__main__":
    kind, directory, *sizes = sys.argv[1:]
    keys, windows = (int(n) for n in sizes) if sizes else (20_000, 100)
    print(json.dumps(run(kind, Path(directory), keys, windows)))
