"""Restarts of Sluice apps over big changelogs: to RUNNING after an empty state directory, a clean
stop and a ``kill -9``, with the process's peak RSS; for ``bench/streams.py``.

Two datasets, each a compacted one-partition changelog filled before anything is timed:

* **keys**: the restore benchmark's ``bench-restore-counts-changelog`` (``--restore-keys``
  distinct keys ``k0000000``…, JSON int values), restored into a ``count`` store;
* **window entries**: ``bench-wrestore-window-counts-changelog``, ``--window-entries`` entries
  as ``--window-entries / 100`` keys ``w000000``… × 100 one-minute windows, in Sluice's window
  changelog layout (key bytes + 8-byte big-endian window start, JSON int value, timestamp = the
  window start; ``streams/state/window.py``), written window after window as a pipeline would,
  into a windowed ``count`` store whose retention (1 day) keeps them all.

Per dataset, with RocksDB stores, in one state directory (``_restart_app.py`` is the app):

1. **empty state directory**: everything is restored; the app then stops cleanly (commit,
   checkpoint, LeaveGroup);
2. **after a clean stop**: the checkpoint says the store is up to date, nothing is restored; the
   app then kills itself (SIGKILL) at once, before any commit, so no checkpoint is left;
3. **after kill -9**: local state and no checkpoint: the store is wiped and restored whole; the
   parent waited the session timeout (6 s) first, so that the dead member is out of the group
   and the join does not wait for it.

And once with in-memory stores from an empty state directory (for the window entries: the RSS
comparison). Each figure is the app's own time from ``App.start()`` to the stream thread's state
RUNNING; "process" is the time from spawning it to its report (interpreter start and imports
included). Peak RSS: psutil's RSS of the process sampled every 50 ms by the parent over its
whole life, and the kernel's own peak (``ru_maxrss``) reported by the app.
"""

from __future__ import annotations

import json
import select
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _clients import Workload, bench_producer
from _streams_runs import BENCH, Context, stop_group, tail

WINDOW_APP = "bench-wrestore"
WINDOW_CHANGELOG = f"{WINDOW_APP}-window-counts-changelog"
WINDOWS = 100
WINDOW_MS = 60_000
SESSION_TIMEOUT_S = 6.0
SAMPLE_EVERY_S = 0.05
AFTER = ("empty state directory", "clean stop", "kill -9")


@dataclass
class Restart:
    dataset: str  # "keys" or "window entries"
    entries: int
    stores: str
    after: str  # one of AFTER
    seconds: float = 0.0  # App.start() until RUNNING
    restored: int = 0
    phase_seconds: float = float("nan")  # the runtime's own restore figure
    process_seconds: float = 0.0
    rss_at_running: int = 0
    peak_rss: int = 0  # psutil, sampled
    max_rss: int = 0  # ru_maxrss, from the app
    error: str = ""


def window_base_ms() -> int:
    """The first window's start: a minute boundary three hours ago (so the windows are past)."""
    now = int(time.time() * 1000) - 3 * 3_600_000
    return now - now % WINDOW_MS


def window_value(key_number: int, window: int) -> int:
    """The count written for ``w<key_number>`` in window number ``window``."""
    return (key_number + window) % 1000 + 1


def window_key(key_number: int) -> str:
    return f"w{key_number:06d}"


