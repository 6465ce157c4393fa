"""The streams benchmark pipelines as hand-written confluent-kafka loops: the client's ceiling.

    python bench/_bare_pipelines.py PIPELINE --bootstrap HOST:PORT --topic IN --out OUT \\
        --group GROUP --state-dir DIR [--commit-interval S] [--changelog TOPIC]

No framework: one ``consume()`` loop per process doing what the pipeline asks with the fewest
Python operations that still give the same output records (``filter``: ``orjson.loads``, the
test, a new dict, ``orjson.dumps``, ``produce``; ``count`` and ``window``: a dict of counts),
committing offsets every ``--commit-interval`` seconds after a producer flush (at-least-once,
as the frameworks do). The state is a dict in memory with no changelog: this is not a
fault-tolerant program, only the most that a Python process can do per record with this client
on this machine, which bounds every framework built on it. Keys stay bytes (no decode);
counts are written as JSON numbers and window keys as Sluice writes them.

``--changelog TOPIC`` (``bench/streams.py``'s **bare-changelog** rows): ``count`` and ``window``
also keep their state fault-tolerant as Kafka Streams (and Sluice) do: the keys changed since
the last commit are remembered (a dict: key → its latest count) and, at each commit, written to
``TOPIC`` (compacted, made by the parent) as one record per key changed, before the producer
flush and the offset commit. The changelog layout is Sluice's: ``count`` logs ``key → count``
(JSON number), ``window`` logs ``key + 8-byte big-endian window start → count`` with the record's
timestamp (``streams/state/window.py``). ``filter`` is stateless and writes none.

Client settings are Sluice's stream thread's (``streams/runtime/thread_clients.py`` on top of
``sluice.clients``): ``fetch.queue.backoff.ms=50``, ``linger.ms=5``, ``batch.num.messages=10000``.
Runs until SIGTERM.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from _pipeline_cli import StopOnTerm, pipeline_parser

WINDOW_MS = 60_000


def _clients(args: argparse.Namespace) -> tuple[Any, Any]:
    from confluent_kafka import Consumer, Producer

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 50,
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            "delivery.report.only.error": True,
        }
    )
    return consumer, producer


def _step(pipeline: str, out: str, produce: Any) -> Any:
    """The per-batch function of ``pipeline``: ``step(messages)`` processes and produces."""
    import orjson

    loads, dumps = orjson.loads, orjson.dumps
    counts: dict[Any, int] = {}
    get = counts.get

    def filter_(messages: list[Any]) -> None:
        for m in messages:
            v = loads(m.value())
            if v["amount"] > 10:
                mapped = {"user": v["user"], "amount_cents": int(v["amount"] * 100)}
                produce(out, dumps(mapped), m.key(), -1, None, None, m.timestamp()[1])

    def count(messages: list[Any]) -> None:
        for m in messages:
            key = m.key()
            loads(m.value())  # the frameworks read the value, as a count of JSON records does
            n = counts[key] = get(key, 0) + 1
            produce(out, b"%d" % n, key, -1, None, None, m.timestamp()[1])

    def window(messages: list[Any]) -> None:
        for m in messages:
            key = m.key()
            loads(m.value())
            ts = m.timestamp()[1]
            start = ts - ts % WINDOW_MS
            n = counts[(key, start)] = get((key, start), 0) + 1
            windowed = b'{"key":"%b","window":{"start":%d,"end":%d}}' % (
                key,
                start,
                start + WINDOW_MS,
            )
            produce(out, b"%d" % n, windowed, -1, None, None, ts)

    return {"filter": filter_, "count": count, "window": window}[pipeline]


def _logged_step(pipeline: str, out: str, produce: Any, changelog: str) -> tuple[Any, Any]:
    """``(step, flush_changelog)`` for ``pipeline`` with a changelog: ``step`` as in
    :func:`_step` and also notes each changed key; ``flush_changelog()`` produces one changelog
    record per key changed since its last call (the commit's job)."""
    import struct

    import orjson

    loads = orjson.loads
    start_bytes = struct.Struct(">q").pack
    counts: dict[Any, int] = {}
    get = counts.get
    dirty: dict[Any, tuple[int, int]] = {}  # key → (count, timestamp): the latest per commit

    def count(messages: list[Any]) -> None:
        for m in messages:
            key = m.key()
            loads(m.value())
            ts = m.timestamp()[1]
            n = counts[key] = get(key, 0) + 1
            dirty[key] = (n, ts)
            produce(out, b"%d" % n, key, -1, None, None, ts)

    def window(messages: list[Any]) -> None:
        for m in messages:
            key = m.key()
            loads(m.value())
            ts = m.timestamp()[1]
            start = ts - ts % WINDOW_MS
            n = counts[(key, start)] = get((key, start), 0) + 1
            dirty[(key, start)] = (n, ts)
            windowed = b'{"key":"%b","window":{"start":%d,"end":%d}}' % (
                key,
                start,
                start + WINDOW_MS,
            )
            produce(out, b"%d" % n, windowed, -1, None, None, ts)

    def flush_count() -> None:
        for key, (n, ts) in dirty.items():
            produce(changelog, b"%d" % n, key, 0, None, None, ts)
        dirty.clear()

    def flush_window() -> None:
        for (key, start), (n, ts) in dirty.items():
            produce(changelog, b"%d" % n, key + start_bytes(start), 0, None, None, ts)
        dirty.clear()

    if pipeline == "count":
        return count, flush_count
    if pipeline == "window":
        return window, flush_window
    return _step(pipeline, out, produce), lambda: None  # stateless: nothing to log


def main() -> None:
    parser = pipeline_parser()
    parser.add_argument("--changelog", default="", help="write the state's changelog here")
    args = parser.parse_args()
    stop = StopOnTerm()
    consumer, producer = _clients(args)
    if args.changelog:
        step, flush_changelog = _logged_step(
            args.pipeline, args.out, producer.produce, args.changelog
        )
    else:
        step, flush_changelog = _step(args.pipeline, args.out, producer.produce), lambda: None
    consumer.subscribe([args.topic])
    last_commit = time.monotonic()
    read = False
    while not stop.requested:
        messages = consumer.consume(1000, 0.1)
        if messages:
            step(messages)
            read = True
        producer.poll(0)
        if read and time.monotonic() - last_commit >= args.commit_interval:
            flush_changelog()  # one record per key changed since the last commit
            producer.flush(60)
            consumer.commit(asynchronous=False)
            last_commit, read = time.monotonic(), False
    flush_changelog()
    producer.flush(60)
    consumer.close()


if __name__ == "__main__":
    main()
