"""A concurrent write workload on a few PostgreSQL tables, and row-for-row digests to compare a
source database with its copies (PostgreSQL or SQLite).

The workload (:class:`Workload`) runs threads that each do a bounded number of transactions:
inserts (an order with its lines in one transaction), updates, primary-key changes, deletes,
and — once, half-way — a ``TRUNCATE`` of ``scratch`` followed by new rows. Ids come from
disjoint per-thread ranges, so primary-key changes never collide.

:func:`digests` reads a table ordered by primary key, normalises each value (decimals to two
places, booleans to 0/1 — SQLite stores them so —, everything else as is) and hashes the rows
of each range of 1,000 first-key values: two copies are equal when their digests are.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import psycopg2
import sqlalchemy

SCHEMA = """
CREATE TABLE customers (
    id integer PRIMARY KEY, name text NOT NULL, email text, vip boolean NOT NULL DEFAULT false
);
CREATE TABLE orders (
    id bigint PRIMARY KEY, customer_id integer NOT NULL, amount numeric(12, 2) NOT NULL,
    status text NOT NULL
);
CREATE TABLE order_lines (
    order_id bigint, line_no integer, sku text NOT NULL, qty integer NOT NULL,
    PRIMARY KEY (order_id, line_no)
);
CREATE TABLE scratch (id integer PRIMARY KEY, note text);
"""

TABLES = {
    "customers": (("id",), ("id", "name", "email", "vip")),
    "orders": (("id",), ("id", "customer_id", "amount", "status")),
    "order_lines": (("order_id", "line_no"), ("order_id", "line_no", "sku", "qty")),
    "scratch": (("id",), ("id", "note")),
}
"""Each table's primary key and columns."""

DECIMALS = frozenset(["amount"])
"""Columns of type numeric: SQLite's NUMERIC affinity stores 996.00 as the integer 996."""

RANGE = 1000


def create_schema(dsn: str) -> None:
    """Create the workload's tables in the database of ``dsn``."""
    connection = psycopg2.connect(dsn)
    try:
        with connection, connection.cursor() as cursor:
            cursor.execute(SCHEMA)
    finally:
        connection.close()


class Workload:
    """``threads`` writers doing ``transactions`` transactions each (``pause_s`` apart); see the
    module docstring.

    ``seed`` fixes the choices; ``errors`` collects unexpected failures (deadlocks and
    serialization failures are retried as a new transaction, as an application would).
    """

    def __init__(
        self,
        dsn: str,
        *,
        threads: int = 3,
        transactions: int = 300,
        seed: int = 7,
        pause_s: float = 0.0,
    ) -> None:
        self.dsn = dsn
        self.pause_s = pause_s
        self.threads = threads
        self.transactions = transactions
        self.seed = seed
        self.errors: list[BaseException] = []
        self.done = threading.Event()
        self._truncated = threading.Event()
        self._workers: list[threading.Thread] = []

    def start(self) -> Workload:
        """Start the writers (in threads)."""
        for index in range(self.threads):
            worker = threading.Thread(target=self._run, args=(index,), name=f"workload-{index}")
            worker.start()
            self._workers.append(worker)
        return self

    def join(self, timeout_s: float = 300.0) -> None:
        """Wait for the writers; raise the first unexpected error."""
        for worker in self._workers:
            worker.join(timeout_s)
        self.done.set()
        if self.errors:
            raise self.errors[0]

    def _run(self, index: int) -> None:
        rng = random.Random(self.seed * 1000 + index)
        base = (index + 1) * 1_000_000  # this thread's ids: base, base + 1, ...
        ids = _Ids(base)
        connection = psycopg2.connect(self.dsn)
        try:
            for number in range(self.transactions):
                if index == 0 and number == self.transactions // 2:
                    self._attempt(connection, lambda cursor: _truncate_scratch(cursor, ids))
                    continue
                step = _pick(rng)
                self._attempt(connection, lambda cursor, s=step: s(cursor, rng, ids))
                if self.pause_s:
                    time.sleep(self.pause_s)
        except BaseException as error:
            self.errors.append(error)
        finally:
            connection.close()

    def _attempt(self, connection: Any, body: Callable[[Any], None]) -> None:
        for _ in range(5):
            try:
                with connection, connection.cursor() as cursor:
                    body(cursor)
                return
            except (psycopg2.errors.DeadlockDetected, psycopg2.errors.SerializationFailure):
                continue


class _Ids:
    """The ids one writer owns, per table (so its updates and deletes touch only its rows)."""

    def __init__(self, base: int) -> None:
        self.next = base
        self.customers: list[int] = []
        self.orders: list[int] = []
        self.scratch: list[int] = []

    def new(self) -> int:
        self.next += 1
        return self.next


