"""Database connectors: CDC lag and throughput, and jdbc-sink throughput, beside references.

    python bench/databases.py [--seconds S] [--rates R,R] [--period-ms P] [--rows N]
                              [--only cdc-lag,cdc-bulk,sink] [--cdc-schemas true|false]
                              [--timeout S] [--profile DIR] [--json PATH] [--keep DIR]
                              [--log-level LEVEL]

One Sluice broker (``_harness.running_broker``, the initial rebalance delay 0 so that the sink's
group joins at once) and one PostgreSQL (``_postgres.PostgresServer``: ``initdb`` in a temporary
directory, ``wal_level=logical``, ``fsync=off``), database ``bench``. Each connector runs in
``sluice connect standalone`` (its own process group, no REST API, offsets in a fresh file, ``-X
offset.flush.interval.ms=1000``, JSON converters; the CDC runs with ``schemas.enable`` as
``--cdc-schemas`` says, true by default — Kafka's JsonConverter default — the sink always with
schemas, which it needs for struct rows). Measured in the same run:

1. **CDC lag at a steady load** (``cdc-lag``), once per rate of ``--rates`` (5,000/s, the target's,
   and 1,000/s, one the connector keeps up with). Per rate a table ``events_<rate>(id bigint primary
   key, payload text, committed_at_us bigint)`` and a ``postgres-cdc`` connector
   (``snapshot.mode=never``, its publication ``filtered`` to the table, its defaults otherwise).
   Once its slot is streaming, a writer process inserts ``rate`` rows/s for ``--seconds`` (10): one
   multi-row INSERT of ``rate × period`` rows (100-byte payload) every ``--period-ms`` (10 ms; 50
   rows at 5,000/s) on a monotonic schedule, in autocommit, so the statement is the transaction and
   it has committed when it returns; the writer notes that moment (wall clock, µs) per transaction;
   ``committed_at_us`` holds the clock just before the statement. A consumer process
   (confluent-kafka, assigned to the topic from its start, librdkafka's default fetch settings)
   notes the wall clock when each record is in hand (``poll(0.1)``, then ``consume(1000, 0)`` for
   what else is queued: ``consume(n, t)`` would wait for n records or t seconds) and takes the row
   id from the record's key. **Lag** = arrival − commit, over the rows committed after the first
   second (warm-up); split into commit → ``produce()`` (the record's CreateTime, ms, stamped by the
   worker's librdkafka) and ``produce()`` → arrival (the broker hop). The **reference** reads its
   own slot on the same publication during the same run with psycopg2 alone (``_db_load.read_slot``:
   pgoutput, no decoding past the first column) — commit → change in a Python process, the floor
   logical replication itself sets. Also: the write rate achieved, the rate delivered to the topic
   over the steady window, and whether every id arrived exactly once. 2. **CDC throughput**
   (``cdc-bulk``). Table ``bulk`` of the same shape, a publication for it and two slots made
   beforehand; then ``--rows`` rows inserted at once (``INSERT … SELECT generate_series``, 10,000
   rows per transaction; ``--rows``, 40,000). Both slots then hold the same backlog. The
   **reference** streams one with psycopg2 alone, counting Insert messages (the most a Python reader
   gets from the server); then a ``postgres-cdc`` connector on the other slot
   (``snapshot.mode=never``, ``publication.autocreate.mode=disabled``) puts them in the topic, whose
   high watermark the parent asks for every 20 ms. Changes/s from the first change seen to the last
   (and from the worker's start). 3. **jdbc-sink throughput** (``sink``). ``--rows`` JSON records
   with schemas (struct key ``{id}``, struct value ``{id int64, name string, amount double,
   updated_at Timestamp}``) are produced into a topic first. The **reference**
   (``_db_load.reference_upsert``, in its own process, before and after the sink; the faster counts)
   upserts the same rows, already in memory as Python values, with SQLAlchemy: ``INSERT … ON
   CONFLICT (id) DO UPDATE`` executed with 3,000 parameter sets per call and transaction — the
   statement the sink sends. Beside it (not judged), the same upsert as one multi-row statement per
   3,000 rows (psycopg2's ``execute_values``): SQLAlchemy does not rewrite an ``ON CONFLICT``
   executemany into multi-row statements, so the plain executemany is one statement per row. Then a
   ``jdbc-sink`` (``insert.mode=upsert``, ``pk.mode=record_key``, ``auto.create=true``, its defaults
   otherwise) writes the topic into its own table, and the parent counts its rows (``SELECT
   count(*)``) every 50 ms: rows/s from the first row visible to the N-th, and from the worker's
   start.

Targets (the issue's): CDC lag p99 ≤ 200 ms at 5,000 changes/s (and every change delivered exactly
once, the write rate reached); sink ≥ 50 % of the plain batched write. CPU columns: user + system
seconds of the worker (all threads and children), the broker and PostgreSQL (the postmaster and
every backend, the walsenders included) over each timed window.

The default run takes about 2.5 minutes (more when the connectors fall behind: the 5,000/s load
drains at the connector's pace). Every wait is bounded (``--timeout`` per phase); every worker's
process group is SIGTERMed then SIGKILLed, every child process stopped, and PostgreSQL stopped and
its directory removed, in ``finally``. ``--keep DIR`` keeps the YAML files and the workers' logs
there; ``--profile DIR`` runs py-spy on each worker (250 Hz, raw stacks in ``DIR/<phase>.txt``) and
prints where the task thread's time goes; profiled figures are not the record."""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from _db_cdc import LagResult, run_bulk, run_lag
from _db_common import PHASES, Context
from _db_load import (
    SINK_EPOCH_MS,
)
from _db_report import _ms, _print_profiles, report
from _db_sink import run_sink
from _harness import running_broker
from _postgres import PostgresServer
from broker_throughput import _machine
from rich.console import Console


