"""Database connectors: CDC lag and throughput, and jdbc-sink throughput, beside references.

    python bench/databases.py [--seconds S] [--rates R,R] [--period-ms P] [--rows N]
                              [--only cdc-lag,cdc-bulk,sink] [--cdc-schemas true|false]
                              [--timeout S] [--profile DIR] [--json PATH] [--keep DIR]
                              [--log-level LEVEL]

One Sluice broker (``_harness.running_broker``, the initial rebalance delay 0 so that the sink's
group joins at once) and one PostgreSQL (``_postgres.PostgresServer``: ``initdb`` in a temporary
directory, ``wal_level=logical``, ``fsync=off``), database ``bench``. Each connector runs in
``sluice connect standalone`` (its own process group, no REST API, offsets in a fresh file, ``-X
offset.flush.interval.ms=1000``, JSON converters; the CDC runs with ``schemas.enable`` as
``--cdc-schemas`` says, true by default — Kafka's JsonConverter default — the sink always with
schemas, which it needs for struct rows). Measured in the same run:

1. **CDC lag at a steady load** (``cdc-lag``), once per rate of ``--rates`` (5,000/s, the target's,
   and 1,000/s, one the connector keeps up with). Per rate a table ``events_<rate>(id bigint primary
   key, payload text, committed_at_us bigint)`` and a ``postgres-cdc`` connector
   (``snapshot.mode=never``, its publication ``filtered`` to the table, its defaults otherwise).
   Once its slot is streaming, a writer process inserts ``rate`` rows/s for ``--seconds`` (10): one
   multi-row INSERT of ``rate × period`` rows (100-byte payload) every ``--period-ms`` (10 ms; 50
   rows at 5,000/s) on a monotonic schedule, in autocommit, so the statement is the transaction and
   it has committed when it returns; the writer notes that moment (wall clock, µs) per transaction;
   ``committed_at_us`` holds the clock just before the statement. A consumer process
   (confluent-kafka, assigned to the topic from its start, librdkafka's default fetch settings)
   notes the wall clock when each record is in hand (``poll(0.1)``, then ``consume(1000, 0)`` for
   what else is queued: ``consume(n, t)`` would wait for n records or t seconds) and takes the row
   id from the record's key. **Lag** = arrival − commit, over the rows committed after the first
   second (warm-up); split into commit → ``produce()`` (the record's CreateTime, ms, stamped by the
   worker's librdkafka) and ``produce()`` → arrival (the broker hop). The **reference** reads its
   own slot on the same publication during the same run with psycopg2 alone (``_db_load.read_slot``:
   pgoutput, no decoding past the first column) — commit → change in a Python process, the floor
   logical replication itself sets. Also: the write rate achieved, the rate delivered to the topic
   over the steady window, and whether every id arrived exactly once. 2. **CDC throughput**
   (``cdc-bulk``). Table ``bulk`` of the same shape, a publication for it and two slots made
   beforehand; then ``--rows`` rows inserted at once (``INSERT … SELECT generate_series``, 10,000
   rows per transaction; ``--rows``, 40,000). Both slots then hold the same backlog. The
   **reference** streams one with psycopg2 alone, counting Insert messages (the most a Python reader
   gets from the server); then a ``postgres-cdc`` connector on the other slot
   (``snapshot.mode=never``, ``publication.autocreate.mode=disabled``) puts them in the topic, whose
   high watermark the parent asks for every 20 ms. Changes/s from the first change seen to the last
   (and from the worker's start). 3. **jdbc-sink throughput** (``sink``). ``--rows`` JSON records
   with schemas (struct key ``{id}``, struct value ``{id int64, name string, amount double,
   updated_at Timestamp}``) are produced into a topic first. The **reference**
   (``_db_load.reference_upsert``, in its own process, before and after the sink; the faster counts)
   upserts the same rows, already in memory as Python values, with SQLAlchemy: ``INSERT … ON
   CONFLICT (id) DO UPDATE`` executed with 3,000 parameter sets per call and transaction — the
   statement the sink sends. Beside it (not judged), the same upsert as one multi-row statement per
   3,000 rows (psycopg2's ``execute_values``): SQLAlchemy does not rewrite an ``ON CONFLICT``
   executemany into multi-row statements, so the plain executemany is one statement per row. Then a
   ``jdbc-sink`` (``insert.mode=upsert``, ``pk.mode=record_key``, ``auto.create=true``, its defaults
   otherwise) writes the topic into its own table, and the parent counts its rows (``SELECT
   count(*)``) every 50 ms: rows/s from the first row visible to the N-th, and from the worker's
   start.

Targets (the issue's): CDC lag p99 ≤ 200 ms at 5,000 changes/s (and every change delivered exactly
once, the write rate reached); sink ≥ 50 % of the plain batched write. CPU columns: user + system
seconds of the worker (all threads and children), the broker and PostgreSQL (the postmaster and
every backend, the walsenders included) over each timed window.

The default run takes about 2.5 minutes (more when the connectors fall behind: the 5,000/s load
drains at the connector's pace). Every wait is bounded (``--timeout`` per phase); every worker's
process group is SIGTERMed then SIGKILLed, every child process stopped, and PostgreSQL stopped and
its directory removed, in ``finally``. ``--keep DIR`` keeps the YAML files and the workers' logs
there; ``--profile DIR`` runs py-spy on each worker (250 Hz, raw stacks in ``DIR/<phase>.txt``) and
prints where the task thread's time goes; profiled figures are not the record."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _db_load import (
    _SPAWN,
    SINK_EPOCH_MS,
    Arrivals,
    Child,
    RawRead,
    UpsertRun,
    WriterResult,
    consume_arrivals,
    produce_sink_input,
    read_slot,
    reference_upsert,
    write_steady,
)
from _harness import SLUICE, cpu_seconds, create_topic, percentile, running_broker
from _postgres import PostgresServer
from _streams_runs import Watermark, stop_group, tail, tree_cpu
from broker_throughput import _machine
from rich.console import Console
from rich.table import Table

from connect import HYPOTHESIS_CACHE, _attach_profiler, summarize_profile

LAG_TARGET_MS = 200.0
LAG_RATE_TARGET = 5_000.0
SINK_TARGET = 0.50
WARMUP_S = 1.0
SINK_BATCH = 3000
PHASES = ("cdc-lag", "cdc-bulk", "sink")
BULK_TXN_ROWS = 10_000


@dataclass
class Context:
    bootstrap: str
    broker_pid: int
    pg: PostgresServer
    workdir: Path
    timeout: float
    log_level: str
    profile: Path | None
    cdc_schemas: bool

    @property
    def dsn(self) -> str:
        return self.pg.dsn("bench")

    @property
    def url(self) -> str:
        return self.pg.url("bench")

    def cpu(self, worker: Worker | None = None) -> tuple[float, float, float]:
        """CPU seconds so far: the worker's (tree), the broker's, PostgreSQL's (tree)."""
        return (
            tree_cpu(worker.proc.pid) if worker else 0.0,
            cpu_seconds(self.broker_pid),
            tree_cpu(self.pg.pid),
        )


