"""A Streams app that serves interactive queries, run as its own process by the tests
(``python query_worker.py BOOTSTRAP APP_ID STATE_DIR WORDS PORT``): words (keyed by word) are
counted (store ``counts``) and counted per 10-second window (store ``windowed``), with one
standby replica, the stores served over HTTP at ``127.0.0.1:PORT``."""

from __future__ import annotations

import logging
import sys

from sluice.dsl import App, TimeWindows


def build(argv: list[str]) -> App:
    """The app, from the command line."""
    bootstrap, app_id, state_dir, words, port = argv
    app = App(
        app_id,
        bootstrap,
        state_dir=state_dir,
        commit_interval_ms=100,
        session_timeout_ms=30_000,  # a killed instance stays in the group during the test
        num_standby_replicas=1,
        application_server=f"127.0.0.1:{port}",
        serve_queries=True,
    )
    stream = app.stream(words)
    stream.group_by_key().count(name="counts")
    stream.group_by_key().windowed_by(TimeWindows.of("10s")).count(name="windowed")
    return app


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(sys.argv[1:]).run()
