"""A Streams app run as its own process by the fail-over tests (``python worker.py ARGS``).

Orders (keyed by customer) are joined with the customers table, written out, and summed per
customer in 10-second windows (the aggregate also lists the order ids it counted)::

    python worker.py BOOTSTRAP APP_ID GUARANTEE STATE_DIR ORDERS CUSTOMERS ENRICHED TOTALS
"""

from __future__ import annotations

import logging
import sys

from sluice.dsl import App, TimeWindows


def build(argv: list[str]) -> App:
    """The app, from the command line."""
    bootstrap, app_id, guarantee, state_dir, orders, customers, enriched, totals = argv
    app = App(
        app_id,
        bootstrap,
        processing_guarantee=guarantee,  # type: ignore[arg-type]
        stores="rocksdb",
        state_dir=state_dir,
        commit_interval_ms=200,
        session_timeout_ms=6000,
        transaction_timeout_ms=5000,
        statestore_cache_max_bytes=0,  # the test checks every running total
    )
    joined = app.stream(orders).join(
        app.table(customers, name="customers"),
        lambda order, customer: {**order, "tier": customer["tier"]},
    )
    joined.to(enriched)
    (
        joined.group_by_key()
        # grace: under at-least-once, records reprocessed after a kill must find their window
        # although the restored store saw later ones (docs/streams.md, Processing guarantees)
        .windowed_by(TimeWindows.of("10s").grace("60s"))
        .aggregate(
            lambda: {"sum": 0, "ids": []},
            lambda key, order, total: {
                "sum": total["sum"] + order["amount"],
                "ids": [*total["ids"], order["id"]],
            },
            name="totals",
        )
        .to_stream()
        .to(totals)
    )
    return app


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(sys.argv[1:]).run()