def _sql(dsn: str, *statements: str) -> list[Any]:
    """Run ``statements`` in autocommit; the first row of the last one (if any)."""
    import psycopg2

    connection = psycopg2.connect(dsn)
    try:
        connection.autocommit = True
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            return list(cursor.fetchone() or ()) if cursor.description else []
    finally:
        connection.close()


# -- a worker ------------------------------------------------------------------------------------
class Worker:
    """``sluice connect standalone`` running one connector, in its own session (process group)."""

    def __init__(
        self, ctx: Context, name: str, connector: dict[str, Any], settings: dict[str, str]
    ) -> None:
        yaml_path = ctx.workdir / f"{name}.yaml"
        yaml_path.write_text(json.dumps([connector], indent=2))  # JSON is YAML
        self.log_path = ctx.workdir / f"{name}.log"
        offsets = ctx.workdir / f"{name}.offsets"
        offsets.unlink(missing_ok=True)
        command = [
            str(SLUICE),
            "connect",
            "standalone",
            str(yaml_path),
            "-b",
            ctx.bootstrap,
            "--offsets",
            str(offsets),
            "--rest",
            "",
            "--log-level",
            ctx.log_level,
        ]
        for key, value in {"offset.flush.interval.ms": "1000", **settings}.items():
            command += ["-X", f"{key}={value}"]
        with self.log_path.open("wb") as log:
            self.began = time.monotonic()
            self.proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ctx.workdir,
                start_new_session=True,
                env={**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(HYPOTHESIS_CACHE)},
            )
        self.profile = ctx.profile / f"{name}.txt" if ctx.profile else None
        self._spy: subprocess.Popen[bytes] | None = None
        self._checked = 0.0

    def attach_profiler(self) -> None:
        if self.profile is not None and self._spy is None:
            self._spy = _attach_profiler(self.proc.pid, self.profile)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def failed(self) -> bool:
        """Whether the worker logged a task's failure (it keeps running without the task)."""
        now = time.monotonic()
        if now - self._checked < 1.0:
            return False
        self._checked = now
        return "failed:" in tail(self.log_path, 20_000)

    def log_tail(self, chars: int = 1200) -> str:
        return tail(self.log_path, chars)

    def stop(self) -> None:
        stop_group(self.proc)
        if self._spy is not None:  # it writes its file once the worker is gone
            try:
                self._spy.wait(30)
            except subprocess.TimeoutExpired:
                stop_group(self._spy)


def _cdc_settings(ctx: Context) -> dict[str, str]:
    schemas = "true" if ctx.cdc_schemas else "false"
    return {
        "key.converter": "json",
        "value.converter": "json",
        "key.converter.schemas.enable": schemas,
        "value.converter.schemas.enable": schemas,
    }