@contextlib.contextmanager
def _workdir(keep: Path | None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="bench-databases-") as tmp:
        yield Path(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="each steady load, s")
    parser.add_argument(
        "--rates", default="5000,1000", help="steady loads of cdc-lag, rows/s, comma-separated"
    )
    parser.add_argument(
        "--period-ms",
        type=float,
        default=10.0,
        help="one transaction per period (rate × period rows)",
    )
    parser.add_argument("--rows", type=int, default=40_000, help="rows of cdc-bulk and sink")
    parser.add_argument("--only", default=",".join(PHASES), help="phases, comma-separated")
    parser.add_argument("--cdc-schemas", choices=("true", "false"), default="true")
    parser.add_argument("--timeout", type=float, default=120.0, help="bound of each wait, s")
    parser.add_argument("--profile", type=Path, help="run the workers under py-spy into DIR")
    parser.add_argument("--json", type=Path, help="also write the figures there")
    parser.add_argument("--keep", type=Path, help="work in DIR (logs, YAML kept)")
    parser.add_argument("--log-level", default="WARNING", help="the workers' log level")
    args = parser.parse_args()
    phases = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases {sorted(unknown)}: expected some of {PHASES}")
    console = Console(width=max(Console().width, 190))
    started = datetime.datetime.now(datetime.UTC)
    console.log(f"{_machine()}; phases {', '.join(phases)}")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    rates = [float(r) for r in args.rates.split(",") if r.strip()]
    lags: list[LagResult] = []
    bulk = sink = None
    load_before = os.getloadavg()
    with (
        _workdir(args.keep) as workdir,
        running_broker("sluice", config={"group.initial.rebalance.delay.ms": "0"}) as broker,
        PostgresServer() as pg,
    ):
        pg.create_database("bench")
        ctx = Context(
            broker.bootstrap,
            broker.pid,
            pg,
            workdir,
            args.timeout,
            args.log_level,
            args.profile,
            args.cdc_schemas == "true",
        )
        for rate in rates if "cdc-lag" in phases else []:
            txn_rows = max(1, round(rate * args.period_ms / 1000))
            console.log(
                f"cdc-lag: {rate:,.0f} rows/s ({txn_rows} per transaction) for {args.seconds:.0f} s"
            )
            lag = run_lag(ctx, rate, txn_rows, args.seconds)
            lags.append(lag)
            console.log(f"cdc-lag: p99 {_ms(lag.lag.p99)} {lag.error[:300]}")
        if "cdc-bulk" in phases:
            console.log(f"cdc-bulk: {args.rows:,} rows")
            bulk = run_bulk(ctx, args.rows)
            console.log(
                f"cdc-bulk: {bulk.rate:,.0f}/s vs {bulk.ref_rate:,.0f}/s {bulk.error[:300]}"
            )
        if "sink" in phases:
            console.log(f"sink: {args.rows:,} rows")
            sink = run_sink(ctx, args.rows)
            console.log(f"sink: {sink.rate:,.0f}/s vs {sink.ref_rate:,.0f}/s {sink.error[:300]}")
    load = os.getloadavg()
    title = (
        f"Database connectors ({started:%Y-%m-%d %H:%M} UTC; CDC JSON schemas.enable="
        f"{args.cdc_schemas}; load average {load_before[0]:.2f} before, {load[0]:.2f} after)"
    )
    verdicts = report(console, title, lags, bulk, sink)
    if args.profile:
        workers = [f"cdc-lag{lag.rate:.0f}" for lag in lags]
        workers += [p for p in ("cdc-bulk", "sink") if p in phases]
        _print_profiles(console, args.profile, workers)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "machine": _machine(),
                    "args": {k: str(v) for k, v in vars(args).items()},
                    "sink_epoch_ms": SINK_EPOCH_MS,
                    "cdc_lag": [asdict(lag) for lag in lags],
                    "cdc_bulk": asdict(bulk) if bulk else None,
                    "sink": {**asdict(sink), "ref_rate": sink.ref_rate} if sink else None,
                    "targets": verdicts,
                },
                indent=2,
                default=str,
            )
        )


if __name__ == "__main__":
    main()
