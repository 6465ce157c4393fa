"""A RocksDB window store holds more windows than memory comfortably would, in bounded RSS.

2 M entries (20 000 keys × 100 one-minute windows, all within retention) go through a
:class:`WindowStore` on the segmented RocksDB backend, in a process of its own
(``window_store_scale.py``) that samples its RSS through psutil after each flush.

The cap, measured on the development machine with this very script: the RocksDB store peaks at
about 90 MB (about 46 MB of it is the interpreter, sluice and rocksdict before the first put);
the in-memory store (``window_store_scale.py memory``) peaks at about 330 MB. The cap, 150 MB,
leaves RocksDB's memtables (8 MB, two per segment) and block cache room, and is less than half
of what the same entries take in memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MINUTE = 60_000
KEYS, WINDOWS = 20_000, 100
RSS_CAP = 150 * 2**20
SCRIPT = Path(__file__).with_name("window_store_scale.py")


def _value(i: int, window: int) -> int:
    return i * 1_000 + window


def test_two_million_window_entries_in_bounded_memory_with_old_segments_dropped(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "counts"
    env_path = str(Path(__file__).parents[2])
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "rocksdb", str(directory), str(KEYS), str(WINDOWS)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    peak = seen["peak_rss"]
    assert peak < RSS_CAP, f"peak RSS {peak >> 20} MB, over the {RSS_CAP >> 20} MB cap"
    for i in (0, KEYS // 3, KEYS - 1):
        name = f"key-{i:06d}"
        expected = [[w * MINUTE, _value(i, w)] for w in range(WINDOWS)]
        assert seen["fetched"][name] == expected, f"fetch_range of {name}"
        assert seen["points"][name] == [_value(i, 7), 7 * MINUTE + i % MINUTE]
    assert seen["in_one_window"] == KEYS
    # retention 100 min: segments of 50 min (Kafka's max(retention / 2, 60 s))
    assert seen["segments_before"] == ["counts.0", "counts.3000000"]
    # stream time 201 min: everything up to 101 min has expired, both old segments are gone
    assert seen["segments_after"] == ["counts.12000000"]
    assert seen["old_after_expiry"] == []
    # a clean reopen keeps the clock and the data: nothing expired comes back
    assert seen["reopened_observed"] == 201 * MINUTE
    assert seen["reopened_latest"] == -1
    assert seen["reopened_old"] is None
