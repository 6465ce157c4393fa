"""The child-process side of ``bench/databases.py``: a paced writer, a lag consumer, a raw
logical-replication reader, the sink's input producer and the plain SQLAlchemy upsert.

Each function runs in its own spawned process (:class:`Child`) and returns a picklable result.
Every loop is bounded by a count and a deadline. Times that cross processes are wall-clock
microseconds (``time.time_ns() // 1000``: one machine, one clock); durations are monotonic.
"""

from __future__ import annotations

import datetime
import json
import multiprocessing as mp
import os
import select
import signal
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

_SPAWN = mp.get_context("spawn")
PAYLOAD_BYTES = 100
SINK_EPOCH_MS = 1_790_000_000_000  # updated_at of row 0 (2026-09-21), one ms more per row


def now_us() -> int:
    return time.time_ns() // 1000


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


# -- running a child -----------------------------------------------------------------------------
def _child_main(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


class Child:
    """``fn(*args)`` in a fresh spawned process, started now; :meth:`result` waits for it."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        self.name = fn.__name__
        self._parent, child = _SPAWN.Pipe(duplex=False)
        self.process = _SPAWN.Process(target=_child_main, args=(child, fn, args), daemon=True)
        self.process.start()
        child.close()

    def result(self, timeout: float) -> Any:
        """The function's return value, within ``timeout`` seconds (else TimeoutError)."""
        if not self._parent.poll(timeout):
            raise TimeoutError(f"{self.name} did not finish within {timeout:.0f}s")
        status, value = self._parent.recv()
        if status != "ok":
            raise RuntimeError(f"{self.name} failed: {value}")
        return value

    def stop(self) -> None:
        """SIGTERM, then SIGKILL, if it still runs."""
        proc = self.process
        if proc.is_alive() and proc.pid is not None:
            os.kill(proc.pid, signal.SIGTERM)
            proc.join(5)
        if proc.is_alive() and proc.pid is not None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(5)


# -- the paced writer ----------------------------------------------------------------------------
@dataclass
class WriterResult:
    """Transactions of ``txn_rows`` rows, ids 0, 1, 2…: transaction ``k`` holds ids
    ``k * txn_rows`` to ``(k + 1) * txn_rows - 1``; ``commit_us[k]`` is when its COMMIT returned."""

    txn_rows: int
    commit_us: array[int] = field(default_factory=lambda: array("q"))
    statement_us: array[int] = field(default_factory=lambda: array("q"))  # send → commit returned
    late: int = 0  # transactions started more than one period after their slot
    seconds: float = 0.0  # first transaction's start → last commit
    cpu: float = 0.0

    @property
    def rows(self) -> int:
        return len(self.commit_us) * self.txn_rows

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def write_steady(dsn: str, table: str, rate: float, txn_rows: int, seconds: float) -> WriterResult:
    """Insert ``rate`` rows/s into ``table(id, payload, committed_at_us)`` for ``seconds``: one
    multi-row INSERT of ``txn_rows`` rows every ``txn_rows / rate`` s on a monotonic schedule, in
    autocommit (the statement is its transaction: committed when it returns). ``committed_at_us``
    is the wall clock just before the statement is sent."""
    import psycopg2

    result = WriterResult(txn_rows)
    period = txn_rows / rate
    payload = "x" * PAYLOAD_BYTES
    connection = psycopg2.connect(dsn)
    connection.autocommit = True
    cursor = connection.cursor()
    placeholders = ",".join(["(%s,%s,%s)"] * txn_rows)
    statement = f"INSERT INTO {table} (id, payload, committed_at_us) VALUES {placeholders}"
    cpu0 = _cpu()
    start = time.monotonic()
    try:
        for k in range(int(seconds / period) + 1):
            slot = start + k * period
            if slot >= start + seconds:
                break
            wait = slot - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            elif wait < -period:
                result.late += 1
            first = k * txn_rows
            sent = now_us()
            params: list[object] = []
            for i in range(first, first + txn_rows):
                params += (i, payload, sent)
            cursor.execute(statement, params)
            done = now_us()
            result.commit_us.append(done)
            result.statement_us.append(done - sent)
        result.seconds = time.monotonic() - start
    finally:
        result.cpu = _cpu() - cpu0
        connection.close()
    return result


# -- the lag consumer ----------------------------------------------------------------------------
@dataclass
class Arrivals:
    """What a reader saw: per record its id, when it was received and (Kafka) its timestamp."""

    ids: array[int] = field(default_factory=lambda: array("q"))
    received_us: array[int] = field(default_factory=lambda: array("q"))
    produced_ms: array[int] = field(default_factory=lambda: array("q"))  # CreateTime
    other: int = 0  # records without an id (tombstones, heartbeats)
    first_value: str = ""
    value_bytes: int = 0  # the first value's size
    error: str = ""
    cpu: float = 0.0


def _record_id(key: bytes) -> int:
    parsed = json.loads(key)
    return int(parsed.get("payload", parsed)["id"])


def consume_arrivals(
    bootstrap: str, topic: str, expected: Any, ready: Any, deadline_s: float
) -> Arrivals:
    """Read ``topic`` (partition 0, from the start) until ``expected.value`` (a shared integer,
    -1 until the writer is done) distinct ids arrived or ``deadline_s`` passed; ``ready`` is set
    once the partition is assigned and fetched from. Each record's id is taken from its key."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    out = Arrivals()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-lag",
            "enable.auto.commit": False,
            "log_level": 0,
        }
    )
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    seen: set[int] = set()
    cpu0 = _cpu()
    deadline = time.monotonic() + deadline_s
    try:
        consumer.consume(100, 0.5)  # the fetch session is up: nothing was written yet
        ready.set()
        while time.monotonic() < deadline:
            target = expected.value
            if 0 <= target <= len(seen):
                break
            # poll() returns as soon as one record is there; consume(n, 0) then takes what else
            # is queued without waiting (consume(n, t) would wait for n records or t seconds).
            head = consumer.poll(0.1)
            if head is None:
                continue
            received = now_us()
            messages = [head, *consumer.consume(1000, 0)]
            for message in messages:
                if message.error():
                    continue
                key, value = message.key(), message.value()
                if key is None or value is None:
                    out.other += 1
                    continue
                try:
                    record_id = _record_id(key)
                except (ValueError, KeyError, TypeError):
                    out.other += 1
                    continue
                if not out.first_value:
                    out.first_value = value.decode(errors="replace")
                    out.value_bytes = len(value)
                out.ids.append(record_id)
                out.received_us.append(received)
                out.produced_ms.append(message.timestamp()[1])
                seen.add(record_id)
    except Exception as error:
        out.error = f"{type(error).__name__}: {error}"
    finally:
        out.cpu = _cpu() - cpu0
        consumer.close()
    return out


# -- the raw logical replication reader ----------------------------------------------------------
@dataclass
class RawRead:
    """What the raw reader saw: Insert messages (their ids when asked), the time of the first
    and of the last, and per Insert its arrival when asked."""

    inserts: int = 0
    messages: int = 0
    first: float = 0.0  # monotonic
    last: float = 0.0
    arrivals: Arrivals = field(default_factory=Arrivals)
    error: str = ""
    cpu: float = 0.0

    @property
    def per_second(self) -> float:
        span = self.last - self.first
        return (self.inserts - 1) / span if span > 0 and self.inserts > 1 else 0.0


def _first_int(payload: bytes) -> int:
    """The first column of an Insert (``I``, Int32 relid, ``N``, Int16 ncols, ``t``, Int32 len,
    text) as an integer."""
    length = int.from_bytes(payload[9:13], "big")
    return int(payload[13 : 13 + length])


def read_slot(
    dsn: str,
    slot: str,
    publication: str,
    expected: Any,
    ready: Any,
    deadline_s: float,
    timed: bool,
) -> RawRead:
    """Stream ``slot`` (pgoutput, protocol 1) with psycopg2 alone, counting Insert messages,
    until ``expected.value`` of them (-1: not known yet) or ``deadline_s``. ``timed``: also
    parse each Insert's id (its first column) and note when it arrived, as the lag consumer
    does. Status updates go every second (psycopg2's own), confirming nothing."""
    import psycopg2
    import psycopg2.extras

    out = RawRead()
    connection = psycopg2.connect(
        dsn, connection_factory=psycopg2.extras.LogicalReplicationConnection
    )
    cursor = connection.cursor()
    cpu0 = _cpu()
    deadline = time.monotonic() + deadline_s
    try:
        cursor.start_replication(
            slot_name=slot,
            decode=False,
            options={"proto_version": "1", "publication_names": publication},
            status_interval=1,
        )
        ready.set()
        read = cursor.read_message
        while time.monotonic() < deadline:
            target = expected.value
            if 0 <= target <= out.inserts:
                break
            message = read()
            if message is None:
                select.select([cursor], [], [], 0.1)
                continue
            out.messages += 1
            payload = message.payload
            if payload[:1] != b"I":
                continue
            out.inserts += 1
            out.last = time.monotonic()
            if out.inserts == 1:
                out.first = out.last
            if timed:
                out.arrivals.ids.append(_first_int(payload))
                out.arrivals.received_us.append(now_us())
    except Exception as error:
        out.error = f"{type(error).__name__}: {error}"
    finally:
        out.cpu = _cpu() - cpu0
        connection.close()
    return out


# -- the sink's input and its plain reference ----------------------------------------------------
SINK_KEY_SCHEMA = {
    "type": "struct",
    "name": "bench.Key",
    "optional": False,
    "fields": [{"field": "id", "type": "int64", "optional": False}],
}
SINK_VALUE_SCHEMA = {
    "type": "struct",
    "name": "bench.Customer",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "name", "type": "string", "optional": False},
        {"field": "amount", "type": "float64", "optional": True},
        {
            "field": "updated_at",
            "type": "int64",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
        },
    ],
}


