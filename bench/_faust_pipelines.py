"""The three streams benchmark pipelines in faust-streaming; run by ``bench/streams.py``.

    python bench/_faust_pipelines.py PIPELINE --bootstrap HOST:PORT --topic IN --out OUT \\
        --group APP_ID --state-dir DIR

One agent per pipeline, written as the faust documentation shows (``async for`` over the stream,
``await topic.send(...)`` per output). Each emits one output record per input record it keeps, as
the Sluice and quixstreams versions do:

* ``filter``: ``amount > 10`` tested in the agent, then a new dict sent;
* ``count``: a ``Table`` (``default=int``) incremented per record, the new count sent;
* ``window``: a tumbling ``Table`` (60 s, by the record's Kafka timestamp, faust's default
  relativity), incremented per record, the window's ``current()`` count sent.

Tables live in memory (``store="memory://"``, faust's default; each update also goes to the
table's changelog topic, as faust always does). The worker runs until SIGTERM.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from _pipeline_cli import pipeline_parser


def main() -> None:
    args = pipeline_parser().parse_args()

    import faust

    app = faust.App(
        args.group,
        broker=f"kafka://{args.bootstrap}",
        datadir=args.state_dir,
        store="memory://",
        topic_partitions=1,
        topic_replication_factor=1,
        consumer_auto_offset_reset="earliest",
        broker_commit_interval=args.commit_interval,
        web_enabled=False,
    )
    source = app.topic(args.topic, key_type=bytes, key_serializer="raw", value_serializer="json")
    sink = app.topic(args.out, key_serializer="raw", value_serializer="json")

    if args.pipeline == "filter":

        @app.agent(source)
        async def filter_map(stream: Any) -> None:
            async for key, value in stream.items():
                if value["amount"] > 10:
                    cents = int(value["amount"] * 100)
                    await sink.send(key=key, value={"user": value["user"], "amount_cents": cents})

    elif args.pipeline == "count":
        counts = app.Table("counts", default=int, partitions=1)

        @app.agent(source)
        async def count(stream: Any) -> None:
            async for key, _value in stream.items():
                user = key.decode()
                counts[user] += 1
                await sink.send(key=key, value=counts[user])

    else:
        windows = app.Table("window-counts", default=int, partitions=1).tumbling(
            60, expires=timedelta(days=1)
        )

        @app.agent(source)
        async def window_count(stream: Any) -> None:
            async for key, _value in stream.items():
                user = key.decode()
                windows[user] += 1
                await sink.send(key=key, value=windows[user].current())

    faust.Worker(app, loglevel="INFO", quiet=True).execute_from_commandline()


if __name__ == "__main__":
    main()
