"""The quickstart's shop: customers in a SQLite table, orders appended to a JSON-lines file.

    python generate.py --dir .sluice/quickstart [--rate 5] [--count N]

Creates ``<dir>/shop.db`` with six customers (gold, silver and bronze tiers) if it does not
exist, waits until the ``customers`` topic holds them (read by ``jdbc-source``, so that the
Streams app knows every customer before the first order), then appends orders to
``<dir>/orders.jsonl`` — ``{"id": "o7", "customer_id": 2, "amount": 14.5, "ts": ms}`` — at
``--rate`` per second, up to ``--count`` orders in all (default: no end). Run again, it
continues after the orders already in the file. The broker is ``SLUICE_BOOTSTRAP``
(``sluice up`` sets it).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from sluice.client_properties import load_client_properties

CUSTOMERS = [
    (1, "Alice", "gold"),
    (2, "Bob", "silver"),
    (3, "Carol", "bronze"),
    (4, "Dave", "gold"),
    (5, "Erin", "silver"),
    (6, "Frank", "bronze"),
]


def amount(number: int) -> float:
    """The amount of order ``number``: 5.00 to 54.50, the same on every run."""
    return 5 + (number * 37 % 100) / 2


def create_customers(database: Path) -> None:
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " tier TEXT NOT NULL, updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)"
        )
        db.executemany(
            "INSERT OR IGNORE INTO customers (id, name, tier) VALUES (?, ?, ?)", CUSTOMERS
        )


def client_security() -> dict[str, str]:
    """The client settings ``sluice up`` gives on a secured broker (``--secure``): Kafka's
    client properties file named by ``SLUICE_CLIENT_PROPERTIES``, as librdkafka's keys."""
    path = os.environ.get("SLUICE_CLIENT_PROPERTIES")
    return load_client_properties(Path(path)).config if path else {}


def wait_for_customers(bootstrap: str, timeout: float = 180.0) -> None:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "quickstart-generator", **client_security()}
    )
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition("customers", 0), 5)
            except Exception:  # the topic or the broker is not there yet
                high = 0
            if high >= len(CUSTOMERS):
                return
            time.sleep(1)
        sys.exit(f"the customers did not reach the topic in {timeout:.0f} s")
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(".sluice/quickstart"))
    parser.add_argument(
        "--rate",
        type=float,
        default=float(os.environ.get("QUICKSTART_RATE", "5")),
        help="orders per second",
    )
    parser.add_argument("--count", type=int, default=int(os.environ.get("QUICKSTART_ORDERS", "0")))
    options = parser.parse_args()
    options.dir.mkdir(parents=True, exist_ok=True)
    create_customers(options.dir / "shop.db")
    wait_for_customers(os.environ.get("SLUICE_BOOTSTRAP", "localhost:9092"))
    orders = options.dir / "orders.jsonl"
    number = sum(1 for _ in orders.open()) if orders.exists() else 0
    print(f"{number} orders already written; writing more at {options.rate}/s", flush=True)
    with orders.open("a", encoding="utf-8") as out:
        while not options.count or number < options.count:
            number += 1
            order = {
                "id": f"o{number}",
                "customer_id": number % len(CUSTOMERS) + 1,
                "amount": amount(number),
                "ts": int(time.time() * 1000),
            }
            out.write(json.dumps(order) + "\n")
            out.flush()
            time.sleep(1 / options.rate)
    # done: exit 0, which `sluice up` shows as "completed" (processes restart on failure only)
    print(f"{number} orders written", flush=True)


if __name__ == "__main__":
    main()