def sink_row(i: int) -> tuple[int, str, float, int]:
    """Row ``i`` of the sink's input: id, name, amount, updated_at (ms since the epoch)."""
    return i, f"customer-{i:08d}", round((i * 37) % 1_000_000 / 100, 2), SINK_EPOCH_MS + i


def produce_sink_input(bootstrap: str, topic: str, rows: int, deadline_s: float) -> float:
    """``rows`` JSON records with schemas (struct key ``{id}``, struct value ``{id, name,
    amount, updated_at}``) into ``topic``; returns the seconds it took."""
    from confluent_kafka import Producer

    key_head = '{"schema":' + json.dumps(SINK_KEY_SCHEMA, separators=(",", ":")) + ',"payload":'
    value_head = '{"schema":' + json.dumps(SINK_VALUE_SCHEMA, separators=(",", ":")) + ',"payload":'
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 200_000,
            "delivery.report.only.error": True,
            "log_level": 0,
        }
    )
    began = time.monotonic()
    deadline = began + deadline_s
    for i in range(rows):
        if i % 10_000 == 0 and time.monotonic() > deadline:
            raise TimeoutError(f"produced {i:,} of {rows:,} in {deadline_s:.0f}s")
        row_id, name, amount, updated = sink_row(i)
        key = f'{key_head}{{"id":{row_id}}}}}'
        value = (
            f'{value_head}{{"id":{row_id},"name":"{name}","amount":{amount},'
            f'"updated_at":{updated}}}}}'
        )
        while True:
            try:
                producer.produce(topic, value.encode(), key.encode())
                break
            except BufferError:
                producer.poll(0.01)
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    if left:
        raise TimeoutError(f"{left} records not acknowledged")
    return time.monotonic() - began


