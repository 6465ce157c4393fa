"""Revenue per customer tier and minute: a stream–table join, a re-grouping, a windowed
aggregation and suppression, as in the README's shop example.

Inputs (keys are customer ids, values JSON):

- ``orders``: a stream, ``{"id": "o1", "amount": 30.0}``; refunds (amount <= 0) are left out;
- ``customers``: a table (the latest value per customer), ``{"name": "Alice", "tier": "gold"}``.

Each order is joined with its customer's row (orders of unknown customers are dropped: an inner
join), re-keyed by tier (through ``shop-analytics-by-tier-repartition``) and summed per tier in
one-minute windows that accept orders up to ten seconds late. Suppression holds each window's
total back until the window has closed (stream time past its end plus grace), so
``revenue-by-tier`` gets one final record per tier and minute: key
``{"key": "gold", "window": {"start": ms, "end": ms}}``, value the total.

Run it with ``python examples/shop_revenue/app.py [BOOTSTRAP]`` (default ``SLUICE_BOOTSTRAP``,
then ``localhost:9092``); ``produce_sample.py`` creates the topics and writes sample data.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from sluice.dsl import App, TimeWindows


def build(
    bootstrap: str,
    *,
    application_id: str = "shop-analytics",
    orders_topic: str = "orders",
    customers_topic: str = "customers",
    output_topic: str = "revenue-by-tier",
    **settings: Any,
) -> App:
    """The pipeline; ``settings`` are :class:`~sluice.dsl.App` keyword arguments."""
    # the record cache forwards the windows' totals at each commit: commit every second so that
    # the sample's results show at once (Kafka's default is 30 s)
    settings.setdefault("commit_interval_ms", 1000)
    app = App(application_id, bootstrap, **settings)
    orders = app.stream(orders_topic)
    customers = app.table(customers_topic, name="customers")
    revenue = (
        orders.filter(lambda key, order: order["amount"] > 0)
        .join(customers, lambda order, customer: {**order, "tier": customer["tier"]})
        .group_by(lambda key, order: order["tier"], name="by-tier")
        .windowed_by(TimeWindows.of("1m").grace("10s"))
        .aggregate(lambda: 0.0, lambda key, order, total: total + order["amount"], name="revenue")
        .suppress_until_window_closes(name="revenue-final")
    )
    revenue.to_stream().to(output_topic)
    return app


def main(argv: list[str]) -> None:
    bootstrap = argv[1] if len(argv) > 1 else os.environ.get("SLUICE_BOOTSTRAP", "localhost:9092")
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(bootstrap).run()


if __name__ == "__main__":
    main(sys.argv)
