"""postgres-cdc's CPU per change, without PostgreSQL or a broker: recorded pgoutput → bytes.

    python bench/cdc_events.py [--changes N] [--txn-rows R] [--repeat K] [--schemas true|false]
                               [--profile]

Feeds ``--changes`` Insert messages (``--txn-rows`` per transaction, the lag bench's table:
``id bigint primary key, payload text`` of 100 bytes, ``committed_at_us bigint``) as pgoutput v1
payloads through a :class:`PostgresCdcTask` whose replication stream is replaced by the recorded
messages, and the Connect runtime's source loop (``SourceTaskRunner``: ``poll_batch``, the JSON
key and value converters, ``produce()`` into a real librdkafka producer's local queue — no broker
is reached, and the queue is purged at the end). It prints the task thread's CPU per change for
the whole loop and for the task alone (decode + events, no conversion), best of ``--repeat``
runs, so that it is steady on a noisy machine. ``--profile`` prints a cProfile of one run.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import struct
import time
from collections.abc import Iterator
from typing import Any

from sluice.connect.api.connector import SourceTask
from sluice.connect.api.data import SourceBatch
from sluice.connect.runtime.offsets import OffsetStore
from sluice.connect.runtime.source_runner import SourceTaskRunner
from sluice.connectors.postgres.catalog import CatalogColumn
from sluice.connectors.postgres.changes import ChangeStream
from sluice.connectors.postgres.config import Settings
from sluice.connectors.postgres.events import EventBuilder
from sluice.connectors.postgres.pgoutput import PG_EPOCH_US
from sluice.connectors.postgres.replication import RawMessage
from sluice.connectors.postgres.source import PostgresCdcTask

OID = 16384
CONFIG = {
    "database.hostname": "127.0.0.1",
    "database.user": "sluice",
    "database.dbname": "bench",
    "topic.prefix": "lag5000",
    "table.include.list": r"public\.events_5000",
    "slot.name": "lag5000",
    "snapshot.mode": "never",
}
CATALOG = [
    CatalogColumn("id", 20, -1, True, 1),
    CatalogColumn("payload", 25, -1, False, None),
    CatalogColumn("committed_at_us", 20, -1, False, None),
]


def _string(text: str) -> bytes:
    return text.encode() + b"\0"


def relation() -> bytes:
    """The Relation message of ``public.events_5000``."""
    body = b"R" + struct.pack(">I", OID) + _string("public") + _string("events_5000") + b"d"
    body += struct.pack(">h", len(CATALOG))
    for column in CATALOG:
        flags = 1 if column.key_position else 0
        body += struct.pack(">b", flags) + _string(column.name)
        body += struct.pack(">Ii", column.type_oid, column.modifier)
    return body


def insert(row_id: int, now_us: int) -> bytes:
    """An Insert of one row (text values, as pgoutput sends them)."""
    values = [str(row_id), "x" * 100, str(now_us)]
    body = b"I" + struct.pack(">I", OID) + b"N" + struct.pack(">h", len(values))
    for value in values:
        data = value.encode()
        body += b"t" + struct.pack(">i", len(data)) + data
    return body


def recorded(changes: int, txn_rows: int) -> list[RawMessage]:
    """A relation, then transactions of ``txn_rows`` inserts: Begin, Inserts, Commit."""
    now_us = time.time_ns() // 1000
    messages = [RawMessage(100, relation())]
    lsn = 1000
    for start in range(0, changes, txn_rows):
        rows = range(start, min(changes, start + txn_rows))
        final = lsn + 200 * (len(rows) + 1)
        pg_time = now_us - PG_EPOCH_US
        messages.append(RawMessage(lsn, b"B" + struct.pack(">QqI", final, pg_time, 700 + start)))
        for row_id in rows:
            lsn += 200
            messages.append(RawMessage(lsn, insert(row_id, now_us)))
        messages.append(
            RawMessage(final, b"C" + struct.pack(">bQQq", 0, final, final + 50, pg_time))
        )
        lsn = final + 100
    return messages


class RecordedStream:
    """Stands in for :class:`ReplicationStream`: hands out recorded messages, then None."""

    def __init__(self, messages: list[RawMessage]) -> None:
        self._messages: Iterator[RawMessage] = iter(messages)
        self.wal_end = 0

    def read(self, timeout_s: float) -> RawMessage | None:
        message = next(self._messages, None)
        if message is None:
            time.sleep(timeout_s)  # as select() would: no CPU
        return message

    def confirm(self, lsn: int) -> None:
        pass

    def close(self) -> None:
        pass


def task_for(messages: list[RawMessage]) -> PostgresCdcTask:
    """A streaming task reading ``messages`` (no database)."""
    task = PostgresCdcTask()
    settings = task.settings = Settings.parse(dict(CONFIG))
    task.events = EventBuilder(
        settings.prefix, settings.database, settings.heartbeat_topic, task.clock_ns
    )
    task._replication = RecordedStream(messages)  # type: ignore[assignment]
    task._stream = ChangeStream(settings, task.events, lambda oid: CATALOG, 0)
    return task


class _NoOffsets(OffsetStore):
    def __init__(self) -> None:
        pass

    def put(self, connector: str, partition: Any, offset: Any) -> None:
        pass

    def flush(self) -> None:
        pass


def runner_for(task: SourceTask, schemas: bool) -> SourceTaskRunner:
    """A runner whose producer queues locally (no broker is reached)."""
    enable = "true" if schemas else "false"
    config = {
        "key.converter": "json",
        "value.converter": "json",
        "key.converter.schemas.enable": enable,
        "value.converter.schemas.enable": enable,
    }
    worker = {
        "bootstrap.servers": "127.0.0.1:9",
        "producer.queue.buffering.max.messages": 2_000_000,
        "producer.queue.buffering.max.kbytes": 4_000_000,
        "producer.message.timeout.ms": 600_000,
        "producer.log_level": 0,
    }
    return SourceTaskRunner("bench", 0, task, config, worker, _NoOffsets())


def drain_task(task: SourceTask) -> int:
    """Poll the task until it has nothing more; the number of records."""
    count = 0
    while True:
        items = task.poll_batch()
        if not items:
            return count
        for item in items:
            count += len(item) if type(item) is SourceBatch else 1


def drain_runner(runner: SourceTaskRunner) -> int:
    """The runtime's loop body (``SourceTaskRunner.execute``) until the task has nothing more."""
    task, count = runner.task, 0
    while True:
        items = task.poll_batch()
        if not items:
            return count
        for item in items:
            if type(item) is SourceBatch:
                runner._send_batch(item)
                count += len(item)
            else:
                runner._send(item)  # type: ignore[arg-type]
                count += 1
        runner.producer.poll(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument("--txn-rows", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--schemas", choices=("true", "false"), default="true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    messages = recorded(args.changes, args.txn_rows)
    schemas = args.schemas == "true"
    best_task = best_all = float("inf")
    size = 0
    for _ in range(args.repeat):
        task = task_for(messages)
        began = time.thread_time()
        count = drain_task(task)
        best_task = min(best_task, (time.thread_time() - began) / count * 1e6)
        runner = runner_for(task_for(messages), schemas)
        try:
            began = time.thread_time()
            count = drain_runner(runner)
            best_all = min(best_all, (time.thread_time() - began) / count * 1e6)
            size = len(runner.producer)
        finally:
            runner.producer.purge()
            runner.producer.flush(0)
    print(
        f"{args.changes:,} changes, {args.txn_rows} per transaction, schemas.enable={schemas}: "
        f"task {best_task:.1f} µs/change, task + runtime {best_all:.1f} µs/change "
        f"(best of {args.repeat}; {size:,} records queued)"
    )
    if args.profile:
        runner = runner_for(task_for(messages), schemas)
        profile = cProfile.Profile()
        profile.runcall(drain_runner, runner)
        runner.producer.purge()
        pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