def _insert(cursor: Any, rng: random.Random, ids: _Ids) -> None:
    customer = ids.new()
    cursor.execute(
        "INSERT INTO customers VALUES (%s, %s, %s, %s)",
        (customer, f"customer {customer}", f"c{customer}@example.com", rng.random() < 0.2),
    )
    order = ids.new()
    amount = Decimal(rng.randrange(100, 100_000)) / 100
    cursor.execute("INSERT INTO orders VALUES (%s, %s, %s, 'new')", (order, customer, amount))
    for line in range(rng.randrange(1, 4)):
        cursor.execute(
            "INSERT INTO order_lines VALUES (%s, %s, %s, %s)",
            (order, line, f"sku-{rng.randrange(50)}", rng.randrange(1, 9)),
        )
    scratch = ids.new()
    cursor.execute("INSERT INTO scratch VALUES (%s, %s)", (scratch, "note"))
    ids.customers.append(customer)
    ids.orders.append(order)
    ids.scratch.append(scratch)


def _update(cursor: Any, rng: random.Random, ids: _Ids) -> None:
    if not ids.orders:
        return _insert(cursor, rng, ids)
    order = rng.choice(ids.orders)
    status = rng.choice(["paid", "shipped", "returned"])
    cursor.execute(
        "UPDATE orders SET status = %s, amount = amount + 1 WHERE id = %s", (status, order)
    )
    cursor.execute("UPDATE order_lines SET qty = qty + 1 WHERE order_id = %s", (order,))
    if ids.customers:
        customer = rng.choice(ids.customers)
        cursor.execute(
            "UPDATE customers SET vip = NOT vip, email = NULL WHERE id = %s", (customer,)
        )
    return None


def _change_key(cursor: Any, rng: random.Random, ids: _Ids) -> None:
    if not ids.customers:
        return _insert(cursor, rng, ids)
    old = ids.customers.pop(rng.randrange(len(ids.customers)))
    new = ids.new()
    cursor.execute("UPDATE customers SET id = %s, name = name || '*' WHERE id = %s", (new, old))
    ids.customers.append(new)
    return None


def _delete(cursor: Any, rng: random.Random, ids: _Ids) -> None:
    if not ids.orders:
        return _insert(cursor, rng, ids)
    order = ids.orders.pop(rng.randrange(len(ids.orders)))
    cursor.execute("DELETE FROM order_lines WHERE order_id = %s", (order,))
    cursor.execute("DELETE FROM orders WHERE id = %s", (order,))
    return None


def _truncate_scratch(cursor: Any, ids: _Ids) -> None:
    cursor.execute("TRUNCATE scratch")
    ids.scratch.clear()
    for _ in range(5):
        scratch = ids.new()
        cursor.execute("INSERT INTO scratch VALUES (%s, 'after truncate')", (scratch,))
        ids.scratch.append(scratch)


_STEPS: list[tuple[float, Callable[[Any, random.Random, _Ids], None]]] = [
    (0.4, _insert),
    (0.3, _update),
    (0.15, _change_key),
    (0.15, _delete),
]


def _pick(rng: random.Random) -> Callable[[Any, random.Random, _Ids], None]:
    roll = rng.random()
    for share, step in _STEPS:
        if roll < share:
            return step
        roll -= share
    return _STEPS[-1][1]


def _normalised(column: str, value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if value is not None and (column in DECIMALS or isinstance(value, Decimal | float)):
        return f"{Decimal(str(value)):.2f}"
    return value


def _row(columns: tuple[str, ...], row: Any) -> tuple[Any, ...]:
    return tuple(_normalised(c, v) for c, v in zip(columns, row, strict=True))


def digests(url: str, table: str) -> dict[int, str]:
    """Range of first-key values (per :data:`RANGE`) → digest of that range's rows."""
    key, columns = TABLES[table]
    engine = sqlalchemy.create_engine(url)
    try:
        query = sqlalchemy.text(
            f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(key)}"
        )
        hashes: dict[int, Any] = {}
        with engine.connect() as connection:
            for row in connection.execute(query):
                values = _row(columns, row)
                bucket = int(values[0]) // RANGE
                hashes.setdefault(bucket, hashlib.sha256()).update(repr(values).encode())
        return {bucket: digest.hexdigest() for bucket, digest in hashes.items()}
    finally:
        engine.dispose()


def rows(url: str, table: str) -> list[tuple[Any, ...]]:
    """Every row of ``table``, normalised, in primary-key order (to explain a difference)."""
    key, columns = TABLES[table]
    engine = sqlalchemy.create_engine(url)
    try:
        query = sqlalchemy.text(
            f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(key)}"
        )
        with engine.connect() as connection:
            return [_row(columns, row) for row in connection.execute(query)]
    finally:
        engine.dispose()
