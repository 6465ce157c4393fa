"""The streams benchmark pipelines in Sluice's DSL, and the restore run; for ``bench/streams.py``.

    python bench/_sluice_pipelines.py PIPELINE --bootstrap HOST:PORT --topic IN --out OUT \\
        --group APP_ID --state-dir DIR [--stores rocksdb|memory]
    python bench/_sluice_pipelines.py restore --bootstrap HOST:PORT --topic IN --group APP_ID \\
        --state-dir DIR --last-key KEY --keys N [--stores rocksdb|memory]

Each pipeline emits one output record per input record it keeps, as the quixstreams and faust
versions do (the record cache is off, ``statestore_cache_max_bytes=0``: ``count()`` forwards
every update, as Kafka Streams does with its record cache off):

* ``filter``: ``filter(amount > 10).map_values(new dict).to(out)``;
* ``count``: ``group_by_key().count().to_stream().to(out)``;
* ``window``: ``group_by_key().windowed_by(TimeWindows.of("1m")).count().to_stream().to(out)``.

``App.run()`` processes until SIGTERM.

``restore``: an app whose count store is named ``counts`` (so its changelog is
``<APP_ID>-counts-changelog``, which the parent has filled with N keys) is started with
``App.start()`` on an empty state directory; the time from that call until the runtime logs
"restored N records into M stores in S s" (logger ``sluice.streams``, after the last changelog
record is applied and the stores flushed) is printed as one JSON line with the runtime's own
S (the restore phase alone, after topic checks and the group join), once the store has answered
for ``--last-key`` with the value the parent wrote; then the app is closed.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from typing import Any

from _pipeline_cli import pipeline_parser

RESTORE_DEADLINE_S = 300.0


def _pipeline(app: Any, pipeline: str, topic: str, out: str) -> None:
    from sluice.dsl import TimeWindows

    stream = app.stream(topic)
    if pipeline == "filter":
        stream.filter(lambda k, v: v["amount"] > 10).map_values(
            lambda v: {"user": v["user"], "amount_cents": int(v["amount"] * 100)}
        ).to(out)
    elif pipeline == "count":
        stream.group_by_key().count(name="counts").to_stream().to(out)
    else:
        windowed = stream.group_by_key().windowed_by(TimeWindows.of("1m"))
        windowed.count(name="window-counts").to_stream().to(out)


class _Restored(logging.Handler):
    """Catches the runtime's "restored N records into M stores in S s" line (``sluice.streams``)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.done = threading.Event()
        self.at = 0.0
        self.message = ""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("restored ") and not self.done.is_set():
            self.at = time.perf_counter()
            self.message = message
            self.done.set()


def _restore(app: Any, last_key: str, keys: int) -> None:
    """Time ``App.start()`` until the runtime reports its stores restored; check the last key."""
    restored = _Restored()
    logger = logging.getLogger("sluice.streams")
    logger.setLevel(logging.INFO)
    logger.addHandler(restored)
    start = time.perf_counter()
    app.start()
    try:
        deadline = time.monotonic() + RESTORE_DEADLINE_S
        while not restored.done.wait(0.01):
            if app._runtime is not None and app._runtime.state == "ERROR":
                raise RuntimeError(f"the app failed: {app._runtime.thread.error}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no restore reported within {RESTORE_DEADLINE_S:.0f}s")
        seconds = restored.at - start
        found = re.search(r"restored (\d+) records .* in ([\d.]+) s", restored.message)
        records, phase = (int(found[1]), float(found[2])) if found else (0, float("nan"))
        expected = (keys - 1) % 1000 + 1  # the parent's value for key number keys - 1
        value = app.store("counts").get(last_key)
        if value != expected:
            raise RuntimeError(f"after restore {last_key!r} is {value!r}, not {expected}")
        report = {
            "restore_seconds": seconds,
            "restore_phase_seconds": phase,
            "records": records,
            "keys": keys,
        }
        print(json.dumps(report), flush=True)
    finally:
        app.close()


def main() -> None:
    parser = pipeline_parser(extra_pipelines=("restore",))
    parser.add_argument("--stores", choices=("rocksdb", "memory"), default="rocksdb")
    parser.add_argument("--last-key", default="")
    parser.add_argument("--keys", type=int, default=0)
    args = parser.parse_args()

    from sluice.dsl import App

    app = App(
        args.group,
        args.bootstrap,
        stores=args.stores,
        state_dir=args.state_dir,
        commit_interval_ms=int(args.commit_interval * 1000),
        statestore_cache_max_bytes=0,  # one output per input, as the other versions
    )
    if args.pipeline == "restore":
        app.stream(args.topic).group_by_key().count(name="counts")
        _restore(app, args.last_key, args.keys)
        sys.exit(0)
    _pipeline(app, args.pipeline, args.topic, args.out)
    app.run()


if __name__ == "__main__":
    main()