def produce_window_changelog(bootstrap: str, topic: str, entries: int, base_ms: int) -> None:
    """``entries`` window entries: ``entries // WINDOWS`` keys × ``WINDOWS`` windows."""
    keys = max(entries // WINDOWS, 1)
    pack = struct.Struct(">q").pack
    producer, failed = bench_producer(Workload(bootstrap, topic, 0, entries, 900.0))
    produce, poll = producer.produce, producer.poll
    deadline = time.monotonic() + 900
    names = [window_key(k).encode() for k in range(keys)]
    for w in range(WINDOWS):
        start = base_ms + w * WINDOW_MS
        suffix = pack(start)
        for k, name in enumerate(names):
            value = b"%d" % window_value(k, w)
            while True:
                try:
                    produce(topic, value, name + suffix, timestamp=start)
                    break
                except BufferError:
                    poll(0.005)
        poll(0)
        if time.monotonic() > deadline:
            raise TimeoutError(f"producing the window changelog took over 900 s (window {w})")
    left = producer.flush(120)
    if left or failed:
        raise RuntimeError(f"{left} window changelog records unacknowledged, {len(failed)} failed")


def _run(
    ctx: Context,
    result: Restart,
    kind: str,
    app: str,
    state_dir: Path,
    stop: str,
    check: list[str],
) -> Restart:
    import psutil

    log_path = ctx.workdir / f"restart-{kind}-{result.stores}-{AFTER.index(result.after)}.log"
    command = [
        sys.executable,
        str(BENCH / "_restart_app.py"),
        kind,
        "--bootstrap",
        ctx.bootstrap,
        "--group",
        app,
        "--state-dir",
        str(state_dir),
        "--stores",
        result.stores,
        "--stop",
        stop,
        "--session-timeout-ms",
        str(int(SESSION_TIMEOUT_S * 1000)),
        *check,
    ]
    with log_path.open("wb") as log:
        began = time.monotonic()
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, cwd=ctx.workdir, start_new_session=True
        )
    line = b""
    peak = 0
    try:
        watched = psutil.Process(proc.pid)
        assert proc.stdout is not None
        deadline = began + ctx.timeout
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                peak = max(peak, watched.memory_info().rss)
            except psutil.Error:
                break
            if not line:
                ready, _, _ = select.select([proc.stdout], [], [], SAMPLE_EVERY_S)
                if ready:
                    line = proc.stdout.readline()
                    result.process_seconds = time.monotonic() - began
            else:
                time.sleep(SAMPLE_EVERY_S)  # closing: keep sampling until it exits
        if not line and proc.stdout is not None:
            line = proc.stdout.readline()
    finally:
        stop_group(proc)
    result.peak_rss = peak
    try:
        report = json.loads(line)
        result.seconds = float(report["seconds"])
        result.restored = int(report["restored"])
        result.phase_seconds = float(report["phase_seconds"])
        result.rss_at_running = int(report["rss"])
        result.max_rss = int(report["max_rss"])
    except (ValueError, KeyError):
        result.error = f"no report; log: {tail(log_path)}"
    return result


def run_series(
    ctx: Context,
    dataset: str,
    entries: int,
    *,
    memory: bool,
    base_ms: int = 0,
) -> list[Restart]:
    """The three RocksDB restarts of ``dataset`` (``keys`` or ``window entries``) and, if
    ``memory``, one in-memory start from an empty state directory."""
    if dataset == "keys":
        kind, app = "count", "bench-restore"
        check = [
            "--check-key",
            f"k{entries - 1:07d}",
            "--check-value",
            str((entries - 1) % 1000 + 1),
        ]
    else:
        kind, app = "window", WINDOW_APP
        last_key, last_window = max(entries // WINDOWS, 1) - 1, WINDOWS - 1
        check = [
            "--check-key",
            window_key(last_key),
            "--check-start",
            str(base_ms + last_window * WINDOW_MS),
            "--check-value",
            str(window_value(last_key, last_window)),
        ]
    out: list[Restart] = []
    state = ctx.workdir / f"restart-{kind}-rocksdb"
    for after, stop in zip(AFTER, ("clean", "kill", "clean"), strict=True):
        if after == "kill -9":
            time.sleep(SESSION_TIMEOUT_S + 1.0)  # the killed member leaves the group
        r = _run(ctx, Restart(dataset, entries, "rocksdb", after), kind, app, state, stop, check)
        out.append(r)
        if r.error:
            break
    if memory:
        state = ctx.workdir / f"restart-{kind}-memory"
        r = Restart(dataset, entries, "memory", AFTER[0])
        out.append(_run(ctx, r, kind, app, state, "clean", check))
    return out
