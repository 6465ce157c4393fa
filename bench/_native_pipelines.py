"""The streams benchmark pipelines as Python loops that do not go through librdkafka.

    python bench/_native_pipelines.py PIPELINE --bootstrap HOST:PORT --topic IN --out OUT \\
        --group GROUP --state-dir DIR [--commit-interval S]

The same per-record work as ``_bare_pipelines.py`` (``orjson``, a dict of counts), but the
records are read and written without a Kafka client library: blocking Fetch and Produce
requests over one connection each (``sluice.wire``, kio's message classes) and aiokafka's
Cython record-batch codec (``DefaultRecordBatch`` iteration, ``DefaultRecordBatchBuilder``).
One request at a time, no group membership and no offset commits, the input read from offset 0
of every partition, the output written to partition 0 of a one-partition topic with
``acks=-1``; it stops at the first error. This is not something to run in production: it
measures what a Python process does per record when the client library's own threads and
per-message objects are out of the way (see docs/benchmarks.md, "Streams"). Runs until SIGTERM.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import orjson
from _pipeline_cli import StopOnTerm, pipeline_parser
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from kio.schema.fetch.v11 import request as fetch
from kio.schema.produce.v8 import request as produce

from sluice import wire

FETCH = wire.Api(1, "Fetch", 11, 11)
PRODUCE = wire.Api(0, "Produce", 8, 8)
WINDOW_MS = 60_000
FETCH_BYTES = 512 * 1024  # the output batch of one fetch stays below message.max.bytes


def _append_step(pipeline: str) -> Callable[[Any, Callable[..., Any], int], int]:
    """``step(batch, append, n)``: the pipeline over one input batch, appending from offset
    delta ``n``; returns the next offset delta."""
    loads, dumps = orjson.loads, orjson.dumps
    counts: dict[Any, int] = {}
    get = counts.get

    def filter_(batch: Any, append: Callable[..., Any], n: int) -> int:
        for r in batch:
            v = loads(r.value)
            if v["amount"] > 10:
                mapped = {"user": v["user"], "amount_cents": int(v["amount"] * 100)}
                append(n, r.timestamp, r.key, dumps(mapped), [])
                n += 1
        return n

    def count(batch: Any, append: Callable[..., Any], n: int) -> int:
        for r in batch:
            key = r.key
            loads(r.value)
            c = counts[key] = get(key, 0) + 1
            append(n, r.timestamp, key, b"%d" % c, [])
            n += 1
        return n

    def window(batch: Any, append: Callable[..., Any], n: int) -> int:
        for r in batch:
            key, ts = r.key, r.timestamp
            loads(r.value)
            start = ts - ts % WINDOW_MS
            c = counts[(key, start)] = get((key, start), 0) + 1
            windowed = b'{"key":"%b","window":{"start":%d,"end":%d}}' % (
                key,
                start,
                start + WINDOW_MS,
            )
            append(n, ts, windowed, b"%d" % c, [])
            n += 1
        return n

    return {"filter": filter_, "count": count, "window": window}[pipeline]


def _partitions(bootstrap: str, topic: str) -> list[int]:
    from confluent_kafka.admin import AdminClient

    found = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=30)
    return sorted(found.topics[topic].partitions)


def main() -> None:
    args = pipeline_parser().parse_args()
    stop = StopOnTerm()
    reader = wire.connect(args.bootstrap, timeout=30)
    writer = wire.connect(args.bootstrap, timeout=30)
    if _partitions(args.bootstrap, args.out) != [0]:
        raise SystemExit(f"{args.out} must have one partition")
    positions = dict.fromkeys(_partitions(args.bootstrap, args.topic), 0)
    step = _append_step(args.pipeline)
    while not stop.requested:
        answer = reader.call(
            FETCH,
            replica_id=-1,
            max_wait=datetime.timedelta(milliseconds=100),
            min_bytes=1,
            max_bytes=FETCH_BYTES,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=(
                fetch.FetchTopic(
                    topic=args.topic,
                    partitions=tuple(
                        fetch.FetchPartition(
                            partition=p,
                            current_leader_epoch=-1,
                            fetch_offset=offset,
                            log_start_offset=-1,
                            partition_max_bytes=FETCH_BYTES,
                        )
                        for p, offset in positions.items()
                    ),
                ),
            ),
            forgotten_topics_data=(),
            rack_id="",
        )
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
        appended = 0
        for data in answer.responses[0].partitions:
            if data.error_code:
                where = f"{args.topic}-{data.partition_index}"
                raise SystemExit(f"fetch from {where}: {data.error_code}")
            records = MemoryRecords(data.records or b"")
            while (batch := records.next_batch()) is not None:
                if not batch.is_control_batch:
                    appended = step(batch, builder.append, appended)
                positions[data.partition_index] = batch.next_offset
        if not appended:
            continue
        response = writer.call(
            PRODUCE,
            transactional_id=None,
            acks=-1,
            timeout=datetime.timedelta(seconds=30),
            topic_data=(
                produce.TopicProduceData(
                    name=args.out,
                    partition_data=(
                        produce.PartitionProduceData(index=0, records=bytes(builder.build())),
                    ),
                ),
            ),
        )
        error = response.responses[0].partition_responses[0].error_code
        if error:
            raise SystemExit(f"produce to {args.out}: {error}")


if __name__ == "__main__":
    main()