def _cdc_connector(ctx: Context, name: str, extra: dict[str, str]) -> dict[str, Any]:
    pg = ctx.pg
    return {
        "name": name,
        "class": "postgres-cdc",
        "config": {
            "database.hostname": "127.0.0.1",
            "database.port": str(pg.port),
            "database.user": "sluice",
            "database.password": "sluice",
            "database.dbname": "bench",
            "snapshot.mode": "never",
            **extra,
        },
    }


def _wait(what: str, check: Callable[[], bool], worker: Worker | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if worker is not None and not worker.alive():
            raise RuntimeError(f"the worker exited waiting for {what}: {worker.log_tail()}")
        time.sleep(0.05)
    log = f": {worker.log_tail()}" if worker else ""
    raise TimeoutError(f"no {what} within {timeout:.0f}s{log}")


def _slot_active(dsn: str, slot: str) -> Callable[[], bool]:
    def check() -> bool:
        row = _sql(dsn, f"SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}'")
        return bool(row and row[0])

    return check


# -- 1. CDC lag at a steady load -----------------------------------------------------------------
@dataclass
class Spread:
    """Percentiles of one set of durations, ms."""

    count: int = 0
    p50: float = float("nan")
    p99: float = float("nan")
    p999: float = float("nan")
    max: float = float("nan")

    @classmethod
    def of(cls, values_ms: list[float]) -> Spread:
        values = sorted(values_ms)
        if not values:
            return cls()
        return cls(
            len(values),
            percentile(values, 50),
            percentile(values, 99),
            percentile(values, 99.9),
            values[-1],
        )


@dataclass
class LagResult:
    rate: float
    seconds: float
    written: int = 0
    write_rate: float = 0.0
    late_txns: int = 0
    statement_ms: Spread = field(default_factory=Spread)
    delivered: int = 0  # records with an id
    distinct: int = 0
    duplicates: int = 0
    missing: int = 0
    other_records: int = 0
    delivered_rate: float = 0.0  # over the steady window
    lag: Spread = field(default_factory=Spread)  # commit → consumer, after warm-up
    lag_all_max: float = float("nan")  # over every row, warm-up included
    to_produce: Spread = field(default_factory=Spread)  # commit → CreateTime
    broker_hop: Spread = field(default_factory=Spread)  # CreateTime → consumer
    ref_lag: Spread = field(default_factory=Spread)  # commit → raw slot reader
    ref_inserts: int = 0
    cpu_worker: float = 0.0
    cpu_broker: float = 0.0
    cpu_pg: float = 0.0
    window: float = 0.0
    sample_value: str = ""
    value_bytes: int = 0
    error: str = ""


def _first_arrivals(arrivals: Arrivals) -> dict[int, tuple[int, int]]:
    """Per id: (received µs, CreateTime ms) of its first arrival."""
    first: dict[int, tuple[int, int]] = {}
    produced = arrivals.produced_ms or [0] * len(arrivals.ids)
    for record_id, received, stamp in zip(
        arrivals.ids, arrivals.received_us, produced, strict=True
    ):
        if record_id not in first:
            first[record_id] = (received, stamp)
    return first


def _lag_figures(result: LagResult, writer: WriterResult, got: Arrivals, raw: RawRead) -> None:
    n, per = writer.rows, writer.txn_rows
    commits = writer.commit_us
    result.written = n
    result.write_rate = writer.rows_per_second
    result.late_txns = writer.late
    result.statement_ms = Spread.of([us / 1000 for us in writer.statement_us])
    first = _first_arrivals(got)
    result.delivered = len(got.ids)
    result.distinct = len(first)
    result.duplicates = result.delivered - result.distinct
    result.missing = sum(1 for i in range(n) if i not in first)
    result.other_records = got.other
    result.sample_value = got.first_value[:600]
    result.value_bytes = got.value_bytes
    if not commits:
        return
    steady_from = commits[0] + WARMUP_S * 1e6
    lags, to_produce, hops, every = [], [], [], []
    for record_id, (received, stamp) in first.items():
        if not 0 <= record_id < n:
            continue
        commit = commits[record_id // per]
        every.append((received - commit) / 1000)
        if commit < steady_from:
            continue
        lags.append((received - commit) / 1000)
        to_produce.append(stamp - commit / 1000)
        hops.append(received / 1000 - stamp)
    result.lag = Spread.of(lags)
    result.lag_all_max = max(every) if every else float("nan")
    result.to_produce = Spread.of(to_produce)
    result.broker_hop = Spread.of(hops)
    window_end = commits[-1]
    in_window = sum(1 for received, _ in first.values() if steady_from <= received <= window_end)
    span = (window_end - steady_from) / 1e6
    result.delivered_rate = in_window / span if span > 0 else 0.0
    ref = _first_arrivals(raw.arrivals)
    result.ref_inserts = raw.inserts
    result.ref_lag = Spread.of(
        [
            (received - commits[i // per]) / 1000
            for i, (received, _) in ref.items()
            if 0 <= i < n and commits[i // per] >= steady_from
        ]
    )


def run_lag(ctx: Context, rate: float, txn_rows: int, seconds: float) -> LagResult:
    """One steady load at ``rate``: its own table ``events_<rate>``, slots, connector, topic."""
    result = LagResult(rate, seconds)
    name = f"lag{rate:.0f}"
    table, slot, publication = f"events_{rate:.0f}", name, f"{name}_pub"
    topic = f"{name}.public.{table}"
    _sql(
        ctx.dsn,
        f"CREATE TABLE {table} (id bigint PRIMARY KEY, payload text, committed_at_us bigint)",
    )
    create_topic(ctx.bootstrap, topic)

    expected, raw_expected = _SPAWN.Value("q", -1), _SPAWN.Value("q", -1)
    ready, raw_ready = _SPAWN.Event(), _SPAWN.Event()
    children: list[Child] = []
    worker = Worker(
        ctx,
        f"cdc-{name}",
        _cdc_connector(
            ctx,
            f"bench-cdc-{name}",
            {
                "topic.prefix": name,
                "table.include.list": rf"public\.{table}",
                "slot.name": slot,
                "publication.name": publication,
                "publication.autocreate.mode": "filtered",
            },
        ),
        _cdc_settings(ctx),
    )
    try:
        _wait(f"streaming slot {slot}", _slot_active(ctx.dsn, slot), worker, ctx.timeout)
        _sql(ctx.dsn, f"SELECT pg_create_logical_replication_slot('{slot}_ref', 'pgoutput')")
        drain = seconds + ctx.timeout
        consumer = Child(consume_arrivals, ctx.bootstrap, topic, expected, ready, drain)
        children.append(consumer)
        reader = Child(
            read_slot, ctx.dsn, f"{slot}_ref", publication, raw_expected, raw_ready, drain, True
        )
        children.append(reader)
        _wait(
            "ready consumer and reader", lambda: ready.is_set() and raw_ready.is_set(), worker, 60
        )
        worker.attach_profiler()
        cpu0, began = ctx.cpu(worker), time.monotonic()
        writer = Child(write_steady, ctx.dsn, table, rate, txn_rows, seconds)
        children.append(writer)
        written: WriterResult = writer.result(seconds + 60)
        expected.value = raw_expected.value = written.rows
        arrivals: Arrivals = consumer.result(ctx.timeout)
        raw: RawRead = reader.result(ctx.timeout)
        cpu1, result.window = ctx.cpu(worker), time.monotonic() - began
        result.cpu_worker, result.cpu_broker, result.cpu_pg = (
            b - a for a, b in zip(cpu0, cpu1, strict=True)
        )
        _lag_figures(result, written, arrivals, raw)
        problems = [e for e in (arrivals.error, raw.error) if e]
        if result.missing or result.duplicates:
            problems.append(
                f"{result.missing:,} of {written.rows:,} changes missing, "
                f"{result.duplicates:,} duplicated"
            )
        if problems:
            result.error = "; ".join(problems) + f"; worker log: {worker.log_tail(600)}"
    except Exception as error:
        result.error = f"{type(error).__name__}: {error}"
    finally:
        for child in children:
            child.stop()
        worker.stop()
    return result


# -- 2. CDC throughput from a backlog ------------------------------------------------------------
@dataclass
class BulkResult:
    rows: int
    insert_seconds: float = 0.0
    ref_rate: float = 0.0
    ref_seconds: float = 0.0
    ref_cpu: float = 0.0
    changes: int = 0
    rate: float = 0.0  # first change seen → N-th
    rate_total: float = 0.0  # worker start → N-th
    seconds: float = 0.0
    to_first: float = 0.0
    cpu_worker: float = 0.0
    cpu_broker: float = 0.0
    cpu_pg: float = 0.0
    error: str = ""


def run_bulk(ctx: Context, rows: int) -> BulkResult:
    result = BulkResult(rows)
    topic = "bulk.public.bulk"
    _sql(
        ctx.dsn,
        "CREATE TABLE bulk (id bigint PRIMARY KEY, payload text, committed_at_us bigint)",
        "CREATE PUBLICATION bulk_pub FOR TABLE bulk",
        "SELECT pg_create_logical_replication_slot('bulk_sluice', 'pgoutput')",
        "SELECT pg_create_logical_replication_slot('bulk_ref', 'pgoutput')",
    )
    create_topic(ctx.bootstrap, topic)
    began = time.monotonic()
    for start in range(0, rows, BULK_TXN_ROWS):
        last = min(rows, start + BULK_TXN_ROWS) - 1
        _sql(
            ctx.dsn,
            "INSERT INTO bulk SELECT g, repeat('x', 100), "
            f"(extract(epoch from clock_timestamp()) * 1e6)::bigint "
            f"FROM generate_series({start}, {last}) g",
        )
    result.insert_seconds = time.monotonic() - began

    expected, ready = _SPAWN.Value("q", rows), _SPAWN.Event()
    reader = Child(read_slot, ctx.dsn, "bulk_ref", "bulk_pub", expected, ready, ctx.timeout, False)
    try:
        raw: RawRead = reader.result(ctx.timeout + 30)
    finally:
        reader.stop()
    result.ref_rate, result.ref_seconds, result.ref_cpu = (
        raw.per_second,
        raw.last - raw.first,
        raw.cpu,
    )
    if raw.error or raw.inserts != rows:
        result.error = f"raw reader: {raw.inserts:,} of {rows:,} inserts {raw.error}"

    watch = Watermark(ctx.bootstrap)
    worker = Worker(
        ctx,
        "cdc-bulk",
        _cdc_connector(
            ctx,
            "bench-cdc-bulk",
            {
                "topic.prefix": "bulk",
                "table.include.list": r"public\.bulk",
                "slot.name": "bulk_sluice",
                "publication.name": "bulk_pub",
                "publication.autocreate.mode": "disabled",
            },
        ),
        _cdc_settings(ctx),
    )
    try:
        seen, first, end_cpu, end = _watch(
            ctx, worker, lambda: watch.high(topic), rows, poll_s=0.02
        )
    finally:
        worker.stop()
        watch.close()
    result.changes = seen
    _timed(result, worker, first, end_cpu, end, rows)
    if seen < rows:
        result.error += f" connector: {seen:,} of {rows:,} changes; log: {worker.log_tail(600)}"
    return result


Sample = tuple[float, int, tuple[float, float, float]]  # monotonic time, progress, cpu


def _watch(
    ctx: Context, worker: Worker, progress: Callable[[], int], expected: int, poll_s: float
) -> tuple[int, Sample | None, tuple[float, float, float], float]:
    """Poll ``progress()`` until ``expected`` (or the worker exits, or ``ctx.timeout``): the last
    count, the first sample with progress, the CPU and the time at the end."""
    deadline = worker.began + ctx.timeout
    first: Sample | None = None
    seen = 0
    while time.monotonic() < deadline:
        seen = progress()
        now = time.monotonic()
        if now - worker.began > 0.5:
            worker.attach_profiler()
        if first is None and seen > 0:
            first = (now, seen, ctx.cpu(worker))
        if seen >= expected or not worker.alive() or worker.failed():
            break
        time.sleep(poll_s)
    return seen, first, ctx.cpu(worker), time.monotonic()


def _timed(
    result: BulkResult | SinkResult,
    worker: Worker,
    first: Sample | None,
    end_cpu: tuple[float, float, float],
    end: float,
    expected: int,
) -> None:
    if first is None:
        result.error += f" nothing arrived; log: {worker.log_tail(600)}"
        return
    t0, count0, cpu0 = first
    result.to_first = t0 - worker.began
    result.seconds = end - t0
    done = min(expected, result.changes if isinstance(result, BulkResult) else result.written)
    result.rate = (done - count0) / result.seconds if result.seconds > 0 else 0.0
    result.rate_total = done / (end - worker.began)
    result.cpu_worker, result.cpu_broker, result.cpu_pg = (
        b - a for a, b in zip(cpu0, end_cpu, strict=True)
    )


# -- 3. jdbc-sink throughput ---------------------------------------------------------------------
@dataclass
class SinkResult:
    rows: int
    produce_seconds: float = 0.0
    refs: list[UpsertRun] = field(default_factory=list)  # executemany, before and after
    batched: UpsertRun | None = None  # one multi-row statement per batch
    written: int = 0
    rate: float = 0.0
    rate_total: float = 0.0
    seconds: float = 0.0
    to_first: float = 0.0
    cpu_worker: float = 0.0
    cpu_broker: float = 0.0
    cpu_pg: float = 0.0
    check: str = ""
    error: str = ""

    @property
    def ref_rate(self) -> float:
        return max((r.rows_per_second for r in self.refs), default=0.0)


class _RowCounter:
    """Rows in a table that may not exist yet, on one autocommit connection: ``max(id) + 1``
    (the primary key's index, cheap), since the sink writes ids 0, 1, 2… in topic order, one
    transaction per batch; the exact ``count(*)`` is checked once at the end."""

    def __init__(self, dsn: str, table: str) -> None:
        import psycopg2

        self._connection = psycopg2.connect(dsn)
        self._connection.autocommit = True
        self._table = table

    def __call__(self) -> int:
        import psycopg2

        with self._connection.cursor() as cursor:
            try:
                cursor.execute(f"SELECT coalesce(max(id) + 1, 0) FROM {self._table}")
            except psycopg2.errors.UndefinedTable:
                return 0
            row = cursor.fetchone()
        return int(row[0]) if row else 0

    def close(self) -> None:
        self._connection.close()


def _reference(ctx: Context, rows: int, method: str = "executemany") -> UpsertRun:
    table = "ref_rows" if method == "executemany" else f"ref_{method}"
    child = Child(reference_upsert, ctx.url, table, rows, SINK_BATCH, ctx.timeout, method)
    try:
        run: UpsertRun = child.result(ctx.timeout + 60)
    finally:
        child.stop()
    return run


def run_sink(ctx: Context, rows: int) -> SinkResult:
    result = SinkResult(rows)
    topic = "sink-input"
    create_topic(ctx.bootstrap, topic)
    producer = Child(produce_sink_input, ctx.bootstrap, topic, rows, ctx.timeout)
    try:
        result.produce_seconds = producer.result(ctx.timeout + 30)
    finally:
        producer.stop()
    result.refs.append(_reference(ctx, rows))
    counter = _RowCounter(ctx.dsn, "sink_rows")
    worker = Worker(
        ctx,
        "sink",
        {
            "name": "bench-jdbc-sink",
            "class": "jdbc-sink",
            "config": {
                "topics": topic,
                "connection.url": ctx.url,
                "table.name.format": "sink_rows",
                "insert.mode": "upsert",
                "pk.mode": "record_key",
                "auto.create": "true",
            },
        },
        {
            "key.converter": "json",
            "value.converter": "json",
            "key.converter.schemas.enable": "true",
            "value.converter.schemas.enable": "true",
        },
    )
    try:
        seen, first, end_cpu, end = _watch(ctx, worker, counter, rows, poll_s=0.05)
    finally:
        worker.stop()
        counter.close()
    result.written = seen
    _timed(result, worker, first, end_cpu, end, rows)
    if seen < rows:
        result.error += f" sink: {seen:,} of {rows:,} rows; log: {worker.log_tail(600)}"
    else:
        row = _sql(
            ctx.dsn,
            "SELECT (SELECT count(*) FROM sink_rows), count(*) FROM sink_rows s JOIN ref_rows r "
            "USING (id) WHERE s.name = r.name AND s.amount = r.amount "
            "AND s.updated_at = r.updated_at",
        )
        result.check = f"{row[0]:,} rows, {row[1]:,} of {rows:,} equal to the reference's"
        if row[0] != rows or row[1] != rows:
            result.error += f" only {result.check}"
    result.refs.append(_reference(ctx, rows))
    result.batched = _reference(ctx, rows, "values")
    return result


# -- the report ----------------------------------------------------------------------------------
def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:,.1f} ms"


def _per(cpu_s: float, count: int) -> str:
    return f"{cpu_s / count * 1e6:,.0f}" if count else "–"


def _verdict(ok: bool) -> str:
    return "[bold green]PASS[/]" if ok else "[bold red]FAIL[/]"


def _lag_rows(table: Table, lag: LagResult, verdicts: dict[str, str]) -> None:
    at = f"{lag.rate:,.0f}/s"
    ok = not lag.error and lag.lag.p99 <= LAG_TARGET_MS
    if lag.rate >= LAG_RATE_TARGET:
        ok = ok and lag.write_rate >= 0.98 * LAG_RATE_TARGET
        verdict = _verdict(ok)
        verdicts[f"cdc_lag_{lag.rate:.0f}"] = "PASS" if ok else "FAIL"
    else:  # below the target's rate: shown, not judged
        verdict = "(below target rate)"
    exact = not lag.missing and not lag.duplicates and lag.written > 0
    verdicts[f"cdc_exact_{lag.rate:.0f}"] = "PASS" if exact else "FAIL"
    blank = ("", "", "", "")
    table.add_row(
        f"CDC lag p50 at {at} (written {lag.write_rate:,.0f}/s); ref: raw slot reader",
        _ms(lag.lag.p50),
        _ms(lag.ref_lag.p50),
        *blank[:3],
        f"{lag.cpu_worker:.1f} · {lag.cpu_broker:.1f} · {lag.cpu_pg:.1f}",
    )
    table.add_row(
        f"CDC lag p99 at {at}",
        _ms(lag.lag.p99),
        _ms(lag.ref_lag.p99),
        "",
        f"≤ {LAG_TARGET_MS:.0f} ms at {LAG_RATE_TARGET:,.0f}/s",
        verdict,
        "",
    )
    table.add_row(
        "  p99.9 / max",
        f"{_ms(lag.lag.p999)} / {_ms(lag.lag.max)}",
        f"{_ms(lag.ref_lag.p999)} / {_ms(lag.ref_lag.max)}",
        *blank,
    )
    table.add_row(
        "  commit → produce() p50 / p99; produce() → consumer p50 / p99",
        f"{_ms(lag.to_produce.p50)} / {_ms(lag.to_produce.p99)}",
        f"{_ms(lag.broker_hop.p50)} / {_ms(lag.broker_hop.p99)}",
        *blank,
    )
    table.add_row(
        "  delivered changes/s over the steady window (ref: written)",
        f"{lag.delivered_rate:,.0f}",
        f"{lag.write_rate:,.0f}",
        f"{lag.delivered_rate / lag.write_rate:.0%}" if lag.write_rate else "",
        "",
        "",
        "",
    )
    table.add_row(
        "  every change exactly once: distinct ids / written (ref: read)",
        f"{lag.distinct:,} / {lag.written:,}",
        f"{lag.ref_inserts:,}",
        "",
        "all, once",
        _verdict(exact),
        "",
    )


def report(
    console: Console,
    title: str,
    lags: list[LagResult],
    bulk: BulkResult | None,
    sink: SinkResult | None,
) -> dict[str, str]:
    verdicts: dict[str, str] = {}
    table = Table(title=title)
    for column in (
        "figure",
        "Sluice",
        "reference",
        "ratio",
        "target",
        "verdict",
        "CPU-s w · b · pg",
    ):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for lag in lags:
        _lag_rows(table, lag, verdicts)
    if bulk is not None:
        ratio = bulk.rate / bulk.ref_rate if bulk.ref_rate else 0.0
        verdicts["cdc_bulk"] = "ERROR" if bulk.error else "—"
        table.add_row(
            f"CDC max changes/s ({bulk.rows:,}-row backlog; ref: raw psycopg2 slot reader)",
            f"{bulk.rate:,.0f}",
            f"{bulk.ref_rate:,.0f}",
            f"{ratio:.0%}",
            "(none)",
            "" if not bulk.error else "[red]ERROR[/]",
            f"{bulk.cpu_worker:.1f} · {bulk.cpu_broker:.1f} · {bulk.cpu_pg:.1f}",
        )
        table.add_row(
            "  from the worker's start / to the first change",
            f"{bulk.rate_total:,.0f}",
            f"{bulk.to_first:.2f} s",
            "",
            "",
            "",
            f"ref {bulk.ref_cpu:.1f}",
        )
    if sink is not None:
        ratio = sink.rate / sink.ref_rate if sink.ref_rate else 0.0
        ok = not sink.error and ratio >= SINK_TARGET
        verdicts["sink"] = "PASS" if ok else "FAIL"
        refs = " / ".join(f"{r.rows_per_second:,.0f}" for r in sink.refs)
        table.add_row(
            f"jdbc-sink upsert rows/s ({sink.rows:,} rows; ref: SQLAlchemy executemany)",
            f"{sink.rate:,.0f}",
            f"{sink.ref_rate:,.0f}",
            f"{ratio:.0%}",
            f"≥ {SINK_TARGET:.0%}",
            _verdict(ok),
            f"{sink.cpu_worker:.1f} · {sink.cpu_broker:.1f} · {sink.cpu_pg:.1f}",
        )
        if sink.batched is not None:
            table.add_row(
                "  beside: the same upsert as one multi-row statement per batch",
                "",
                f"{sink.batched.rows_per_second:,.0f}",
                f"{sink.rate / sink.batched.rows_per_second:.0%}"
                if sink.batched.rows_per_second
                else "",
                "",
                "",
                f"ref {sink.batched.cpu:.1f}",
            )
        table.add_row(
            "  from the worker's start / to the first row; reference runs",
            f"{sink.rate_total:,.0f}",
            f"{sink.to_first:.2f} s",
            "",
            "",
            "",
            f"ref {refs}",
        )
    console.print(table)
    phases: list[tuple[str, LagResult | BulkResult | SinkResult | None]] = [
        *((f"cdc-lag {lag.rate:.0f}/s", lag) for lag in lags),
        ("cdc-bulk", bulk),
        ("sink", sink),
    ]
    for name, phase in phases:
        if phase is not None and phase.error:
            console.print(f"[red]{name}: {phase.error.strip()}[/red]")
    for lag in lags:
        console.print(
            f"cdc-lag {lag.rate:,.0f}/s: worker CPU {_per(lag.cpu_worker, lag.distinct)} µs per "
            f"change, {lag.value_bytes:,} B per value; writer {lag.written:,} rows, statement "
            f"p50/p99 {_ms(lag.statement_ms.p50)}/{_ms(lag.statement_ms.p99)}, "
            f"{lag.late_txns} late transactions; lag max with warm-up {_ms(lag.lag_all_max)}; "
            f"{lag.other_records} records without id"
        )
    if bulk is not None:
        console.print(
            f"cdc-bulk: {bulk.rows:,} rows inserted in {bulk.insert_seconds:.2f} s; raw reader "
            f"{bulk.ref_seconds:.2f} s ({bulk.ref_cpu:.1f} CPU-s); connector {bulk.seconds:.2f} s, "
            f"worker CPU {_per(bulk.cpu_worker, bulk.changes)} µs per change"
        )
    if sink is not None:
        batched = [sink.batched] if sink.batched else []
        console.print(
            f"sink: input produced in {sink.produce_seconds:.2f} s; {sink.check}; connector "
            f"{sink.seconds:.2f} s from the first row; CPU µs per row: worker "
            f"{_per(sink.cpu_worker, sink.written)}, PostgreSQL {_per(sink.cpu_pg, sink.written)}; "
            "references (client) "
            + ", ".join(f"{r.method} {_per(r.cpu, r.rows)}" for r in [*sink.refs, *batched])
        )
    return verdicts


def _print_profiles(console: Console, directory: Path, workers: list[str]) -> None:
    for name in workers:
        share, rows = summarize_profile(directory / f"{name}.txt", top=24)
        console.print(
            f"\n[bold]{name}[/bold]: the task thread has {share:.0%} of the samples; "
            "of those, per function: inclusive, self"
        )
        for frame, inclusive, own in rows:
            console.print(f"  {inclusive:6.1%} {own:6.1%}  {frame}")


@contextlib.contextmanager
def _workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="bench-databases-") as tmp:
        yield Path(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each steady load, s")
    parser.add_argument(
        "--rates", default="5000,1000", help="steady loads of cdc-lag, rows/s, comma-separated"
    )
    parser.add_argument(
        "--period-ms",
        type=float,
        default=10.0,
        help="one transaction per period (rate × period rows)",
    )
    parser.add_argument("--rows", type=int, default=40_000, help="rows of cdc-bulk and sink")
    parser.add_argument("--only", default=",".join(PHASES), help="phases, comma-separated")
    parser.add_argument("--cdc-schemas", choices=("true", "false"), default="true")
    parser.add_argument("--timeout", type=float, default=120.0, help="bound of each wait, s")
    parser.add_argument("--profile", type=Path, help="run the workers under py-spy into DIR")
    parser.add_argument("--json", type=Path, help="also write the figures there")
    parser.add_argument("--keep", type=Path, help="work in DIR (logs, YAML kept)")
    parser.add_argument("--log-level", default="WARNING", help="the workers' log level")
    args = parser.parse_args()
    phases = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases {sorted(unknown)}: expected some of {PHASES}")
    console = Console(width=max(Console().width, 190))
    started = datetime.datetime.now(datetime.UTC)
    console.log(f"{_machine()}; phases {', '.join(phases)}")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    lags: list[LagResult] = []
    bulk = sink = None
    load_before = os.getloadavg()
    with (
        _workdir(args.keep) as workdir,
        running_broker("sluice", config={"group.initial.rebalance.delay.ms": "0"}) as broker,
        PostgresServer() as pg,
    ):
        pg.create_database("bench")
        ctx = Context(
            broker.bootstrap,
            broker.pid,
            pg,
            workdir,
            args.timeout,
            args.log_level,
            args.profile,
            args.cdc_schemas == "true",
        )
        for rate in rates if "cdc-lag" in phases else []:
            txn_rows = max(1, round(rate * args.period_ms / 1000))
            console.log(
                f"cdc-lag: {rate:,.0f} rows/s ({txn_rows} per transaction) for {args.seconds:.0f} s"
            )
            lag = run_lag(ctx, rate, txn_rows, args.seconds)
            lags.append(lag)
            console.log(f"cdc-lag: p99 {_ms(lag.lag.p99)} {lag.error[:300]}")
        if "cdc-bulk" in phases:
            console.log(f"cdc-bulk: {args.rows:,} rows")
            bulk = run_bulk(ctx, args.rows)
            console.log(
                f"cdc-bulk: {bulk.rate:,.0f}/s vs {bulk.ref_rate:,.0f}/s {bulk.error[:300]}"
            )
        if "sink" in phases:
            console.log(f"sink: {args.rows:,} rows")
            sink = run_sink(ctx, args.rows)
            console.log(f"sink: {sink.rate:,.0f}/s vs {sink.ref_rate:,.0f}/s {sink.error[:300]}")
    load = os.getloadavg()
    title = (
        f"Database connectors ({started:%Y-%m-%d %H:%M} UTC; CDC JSON schemas.enable="
        f"{args.cdc_schemas}; load average {load_before[0]:.2f} before, {load[0]:.2f} after)"
    )
    verdicts = report(console, title, lags, bulk, sink)
    if args.profile:
        workers = [f"cdc-lag{lag.rate:.0f}" for lag in lags]
        workers += [p for p in ("cdc-bulk", "sink") if p in phases]
        _print_profiles(console, args.profile, workers)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "machine": _machine(),
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "sink_epoch_ms": SINK_EPOCH_MS,
                    "cdc_lag": [asdict(lag) for lag in lags],
                    "cdc_bulk": asdict(bulk) if bulk else None,
                    "sink": {**asdict(sink), "ref_rate": sink.ref_rate} if sink else None,
                    "targets": verdicts,
                },
                indent=2,
                default=str,
            )
        )


if __name__ == "__main__":
    main()
