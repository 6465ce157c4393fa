"""The Streams app of ``test_task_corrupted.py``, run as its own process::

    python corruption_worker.py BOOTSTRAP APP_ID STATE_DIR INPUT ECHO COUNTS PAUSE_DIR TXN_MS

Every input record is written to ECHO as it came, then counted per key (a RocksDB store, no
record cache: one count per record) into COUNTS. The first time it meets a record whose value
has ``"pause": true``, after writing it to ECHO, the app stalls as a slow call would: it
writes ``PAUSE_DIR/paused`` and waits (at most a minute) for ``PAUSE_DIR/resume``; the first
time it meets one with ``"settle": true`` it stalls for a second. Its producer gives up on a
record after ``MESSAGE_TIMEOUT_MS``; its transactions time out after ``TXN_MS``.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

from sluice.dsl import App

MESSAGE_TIMEOUT_MS = 1000
"""The producer's ``message.timeout.ms``: a record not acknowledged by then fails."""
RESUME_WAIT_S = 60.0
SETTLE_S = 1.0


def build(argv: list[str]) -> App:
    """The app, from the command line."""
    bootstrap, app_id, state_dir, source, echo, counts, pause_dir, txn_ms = argv
    app = App(
        app_id,
        bootstrap,
        processing_guarantee="exactly_once_v2",
        stores="rocksdb",
        state_dir=state_dir,
        commit_interval_ms=200,
        session_timeout_ms=30_000,
        transaction_timeout_ms=int(txn_ms),
        statestore_cache_max_bytes=0,  # every count is written: the test checks each one
        **{"producer.message.timeout.ms": MESSAGE_TIMEOUT_MS},
    )
    paused = Path(pause_dir) / "paused"
    resume = Path(pause_dir) / "resume"
    settled = Path(pause_dir) / "settled"

    def stall_once(key: Any, value: Any) -> None:
        if value.get("settle") and not settled.exists():
            settled.touch()
            time.sleep(SETTLE_S)
        if not value.get("pause") or paused.exists():
            return
        paused.touch()
        deadline = time.monotonic() + RESUME_WAIT_S
        while not resume.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    records = app.stream(source)
    records.to(echo)  # first: each record is sent to ECHO before the stall
    records.peek(stall_once).group_by_key().count(name="counts", caching=False).to_stream().to(
        counts
    )
    return app


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(sys.argv[1:]).run()
