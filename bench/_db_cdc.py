"""bench/databases.py's CDC phases: lag at a steady write load, and throughput on a backlog."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from _db_common import (
    BULK_TXN_ROWS,
    WARMUP_S,
    Context,
    Spread,
    Worker,
    _cdc_connector,
    _cdc_settings,
    _slot_active,
    _sql,
    _timed,
    _wait,
    _watch,
)
from _db_load import (
    _SPAWN,
    Arrivals,
    Child,
    RawRead,
    WriterResult,
    consume_arrivals,
    read_slot,
    write_steady,
)
from _harness import create_topic
from _streams_runs import Watermark


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
    _timed(result, worker, first, end_cpu, end, rows, result.changes)
    if seen < rows:
        result.error += f" connector: {seen:,} of {rows:,} changes; log: {worker.log_tail(600)}"
    return result
