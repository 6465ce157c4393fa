"""bench/databases.py's sink phase: jdbc-sink upserts beside a plain SQLAlchemy upsert."""

from __future__ import annotations

from dataclasses import dataclass, field

from _db_common import SINK_BATCH, Context, Worker, _sql, _timed, _watch
from _db_load import (
    Child,
    UpsertRun,
    produce_sink_input,
    reference_upsert,
)
from _harness import create_topic


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
    _timed(result, worker, first, end_cpu, end, rows, result.written)
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
