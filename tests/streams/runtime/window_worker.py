"""A Streams app with persistent window and session stores, run as its own process by
``test_window_restart.py`` (``python window_worker.py ARGS``), or built in the test process.

Events (keyed) are collected per key in 10-second windows and in sessions (2-second gap); each
aggregate is the sorted list of the event ids it holds, so that replaying an event after a crash
(at-least-once) leaves it unchanged. A minute of grace keeps every window open for the whole
run: what a restarted instance reprocesses always finds its window in the store::

    python window_worker.py BOOTSTRAP APP_ID GUARANTEE STATE_DIR EVENTS WINDOWS SESSIONS
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from sluice.dsl import App, SessionWindows, TimeWindows


def _add(key: Any, event: dict[str, Any], ids: list[int]) -> list[int]:
    return sorted({*ids, event["id"]})


def _merge(key: Any, a: list[int], b: list[int]) -> list[int]:
    return sorted({*a, *b})


def build(argv: list[str]) -> App:
    """The app, from the command line."""
    bootstrap, app_id, guarantee, state_dir, events, windows, sessions = argv
    app = App(
        app_id,
        bootstrap,
        processing_guarantee=guarantee,  # type: ignore[arg-type]
        stores="rocksdb",
        state_dir=state_dir,
        commit_interval_ms=200,
        session_timeout_ms=6000,
        transaction_timeout_ms=5000,
    )
    grouped = app.stream(events).group_by_key()
    grouped.windowed_by(TimeWindows.of("10s").grace("1m")).aggregate(
        list, _add, name="windows"
    ).to_stream().to(windows)
    grouped.windowed_by(SessionWindows.with_inactivity_gap("2s").grace("1m")).aggregate(
        list, _add, merger=_merge, name="sessions"
    ).to_stream().to(sessions)
    return app


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(sys.argv[1:]).run()
