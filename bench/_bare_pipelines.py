"""The streams benchmark pipelines as hand-written confluent-kafka loops: the client's ceiling.

    python bench/_bare_pipelines.py PIPELINE --bootstrap HOST:PORT --topic IN --out OUT \\
        --group GROUP --state-dir DIR [--commit-interval S]

No framework: one ``consume()`` loop per process doing what the pipeline asks with the fewest
Python operations that still give the same output records (``filter``: ``orjson.loads``, the
test, a new dict, ``orjson.dumps``, ``produce``; ``count`` and ``window``: a dict of counts),
committing offsets every ``--commit-interval`` seconds after a producer flush (at-least-once,
as the frameworks do). The state is a dict in memory with no changelog: this is not a
fault-tolerant program, only the most that a Python process can do per record with this client
on this machine, which bounds every framework built on it. Keys stay bytes (no decode);
counts are written as JSON numbers and window keys as Sluice writes them.

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


def main() -> None:
    args = pipeline_parser().parse_args()
    stop = StopOnTerm()
    consumer, producer = _clients(args)
    step = _step(args.pipeline, args.out, producer.produce)
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
            producer.flush(60)
            consumer.commit(asynchronous=False)
            last_commit, read = time.monotonic(), False
    producer.flush(60)
    consumer.close()


if __name__ == "__main__":
    main()
