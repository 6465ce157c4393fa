"""The quickstart's Streams app: revenue per customer tier per minute.

Orders (JSON lines from ``orders``) are joined with their customer (the global table of
``customers``, keyed by customer id), regrouped by tier and summed in one-minute windows of the
orders' own time (``ts``). Every update of a window goes to ``revenue-by-tier``, keyed
``tier@window_start``, valued ``{"tier", "window_start", "window_end", "revenue", "orders"}``;
``jdbc-sink`` upserts them into SQLite and ``spark-sink`` lands them as Parquet.

``sluice up`` runs it with ``SLUICE_BOOTSTRAP`` set; alone: ``python revenue.py``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from sluice.dsl import App, TimeWindows
from sluice.streams import Record


def order_time(record: Record, partition_time: int) -> int:
    """The order's own timestamp."""
    value = record.value
    return int(value["ts"]) if isinstance(value, dict) and "ts" in value else record.timestamp


def build(bootstrap: str) -> App:
    # exactly-once: a killed instance's uncommitted output is aborted, never counted twice
    app = App(
        "quickstart-revenue",
        bootstrap,
        commit_interval_ms=1000,
        processing_guarantee="exactly_once_v2",
    )
    orders = app.stream("orders", timestamp_extractor=order_time)
    customers = app.global_table("customers")
    revenue = (
        orders.join(
            customers,
            lambda order, customer: {**order, "tier": customer["tier"]},
            key_selector=lambda key, order: str(order["customer_id"]),
        )
        .group_by(lambda key, order: order["tier"])
        .windowed_by(TimeWindows.of("1m").grace("10s"))
        .aggregate(
            lambda: {"revenue": 0.0, "orders": 0},
            lambda tier, order, total: {
                "revenue": round(total["revenue"] + order["amount"], 2),
                "orders": total["orders"] + 1,
            },
        )
    )
    revenue.to_stream().map(row).to("revenue-by-tier")
    return app


def row(window: Any, total: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One row of the results table."""
    tier, start, end = window
    return f"{tier}@{start}", {
        "tier": tier,
        "window_start": start,
        "window_end": end,
        "revenue": total["revenue"],
        "orders": total["orders"],
    }


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    build(os.environ.get("SLUICE_BOOTSTRAP", "localhost:9092")).run()
