"""The streams benchmark pipelines in quixstreams, one per process; run by ``bench/streams.py``.

    build/bench-venvs/quixstreams/bin/python bench/_quix_pipelines.py PIPELINE \\
        --bootstrap HOST:PORT --topic IN --out OUT --group GROUP --state-dir DIR

Runs in its own virtualenv (quixstreams 3.28.1 pins confluent-kafka < 2.13, Sluice pins 2.16.1),
so it imports nothing from Sluice or the bench harness. Each pipeline emits one output record per
input record it keeps, as the Sluice and faust versions do, so that the parent knows how many
outputs mean "all input processed":

* ``filter``: ``filter(amount > 10)`` then ``apply`` (a new dict) — one output per kept record;
* ``count``: a stateful ``apply`` keeping a count per message key (input is keyed by user, so no
  ``group_by`` is needed, as Sluice's ``group_by_key`` needs no repartition) — one per record;
* ``window``: ``tumbling_window(60 s).count().current()`` — one update per record.

``app.run()`` processes until SIGTERM (quixstreams stops, commits and closes on it).
"""

from __future__ import annotations

from typing import Any

from _pipeline_cli import pipeline_parser


def _count(value: Any, state: Any) -> int:
    total = state.get("count", 0) + 1
    state.set("count", total)
    return total


def main() -> None:
    args = pipeline_parser().parse_args()

    from quixstreams import Application

    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.group,
        auto_offset_reset="earliest",
        commit_interval=args.commit_interval,
        state_dir=args.state_dir,
        loglevel="WARNING",
    )
    source = app.topic(args.topic, key_deserializer="bytes", value_deserializer="json")
    sink = app.topic(args.out, key_serializer="bytes", value_serializer="json")
    sdf = app.dataframe(source)
    if args.pipeline == "filter":
        sdf = sdf.filter(lambda v: v["amount"] > 10)
        sdf = sdf.apply(lambda v: {"user": v["user"], "amount_cents": int(v["amount"] * 100)})
    elif args.pipeline == "count":
        sdf = sdf.apply(_count, stateful=True)
    else:
        sdf = sdf.tumbling_window(duration_ms=60_000).count().current()
    sdf.to_topic(sink)
    app.run()


if __name__ == "__main__":
    main()
