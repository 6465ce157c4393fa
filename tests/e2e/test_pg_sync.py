"""Databases kept in sync: ``postgres-cdc`` captures a concurrent workload (inserts, updates,
primary-key changes, deletes, a truncate) on four PostgreSQL tables; two ``jdbc-sink``
connectors write the changes into a second PostgreSQL server and into SQLite. After catch-up
both copies equal the source row for row (digests over primary-key ranges).

The chaos run does it again while the Connect worker is ``kill -9``-ed three times during the
workload and the target PostgreSQL server is stopped and started again: the copies still
converge, nothing lost (the worker is restarted each time from its committed offsets; the CDC
connector resumes from the LSN it confirmed; the sinks' upserts and deletes are idempotent).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import BrokerProcess, create_topic
from tests.e2e.pg_workload import TABLES, Workload, create_schema, digests, rows
from tests.pg import PostgresServer

SLUICE = Path(sys.executable).with_name("sluice")
CATCH_UP_S = 180.0


@pytest.fixture
def source() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


@pytest.fixture
def target() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


def _pipeline(tmp_path: Path, source: PostgresServer, target_url: str, prefix: str) -> Path:
    tables = ",".join(f"public.{table}" for table in TABLES)
    sink = """\
  class: jdbc-sink
  config:
    topics: {topics}
    connection.url: {url}
    insert.mode: upsert
    pk.mode: record_key
    delete.enabled: true
    truncate.enabled: true
    auto.create: true
    auto.evolve: true
    max.retries: 1000
    retry.backoff.ms: 500
  transforms:
    - name: unwrap
      type: unwrap
      drop.tombstones: false
      truncate.handling.mode: keep
    - name: route
      type: org.apache.kafka.connect.transforms.RegexRouter
      regex: '{prefix}\\.public\\.(.*)'
      replacement: '$1'
"""
    topics = ",".join(f"{prefix}.public.{table}" for table in TABLES)
    text = f"""\
- name: capture
  class: postgres-cdc
  config:
    database.hostname: 127.0.0.1
    database.port: {source.port}
    database.user: sluice
    database.password: sluice
    database.dbname: shop
    topic.prefix: {prefix}
    table.include.list: '{tables}'
    slot.name: {prefix}_slot
    publication.name: {prefix}_publication
    heartbeat.interval.ms: 1000
- name: to-postgres
{sink.format(topics=topics, url=target_url, prefix=prefix)}
- name: to-sqlite
{sink.format(topics=topics, url=f"sqlite:///{tmp_path / 'replica.db'}", prefix=prefix)}
"""
    path = tmp_path / "sync.yaml"
    path.write_text(text)
    return path


class Worker:
    """``sluice connect standalone`` on the pipeline, restartable; stopped at teardown."""

    def __init__(self, pipeline: Path, bootstrap: str, tmp_path: Path) -> None:
        self.command = [
            *(str(SLUICE), "connect", "standalone", str(pipeline), "-b", bootstrap),
            *("--offsets", str(tmp_path / "offsets.json"), "--rest", ""),
            *("-X", "offset.flush.interval.ms=500"),
        ]
        self.log = tmp_path / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ}
            )

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def _converge(source_url: str, copies: dict[str, str], worker: Worker) -> None:
    """Wait until every copy's digests equal the source's (bounded), or explain the difference."""
    deadline = time.monotonic() + CATCH_UP_S
    differing: list[tuple[str, str]] = []
    while time.monotonic() < deadline:
        assert worker.process is not None and worker.process.poll() is None, worker.log.read_text()
        wanted = {table: digests(source_url, table) for table in TABLES}
        differing = []
        for copy, url in copies.items():
            for table in TABLES:
                try:
                    got = digests(url, table)
                except Exception:  # the table is not created yet
                    got = None
                if got != wanted[table]:
                    differing.append((copy, table))
        if not differing:
            return
        time.sleep(1)
    copy, table = differing[0]
    expected, got = rows(source_url, table), rows(copies[copy], table)
    missing = sorted(set(expected) - set(got))[:5]
    extra = sorted(set(got) - set(expected))[:5]
    raise AssertionError(
        f"{copy}.{table} differs after {CATCH_UP_S} s: {len(expected)} rows wanted, {len(got)}"
        f" there; missing {missing}, extra {extra}\nworker log:\n" + worker.log.read_text()[-4000:]
    )


def _setup(
    source: PostgresServer, target: PostgresServer, shared_broker: BrokerProcess, tmp_path: Path
) -> tuple[str, dict[str, str], Worker]:
    source_url = source.create_database("shop")
    create_schema(source.dsn("shop"))
    target_url = target.create_database("replica")
    prefix = f"shop{os.getpid()}{int(time.monotonic() * 1000) % 100000}"
    for table in TABLES:
        create_topic(shared_broker.bootstrap, 1, f"{prefix}.public.{table}")
    pipeline = _pipeline(tmp_path, source, target_url, prefix)
    worker = Worker(pipeline, shared_broker.bootstrap, tmp_path)
    copies = {"postgres": target_url, "sqlite": f"sqlite:///{tmp_path / 'replica.db'}"}
    return source_url, copies, worker


def test_postgres_and_sqlite_copies_converge_with_the_source(
    source: PostgresServer, target: PostgresServer, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    source_url, copies, worker = _setup(source, target, shared_broker, tmp_path)
    workload = Workload(source.dsn("shop"), threads=3, transactions=150)
    workload.start()  # rows before the connector starts: they come through the snapshot
    time.sleep(1)
    worker.start()
    try:
        workload.join()
        _converge(source_url, copies, worker)
    finally:
        worker.stop()


def test_copies_converge_across_kill_9_of_the_worker_and_a_target_restart(
    source: PostgresServer, target: PostgresServer, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    source_url, copies, worker = _setup(source, target, shared_broker, tmp_path)
    # about 15 s of writes, so that the kills fall in the snapshot and in the streaming
    workload = Workload(source.dsn("shop"), threads=3, transactions=500, seed=11, pause_s=0.02)
    worker.start()
    workload.start()
    chaos_errors: list[BaseException] = []

    def chaos() -> None:
        try:
            for round_ in range(3):
                time.sleep(4)
                worker.kill()
                if round_ == 1:
                    target.stop()
                    time.sleep(2)
                    target.start()
                worker.start()
        except BaseException as error:
            chaos_errors.append(error)

    thread = threading.Thread(target=chaos, name="chaos")
    thread.start()
    try:
        workload.join()
        thread.join(120)
        assert not chaos_errors, chaos_errors
        _converge(source_url, copies, worker)
    finally:
        thread.join(60)
        worker.stop()