@dataclass
class UpsertRun:
    method: str
    rows: int
    seconds: float
    cpu: float

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def reference_upsert(
    url: str, table: str, rows: int, batch: int, deadline_s: float, method: str = "executemany"
) -> UpsertRun:
    """The plain batched write: the sink's rows, already in memory as Python values, upserted
    into ``table`` (made here as the sink makes its own), one transaction per ``batch`` rows.

    ``executemany``: SQLAlchemy, ``INSERT … ON CONFLICT (id) DO UPDATE`` executed with a list of
    ``batch`` parameter dicts — the statement and the call the sink makes per consumed batch,
    minus Kafka and Connect. (SQLAlchemy's psycopg2 dialect does not rewrite an ``ON CONFLICT``
    insert into one multi-row statement, "insertmanyvalues", as it does a plain INSERT: psycopg2's
    ``executemany`` then sends one statement per row.) ``values``: the same upsert as one
    multi-row statement per batch (psycopg2's ``execute_values`` on SQLAlchemy's connection) —
    what batching could reach."""
    import psycopg2.extras
    import sqlalchemy as sa
    from sqlalchemy.dialects import postgresql

    engine = sa.create_engine(url)
    metadata = sa.MetaData()
    target = sa.Table(
        table,
        metadata,
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("amount", sa.Double),
        sa.Column("updated_at", sa.DateTime),
    )
    metadata.drop_all(engine)
    metadata.create_all(engine)
    epoch = datetime.datetime(1970, 1, 1)
    params = [
        {
            "id": i,
            "name": name,
            "amount": amount,
            "updated_at": epoch + datetime.timedelta(milliseconds=updated),
        }
        for i, name, amount, updated in map(sink_row, range(rows))
    ]
    insert = postgresql.insert(target)
    statement = insert.on_conflict_do_update(
        index_elements=[target.c.id],
        set_={c: insert.excluded[c] for c in ("name", "amount", "updated_at")},
    )
    values_sql = (
        f"INSERT INTO {table} (id, name, amount, updated_at) VALUES %s ON CONFLICT (id) DO "
        "UPDATE SET name = excluded.name, amount = excluded.amount, "
        "updated_at = excluded.updated_at"
    )
    tuples = [(p["id"], p["name"], p["amount"], p["updated_at"]) for p in params]
    cpu0 = _cpu()
    began = time.monotonic()
    deadline = began + deadline_s
    try:
        for start in range(0, rows, batch):
            if time.monotonic() > deadline:
                raise TimeoutError(f"upserted {start:,} of {rows:,} rows in {deadline_s:.0f}s")
            with engine.begin() as connection:
                if method == "values":
                    cursor = connection.connection.cursor()
                    chunk = tuples[start : start + batch]
                    psycopg2.extras.execute_values(cursor, values_sql, chunk, page_size=batch)
                else:
                    connection.execute(statement, params[start : start + batch])
        seconds = time.monotonic() - began
    finally:
        engine.dispose()
    return UpsertRun(method, rows, seconds, _cpu() - cpu0)
