"""examples/pg_sync: the README's YAML and schema, run by a standalone worker process against
a real PostgreSQL server (both databases on it) and SQLite; changes reach both copies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
import sqlalchemy

from tests.conftest import BrokerProcess, free_port
from tests.pg import PostgresServer

EXAMPLE = Path(__file__).parents[2] / "examples" / "pg_sync"
SLUICE = str(Path(sys.executable).with_name("sluice"))


@pytest.fixture
def server() -> Iterator[PostgresServer]:
    with PostgresServer() as running:
        yield running


def _orders(url: str) -> list[tuple[Any, ...]]:
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as connection:
            query = "SELECT id, customer_id, amount, status FROM orders ORDER BY id"
            rows = connection.exec_driver_sql(query).all()
            return [(i, c, f"{float(a):.2f}", s) for i, c, a, s in rows]
    except sqlalchemy.exc.SQLAlchemyError:  # not created yet
        return []
    finally:
        engine.dispose()


def test_changes_reach_the_postgres_and_sqlite_copies(
    server: PostgresServer, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    source = server.create_database("shop")
    replica = server.create_database("replica")
    connection = psycopg2.connect(server.dsn("shop"))
    connection.autocommit = True
    with connection.cursor() as cursor:
        cursor.execute((EXAMPLE / "schema.sql").read_text())
    env = {
        **os.environ,
        "SHOP_PGHOST": "127.0.0.1",
        "SHOP_PGPORT": str(server.port),
        "SHOP_PGUSER": "sluice",
        "SHOP_PGPASSWORD": "sluice",
        "REPLICA_URL": replica,
    }
    port = free_port()
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [
                *(SLUICE, "connect", "standalone", str(EXAMPLE / "sync.yaml")),
                *("-b", shared_broker.bootstrap, "--rest", f"127.0.0.1:{port}"),
                *("--offsets", str(tmp_path / "offsets.json")),
            ],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    copies = [replica, f"sqlite:///{tmp_path / 'replica.db'}"]
    try:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE orders SET status = 'shipped' WHERE id = 10")
            cursor.execute("DELETE FROM orders WHERE id = 11")
            cursor.execute("INSERT INTO orders VALUES (12, 2, 7.25, 'new')")
        wanted = _orders(source)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and any(_orders(url) != wanted for url in copies):
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()
            time.sleep(0.5)
        for url in copies:
            assert _orders(url) == wanted, (tmp_path / "worker.log").read_text()[-3000:]
    finally:
        connection.close()
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait(10)
