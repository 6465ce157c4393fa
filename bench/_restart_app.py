"""A Sluice app started over a filled changelog, timed until RUNNING; for ``_streams_restarts.py``.

    python bench/_restart_app.py KIND --bootstrap HOST:PORT --group APP_ID --state-dir DIR \\
        --stores rocksdb|memory --stop clean|kill --check-key KEY [--check-start MS] \\
        --check-value N

``KIND`` is the app: ``count`` (``stream(restore-input).group_by_key().count(name="counts")``,
changelog ``<APP_ID>-counts-changelog``) or ``window`` (``windowed_by(TimeWindows.of("1m"))
.count(name="window-counts", retention="1d")``, changelog ``<APP_ID>-window-counts-changelog``;
the retention keeps every window the parent wrote). The input topic ``restore-input`` is empty:
the app does nothing but restore and wait.

Timed in this process from ``App.start()`` until the stream thread's state is ``RUNNING`` (its
tasks created and restored, the consumer assigned; polled every 2 ms), then the store is asked
for ``--check-key`` (in the window at ``--check-start`` for ``window``) and must answer
``--check-value``. One JSON line on stdout: ``seconds``, ``restored`` (records the runtime
restored), ``phase_seconds`` (the runtime's "restored N records ... in S s" figure, NaN when it
restored nothing), ``rss`` (bytes, at RUNNING) and ``max_rss`` (the process's peak, bytes).

``--stop clean`` then closes the app (commit, checkpoint, LeaveGroup). ``--stop kill`` sends
itself SIGKILL at once: no commit has happened yet (``commit_interval_ms`` is 60 s here) and the
task removed its checkpoint when it started, so the next start finds local state and no
checkpoint, as after a crash, and restores everything (Kafka Streams' rule).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import signal
import sys
import time
from typing import Any

DEADLINE_S = 900.0


class _PhaseLog(logging.Handler):
    """Keeps the runtime's "restored N records into M stores in S s" figure (``sluice.streams``)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.phase = float("nan")

    def emit(self, record: logging.LogRecord) -> None:
        found = re.match(r"restored \d+ records .* in ([\d.]+) s", record.getMessage())
        if found:
            self.phase = float(found[1])


def _app(args: argparse.Namespace) -> Any:
    from sluice.dsl import App, TimeWindows

    app = App(
        args.group,
        args.bootstrap,
        stores=args.stores,
        state_dir=args.state_dir,
        commit_interval_ms=60_000,  # no commit (and so no checkpoint) before --stop kill
        session_timeout_ms=args.session_timeout_ms,
        statestore_cache_max_bytes=0,
    )
    grouped = app.stream("restore-input").group_by_key()
    if args.kind == "count":
        grouped.count(name="counts")
    else:
        grouped.windowed_by(TimeWindows.of("1m")).count(name="window-counts", retention="1d")
    return app


def _check(app: Any, args: argparse.Namespace) -> None:
    if args.kind == "count":
        value = app.store("counts").get(args.check_key)
    else:
        found = app.store("window-counts").fetch(args.check_key, args.check_start, args.check_start)
        value = found[0][1] if found else None
    if value != args.check_value:
        raise RuntimeError(f"after restore {args.check_key!r} is {value!r}, not {args.check_value}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=("count", "window"))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--stores", choices=("rocksdb", "memory"), default="rocksdb")
    parser.add_argument("--stop", choices=("clean", "kill"), default="clean")
    parser.add_argument("--check-key", required=True)
    parser.add_argument("--check-start", type=int, default=0)
    parser.add_argument("--check-value", type=int, required=True)
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    args = parser.parse_args()

    import psutil

    phase = _PhaseLog()
    logger = logging.getLogger("sluice.streams")
    logger.setLevel(logging.INFO)
    logger.addHandler(phase)
    app = _app(args)
    start = time.perf_counter()
    app.start()
    deadline = time.monotonic() + DEADLINE_S
    runtime = app._runtime
    while runtime.state != "RUNNING":
        if runtime.state == "ERROR":
            raise RuntimeError(f"the app failed: {runtime.thread.error}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"not RUNNING within {DEADLINE_S:.0f}s")
        time.sleep(0.002)
    seconds = time.perf_counter() - start
    rss = psutil.Process().memory_info().rss
    try:
        _check(app, args)
        report = {
            "seconds": seconds,
            "restored": runtime.thread.restored,
            "phase_seconds": phase.phase,
            "rss": rss,
            "max_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }
        print(json.dumps(report), flush=True)
    finally:
        if args.stop == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        app.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
