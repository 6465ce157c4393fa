"""Sample data for the shop revenue example: creates the topics, writes customers, then orders.

    python examples/shop_revenue/produce_sample.py [BOOTSTRAP] [--partitions N] [--base-ms MS]

The bootstrap server comes from the argument, else ``SLUICE_BOOTSTRAP``, else
``localhost:9092``. ``orders``, ``customers`` and ``revenue-by-tier`` are created with
``--partitions`` partitions (default 1) unless they exist. Orders carry event times over three
minutes starting at ``--base-ms`` (default: the start of the minute five minutes ago), so the
one-minute windows of the app fall on whole minutes of the clock.

The orders, in the order they are written (seconds after the base):

=====  ========  ======  =======  ==========================================================
order  customer  amount  second   what it shows
=====  ========  ======  =======  ==========================================================
o1     alice      30.0        5
o2     bob        12.5       12
o3     carol      20.0       20
o4     dave       -5.0       31   a refund: filtered out
o5     dave        8.0       40
o6     zoe        99.0       45   no such customer: the inner join drops it
o7     erin        7.5       58
o8     alice      10.0       62
o9     bob         4.5       65
o10    erin        3.0       55   10 s late, within grace: still counted in minute 0
o11    carol      15.0       90   stream time 90 s: minute 0 closes (60 s + 10 s grace)
o12    dave        2.0      118
o13    bob         6.0      125   minute 2 begins; minute 1 is still open (until 130 s)
o14    alice       5.0       50   too late, minute 0 has closed: dropped
o15    carol      25.0      131   stream time 131 s: minute 1 closes
=====  ========  ======  =======  ==========================================================

Expected in ``revenue-by-tier``: minute 0 gold 50.0, silver 23.0, bronze 8.0; minute 1 gold 25.0,
silver 4.5, bronze 2.0. Minute 2 (gold 25.0, silver 6.0) stays open until an order at or after
its end plus grace arrives.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

Row = tuple[str, dict[str, Any], int]  # key, JSON value, timestamp (ms)

CUSTOMERS = {
    "alice": {"name": "Alice", "tier": "gold"},
    "bob": {"name": "Bob", "tier": "silver"},
    "carol": {"name": "Carol", "tier": "gold"},
    "dave": {"name": "Dave", "tier": "bronze"},
    "erin": {"name": "Erin", "tier": "silver"},
}

# (order id, customer, amount, seconds after the base), in the order they are written
ORDERS = [
    ("o1", "alice", 30.0, 5),
    ("o2", "bob", 12.5, 12),
    ("o3", "carol", 20.0, 20),
    ("o4", "dave", -5.0, 31),
    ("o5", "dave", 8.0, 40),
    ("o6", "zoe", 99.0, 45),
    ("o7", "erin", 7.5, 58),
    ("o8", "alice", 10.0, 62),
    ("o9", "bob", 4.5, 65),
    ("o10", "erin", 3.0, 55),
    ("o11", "carol", 15.0, 90),
    ("o12", "dave", 2.0, 118),
    ("o13", "bob", 6.0, 125),
    ("o14", "alice", 5.0, 50),
    ("o15", "carol", 25.0, 131),
]


def default_base_ms() -> int:
    """The start of the minute five minutes ago, in ms."""
    return (int(time.time()) // 60 - 5) * 60_000


def customer_rows(base_ms: int) -> list[Row]:
    """The customers table, every row stamped with the base time."""
    return [(key, value, base_ms) for key, value in CUSTOMERS.items()]


def order_rows(base_ms: int) -> list[Row]:
    """The orders, keyed by customer, in the order they are written."""
    return [
        (customer, {"id": order, "amount": amount}, base_ms + second * 1000)
        for order, customer, amount, second in ORDERS
    ]


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    """Create ``topics`` with ``partitions`` partitions; existing ones are left as they are."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=10).topics
    for topic in topics:
        if topic in existing:
            have = len(existing[topic].partitions)
            print(f"topic {topic} exists ({_partitions(have)})", file=sys.stderr)
    wanted = [NewTopic(t, partitions, 1) for t in topics if t not in existing]
    if wanted:
        for topic, future in admin.create_topics(wanted).items():
            future.result(30)
            print(f"created topic {topic} ({_partitions(partitions)})", file=sys.stderr)


def _partitions(n: int) -> str:
    return "1 partition" if n == 1 else f"{n} partitions"


def produce(bootstrap: str, topic: str, rows: list[Row]) -> None:
    """Write ``rows`` to ``topic`` and wait until every one is acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value, timestamp in rows:
        # a real event time: librdkafka would read timestamp 0 as "now"
        producer.produce(topic, json.dumps(value).encode(), key.encode(), timestamp=timestamp)
    remaining = producer.flush(30)
    if remaining:
        raise SystemExit(f"error: {remaining} records to {topic} not acknowledged within 30 s")
    print(f"wrote {len(rows)} records to {topic}", file=sys.stderr)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "bootstrap",
        nargs="?",
        default=os.environ.get("SLUICE_BOOTSTRAP", "localhost:9092"),
        help="HOST:PORT of a broker (default: $SLUICE_BOOTSTRAP or localhost:9092)",
    )
    parser.add_argument("--partitions", type=int, default=1, help="of the topics it creates")
    parser.add_argument("--base-ms", type=int, default=None, help="event time of minute 0")
    parser.add_argument("--orders", default="orders", help="the orders topic")
    parser.add_argument("--customers", default="customers", help="the customers topic")
    parser.add_argument("--output", default="revenue-by-tier", help="the app's output topic")
    args = parser.parse_args(argv)
    base_ms = default_base_ms() if args.base_ms is None else args.base_ms
    create_topics(args.bootstrap, [args.orders, args.customers, args.output], args.partitions)
    # Customers first: the table should know them before their orders are joined.
    produce(args.bootstrap, args.customers, customer_rows(base_ms))
    produce(args.bootstrap, args.orders, order_rows(base_ms))
    print(f"minute 0 starts at {base_ms}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
