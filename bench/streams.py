"""Streams: three pipelines in Sluice's DSL beside quixstreams and faust-streaming, and a restore.

    python bench/streams.py [--records N] [--faust-records M]
                            [--only sluice,bare-loop,bare-changelog,native-loop,quixstreams,faust]
                            [--pipelines filter,count,window] [--no-restore] [--restore-keys K]
                            [--window-entries E] [--stores rocksdb|memory] [--json PATH]

One Sluice broker (``_harness.running_broker``, the 3 s initial rebalance delay set to 0) holds one
input topic of N JSON records (default 1,000,000), produced once before anything is measured:
``{"user": "u123", "amount": 12.5, "ts": <ms>}``, keyed ``u<k>`` over 10,000 keys, amounts
uniform in [0, 20), Kafka timestamps (and ``ts``) rising evenly over one hour of event time, so
that sixty 1-minute windows open and close. One partition.

Pipelines, the same in each framework (``_sluice_pipelines.py``, ``_quix_pipelines.py``,
``_faust_pipelines.py``):

* **filter**: keep ``amount > 10``, map to a new dict: stateless;
* **count**: count per key, every update to the output topic;
* **window**: count per key in 1-minute tumbling windows, every update to the output topic.

Each emits exactly one output record per input record it keeps (Sluice and Kafka Streams forward
every aggregate update; quixstreams' ``apply(stateful=True)`` and ``.current()`` do too; the
faust agents send one per record), so the parent knows how many outputs mean "all input
processed": the records passing the filter, or N. Each (framework, pipeline) runs in its own
process with its own consumer group and output topic, reading from the start. The parent watches
the output topic's high watermark every 20 ms and times from the first output seen to the
expected last one, so the figure leaves out interpreter start, imports, group join and topic
creation (shown apart as "to first output"); events/s counts the input records those outputs
stand for. CPU: user + system seconds of the child (all its threads and any children, psutil)
over the same window, and the broker's (from /proc) beside it. Every run is bounded by
``--timeout`` seconds and its process group is killed when done, whatever happened.

**bare-loop** (``_bare_pipelines.py``) is no framework: the same three pipelines as hand-written
confluent-kafka ``consume()``/``produce()`` loops with a dict for state and no changelog, on
Sluice's client settings. It is the reference for "how fast can Python go per record with this
client on this machine", which bounds Sluice and quixstreams alike.

**bare-changelog** is the same hand-written loop doing the work a fault-tolerant app must: its
``count`` and ``window`` also write their state's changelog as Kafka Streams does, one compacted
changelog record per key (and window) changed per commit, written at each commit (every 5 s, as
Sluice's ``commit_interval_ms``) before the producer flush and the offset commit, in Sluice's
changelog layout (``_bare_pipelines.py --changelog``). It is what issue 24's "≥ 0.8x the
hand-written loop" compares with. Sluice's pipelines run with ``statestore_cache_max_bytes=0``
(every update forwarded downstream, the changelog folded per key per commit by the store).

**native-loop** (``_native_pipelines.py``) does the same per-record work without a client
library: blocking Fetch and Produce requests (``sluice.wire``) and aiokafka's Cython
record-batch codec, no group, no commits. It shows what leaving librdkafka would be worth.

faust-streaming is slow (an asyncio agent and an awaited send per record): by default it runs on
the first ``--faust-records`` records (100,000) of the same topic, and its events/s is compared;
the table says so.

quixstreams 3.28.1 pins confluent-kafka < 2.13, Sluice pins 2.16.1: it runs from its own
virtualenv, ``build/bench-venvs/quixstreams``, which this script creates on first use (pip,
from PyPI).

**Restore**: a compacted changelog ``bench-restore-counts-changelog`` is filled with
``--restore-keys`` distinct keys (1,000,000; JSON int values, as Sluice's ``count()`` logs them),
then a Sluice app ``bench-restore`` whose count store is named ``counts`` is started on an empty
state directory, once with RocksDB stores and once in memory; timed in the app's process from
``App.start()`` until the runtime logs "restored N records ..." (then the last key written is
checked in the store). Beside it: the runtime's own figure for the restore phase alone, and the
same changelog consumed by a bare confluent-kafka consumer (``_clients.consume_run``).

**Restarts** (``_streams_restarts.py``, ``_restart_app.py``; with the restore, unless
``--no-restore``): the same 1 M-key changelog, and one of ``--window-entries`` window entries
(10,000,000: 100,000 keys × 100 one-minute windows in Sluice's window changelog layout; 0 skips
it), each restored by an app with RocksDB stores from an empty state directory, then restarted
after a clean stop (nothing to restore) and after a ``kill -9`` (no checkpoint: everything
again), timed from ``App.start()`` to the stream thread's RUNNING; the windowed app also once in
memory. The peak RSS of each run (psutil, sampled every 50 ms) gives the RocksDB / in-memory
ratio of the windowed app holding all the entries.
"""

from __future__ import annotations

import argparse
import datetime
import tempfile
from pathlib import Path

from _harness import create_topic, in_child, running_broker
from _streams_input import create_compacted_topic, produce_changelog, produce_events
from _streams_report import PIPELINES, print_report, write_json
from _streams_restarts import (
    WINDOW_CHANGELOG,
    Restart,
    produce_window_changelog,
    run_series,
    window_base_ms,
)
from _streams_restore import RESTORE_APP, RESTORE_STORES, Restore, restore_reference, run_restore
from _streams_runs import INPUT, Context, Result, Watermark, quix_python, run_pipeline
from broker_throughput import _machine
from rich.console import Console

FRAMEWORKS = ("sluice", "bare-loop", "bare-changelog", "native-loop", "quixstreams", "faust")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="input records (1,000,000)")
    parser.add_argument(
        "--faust-records",
        type=int,
        default=100_000,
        help="faust processes only this prefix of the input (100,000; 0 for all)",
    )
    parser.add_argument("--only", default=",".join(FRAMEWORKS), help="frameworks, comma-separated")
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help="comma-separated")
    parser.add_argument("--no-restore", action="store_true", help="skip the restore benchmark")
    parser.add_argument("--restore-keys", type=int, default=1_000_000)
    parser.add_argument(
        "--window-entries",
        type=int,
        default=10_000_000,
        help="window entries of the windowed restarts (10,000,000 = 100,000 keys x 100 windows; "
        "0 skips them)",
    )
    parser.add_argument(
        "--stores",
        choices=("rocksdb", "memory"),
        default="rocksdb",
        help="the Sluice pipelines' stores (rocksdb; memory: state in a dict, as the bare loops)",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="bound on each run, seconds")
    parser.add_argument("--data-root", help="where the broker's log and state dirs live")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    frameworks = [f for f in args.only.split(",") if f]
    pipelines = [p for p in args.pipelines.split(",") if p]
    for name in frameworks:
        if name not in FRAMEWORKS:
            parser.error(f"unknown framework {name!r}: expected some of {FRAMEWORKS}")
    for name in pipelines:
        if name not in PIPELINES:
            parser.error(f"unknown pipeline {name!r}: expected some of {PIPELINES}")
    records = args.records
    faust_records = min(records, args.faust_records or records)

    console = Console(width=max(150, Console().width))
    log = Console(stderr=True)
    machine = _machine()
    started = datetime.datetime.now(datetime.UTC)
    quix = quix_python(log) if "quixstreams" in frameworks else None

    results: dict[tuple[str, str], Result] = {}
    restores: list[Restore] = []
    restarts: list[Restart] = []
    restore_floor = float("nan")
    config = {"group.initial.rebalance.delay.ms": "0"}
    with (
        running_broker("sluice", args.data_root, config=config) as broker,
        tempfile.TemporaryDirectory(prefix="bench-streams-", dir=args.data_root) as tmp,
    ):
        ctx = Context(broker.bootstrap, broker.pid, Path(tmp), quix, args.timeout, args.stores)
        create_topic(broker.bootstrap, INPUT)
        log.log(f"producing {records:,} input records")
        passes = in_child(
            produce_events, broker.bootstrap, INPUT, records, [faust_records], timeout=900
        )
        watch = Watermark(broker.bootstrap)
        try:
            for pipeline in pipelines:
                for framework in frameworks:
                    inputs = faust_records if framework == "faust" else records
                    expected = passes[inputs] if pipeline == "filter" else inputs
                    log.log(f"{pipeline}: {framework}, {inputs:,} records")
                    r = run_pipeline(ctx, watch, framework, pipeline, inputs, expected)
                    results[(framework, pipeline)] = r
                    if r.error:
                        log.print(f"[red]{framework} {pipeline}: {r.error}[/]")
                    else:
                        log.log(f"  {r.events_per_second:,.0f} events/s, {r.cpu:.1f} CPU-s")
        finally:
            watch.close()
        if not args.no_restore and "sluice" in frameworks:
            changelog = f"{RESTORE_APP}-counts-changelog"
            create_topic(broker.bootstrap, "restore-input")
            create_compacted_topic(broker.bootstrap, changelog)
            log.log(f"producing {args.restore_keys:,} changelog records")
            in_child(produce_changelog, broker.bootstrap, changelog, args.restore_keys, timeout=900)
            restore_floor = restore_reference(broker.bootstrap, changelog, args.restore_keys)
            for stores in RESTORE_STORES:
                log.log(f"restore, {stores} stores")
                restore = run_restore(ctx, stores, args.restore_keys)
                restores.append(restore)
                if restore.error:
                    log.print(f"[red]restore {stores}: {restore.error}[/]")
            log.log(f"restarts over {args.restore_keys:,} keys")
            restarts += run_series(ctx, "keys", args.restore_keys, memory=False)
            if args.window_entries > 0:
                create_compacted_topic(broker.bootstrap, WINDOW_CHANGELOG)
                base_ms = window_base_ms()
                log.log(f"producing {args.window_entries:,} window changelog records")
                in_child(
                    produce_window_changelog,
                    broker.bootstrap,
                    WINDOW_CHANGELOG,
                    args.window_entries,
                    base_ms,
                    timeout=1200,
                )
                log.log(f"restarts over {args.window_entries:,} window entries")
                restarts += run_series(
                    ctx, "window entries", args.window_entries, memory=True, base_ms=base_ms
                )
            for x in restarts:
                if x.error:
                    log.print(f"[red]restart {x.dataset} {x.stores} {x.after}: {x.error}[/]")
                else:
                    log.log(
                        f"  {x.dataset}, {x.stores}, after {x.after}: {x.seconds:.2f} s, "
                        f"{x.restored:,} restored, peak RSS {x.peak_rss / 2**20:,.0f} MiB"
                    )

    print_report(
        console,
        started=started,
        machine=machine,
        records=records,
        faust_records=faust_records,
        frameworks=frameworks,
        pipelines=pipelines,
        results=results,
        restores=restores,
        restore_keys=args.restore_keys,
        restore_floor=restore_floor,
        restarts=restarts,
    )
    if args.json:
        write_json(
            args.json,
            started=started,
            machine=machine,
            records=records,
            faust_records=faust_records,
            results=results,
            restores=restores,
            restore_floor=restore_floor,
            restarts=restarts,
        )


if __name__ == "__main__":
    main()
