"""Transactions: transactional produce beside idempotent produce, and EndTxn latency; beside tansu.

    python bench/transactions.py [--quick] [--only sluice|tansu] [--data-root DIR] [--json PATH]

Figures for Sluice and tansu in the same run, the brokers side by side taking turns run by run
(``broker_throughput._Turns``), each run a fresh child process, ``runs`` runs (5, or 1 with
``--quick``):

* **idempotent produce**: 100 B records through one confluent-kafka producer with
  ``enable.idempotence=true`` (so acks=all, ≤ 5 requests in flight) and the harness's batching
  (``_clients.PRODUCER_BATCHING``), timed from the first ``produce()`` until ``flush()`` returns.
* **transactional produce**: the same producer settings plus a ``transactional.id``;
  ``begin_transaction()``, ``produce()`` for 100 ms, ``commit_transaction()``, repeated; records
  per second over the whole run, from the first ``produce()`` until the last commit returns.
  The two runs of a pair are taken back to back on the same broker (their order alternating from
  pair to pair), and the ratio printed is the median of the pairs' ratios, so that load from the
  rest of the machine falls on both halves of each ratio alike; beside it, the same ratio in
  records per CPU-second of the client process, which that load disturbs less.
* **commit_transaction()**: the duration of every ``commit_transaction()`` call of those runs
  (which flushes the transaction's last records, then sends EndTxn), p50 and p99 over all of
  them (all runs pooled).
* **EndTxn round trip**: the broker alone, through one socket and kio-encoded requests, one at
  a time: InitProducerId v4 with a ``transactional.id``, then AddPartitionsToTxn v3 (one
  partition) → Produce v3 (acks=all, one transactional 100 B record) → EndTxn v3 (commit),
  repeated; each EndTxn timed from ``sendall`` until its answer is read (every answer is then
  decoded and checked). The record matters: tansu writes no commit marker for a transaction
  that holds none (Sluice does, as Kafka), so without it the brokers would not do the same work.

Before any figure, each broker gets one transaction and one idempotent produce, so that no
figure includes creating internal topics (Sluice's ``__transaction_state``); in every run the
producer's ``init_transactions()`` and one warm-up transaction (or, for the idempotent producer,
one acknowledged record) come before the clock starts. Every loop is bounded by a count and a
deadline; brokers are stopped by PID whatever happens.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import itertools
import json
import math
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from _clients import Run, Window, Workload, _produce_loop, bench_producer
from _harness import BROKERS, Broker, create_topic, in_child, median, percentile, running_broker
from _raw_end_txn import VALUE_BYTES, RawLoad, raw_end_txn_run
from broker_throughput import Figure, _figure, _machine, _Turns
from confluent_kafka import KafkaException
from rich.console import Console
from rich.table import Table

COMMIT_INTERVAL = 0.1  # seconds of produce() per transaction
CHECK_EVERY = 1_000  # records between clock checks inside a transaction (~2 ms at 500,000/s)
TOPIC = "txn-bench"
RAW_TOPIC = "txn-raw"


@dataclass(frozen=True)
class Plan:
    """How much each figure runs: full (~2.3 min for both brokers) or ``--quick`` (~30 s)."""

    runs: int
    seconds: float  # each produce run, idempotent and transactional alike
    raw_seconds: float  # each EndTxn loop
    records: int = 10_000_000
    transactions: int = 1_000
    raw_transactions: int = 20_000


FULL = Plan(5, 4.0, 2.0)
QUICK = Plan(1, 2.5, 1.5)


@dataclass(frozen=True)
class TxnRun:
    """A transactional produce run: the records moved and the duration of each commit."""

    run: Run
    commits: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Pair:
    """An idempotent and a transactional run taken back to back on one broker."""

    idempotent: Run
    transactional: TxnRun


# --- the producer runs (each in its own child process) -------------------------------------------


def idempotent_run(load: Workload) -> Run:
    """``load`` through an idempotent producer; one acknowledged record before the clock starts
    (the producer id is fetched then)."""
    producer, failed = bench_producer(load, **{"enable.idempotence": True})
    producer.produce(load.topic, b"x" * load.value_bytes)
    if producer.flush(30) or failed:
        raise RuntimeError(f"warm-up record not acknowledged: {failed[:1]}")
    window = Window(load.broker_pid)
    sent = _produce_loop(producer, load, CHECK_EVERY)
    left = producer.flush(30)
    run = window.run(sent, load.value_bytes)
    if left or failed:
        raise RuntimeError(f"{left} records unacknowledged, {len(failed)} failed: {failed[:3]}")
    return run


def transactional_run(load: Workload, transactional_id: str, transactions: int) -> TxnRun:
    """Begin, produce for ``COMMIT_INTERVAL``, commit; repeated until ``load.records`` or
    ``load.seconds`` or ``transactions`` run out. Timed from the first ``produce()`` of the first
    timed transaction until the last ``commit_transaction()`` returns."""
    producer, failed = bench_producer(
        load, **{"enable.idempotence": True, "transactional.id": transactional_id}
    )
    producer.init_transactions(30)
    producer.begin_transaction()  # a warm-up transaction: the partition joins, connections open
    producer.produce(load.topic, b"x" * load.value_bytes)
    producer.commit_transaction(30)
    commits: list[float] = []
    window = Window(load.broker_pid)
    deadline = time.monotonic() + load.seconds
    sent = 0
    while sent < load.records and len(commits) < transactions and time.monotonic() < deadline:
        producer.begin_transaction()
        part = replace(load, records=load.records - sent, seconds=COMMIT_INTERVAL)
        sent += _produce_loop(producer, part, CHECK_EVERY)
        start = time.perf_counter()
        producer.commit_transaction(30)
        commits.append(time.perf_counter() - start)
    run = window.run(sent, load.value_bytes)
    if failed:
        raise RuntimeError(f"{len(failed)} records failed: {failed[:3]}")
    return TxnRun(run, commits)


def pair_run(load: Workload, transactional_id: str, transactions: int, order: int) -> Pair:
    """The two runs back to back, each in a fresh child; ``order`` odd: transactional first."""
    budget = load.seconds + 60
    runs: dict[str, Any] = {}
    steps: list[tuple[str, Any, tuple[Any, ...]]] = [
        ("idempotent", idempotent_run, ()),
        ("txn", transactional_run, (transactional_id, transactions)),
    ]
    for key, fn, args in steps[:: -1 if order % 2 else 1]:
        runs[key] = in_child(fn, load, *args, timeout=budget)
    return Pair(runs["idempotent"], runs["txn"])


# --- EndTxn through one socket -------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    """Percentiles in milliseconds over all samples of all runs, or the error that stopped it."""

    p50_ms: float = math.nan
    p99_ms: float = math.nan
    samples: int = 0
    error: str = ""


def _latency(seconds: list[float]) -> Latency:
    ordered = sorted(seconds)
    return Latency(percentile(ordered, 50) * 1e3, percentile(ordered, 99) * 1e3, len(ordered))


IDEMPOTENT = "produce 100 B, idempotent"
TRANSACTIONAL = "produce 100 B, transactional, commit every 100 ms"
RATIO = "  transactional / idempotent, median of pairs (range)"
RATIO_CPU = "  the same in records per client CPU-second"
COMMITTED = "  transactions committed per second"
COMMIT_P50 = "commit_transaction() p50"
COMMIT_P99 = "commit_transaction() p99"
END_P50 = "EndTxn round trip p50 (kio, 1 partition, 1 record)"
END_P99 = "EndTxn round trip p99 (kio, 1 partition, 1 record)"
END_RATE = "  transactions per second (AddPartitions + Produce + EndTxn)"
P50_ROWS = (COMMIT_P50, END_P50)
ROWS = (
    IDEMPOTENT,
    TRANSACTIONAL,
    RATIO,
    RATIO_CPU,
    COMMITTED,
    COMMIT_P50,
    COMMIT_P99,
    END_P50,
    END_P99,
    END_RATE,
)


def _per_client_cpu(run: Run) -> float:
    """Records per CPU-second of the client process: what the rate would be if the client had
    the CPU it needed; other load on the machine disturbs it less than the wall-clock rate."""
    return run.records / run.client_cpu if run.client_cpu > 0 else 0.0


def _warm_up(broker: Broker) -> None:
    """Internal topics created and coordinators loaded before anything is timed."""
    create_topic(broker.bootstrap, TOPIC)
    create_topic(broker.bootstrap, RAW_TOPIC)
    load = Workload(broker.bootstrap, TOPIC, VALUE_BYTES, 1, 1.0, "all")
    in_child(transactional_run, load, "bench-warm-up", 1, timeout=90)
    in_child(idempotent_run, load, timeout=90)


def measure_all(
    names: list[str], plan: Plan, data_root: str | None = None
) -> dict[str, dict[str, Any]]:
    """Every figure for every broker named, by broker and row label."""
    console = Console(stderr=True)
    counter = itertools.count()
    figures: dict[str, dict[str, Any]] = {name: {} for name in names}
    with contextlib.ExitStack() as stack:
        brokers: dict[str, Broker] = {}
        for name in names:
            try:
                brokers[name] = stack.enter_context(running_broker(name, data_root))
                _warm_up(brokers[name])
            except (RuntimeError, TimeoutError, KafkaException) as exc:
                console.print(f"[red]{name} could not be measured: {exc}[/]")
                figures[name]["error"] = str(exc).splitlines()[0]
                brokers.pop(name, None)
        turns = _Turns(brokers, plan.runs)

        pairs_so_far = dict.fromkeys(brokers, 0)

        def pair_load(broker: Broker) -> tuple[Workload, str, int, int]:
            order = pairs_so_far[broker.name]  # alternates per broker: idempotent first or not
            pairs_so_far[broker.name] += 1
            load = Workload(
                broker.bootstrap,
                TOPIC,
                VALUE_BYTES,
                plan.records,
                plan.seconds,
                "all",
                broker_pid=broker.pid,
            )
            return load, f"bench-txn-{next(counter)}", plan.transactions, order

        pairs = turns.measure(
            "idempotent and transactional produce",
            lambda args: pair_run(*args),
            pair_load,
            isolated=False,
        )
        for name, results in pairs.items():
            failed = turns.figures[name].get("idempotent and transactional produce")
            if failed is not None:
                error = failed.error
                figures[name].update(
                    {row: Figure(error=error) for row in (IDEMPOTENT, TRANSACTIONAL)}
                )
                figures[name].update(
                    {row: Latency(error=error) for row in (COMMIT_P50, COMMIT_P99)}
                )
                continue
            txn = [p.transactional.run for p in results]
            figures[name][IDEMPOTENT] = _figure([p.idempotent for p in results])
            figures[name][TRANSACTIONAL] = _figure(txn)
            figures[name][RATIO] = [
                p.transactional.run.records_per_second / p.idempotent.records_per_second
                for p in results
                if p.idempotent.records_per_second
            ]
            figures[name][RATIO_CPU] = [
                _per_client_cpu(p.transactional.run) / _per_client_cpu(p.idempotent)
                for p in results
                if _per_client_cpu(p.idempotent)
            ]
            figures[name][COMMITTED] = median(
                [len(p.transactional.commits) / p.transactional.run.seconds for p in results]
            )
            commits = _latency([c for p in results for c in p.transactional.commits])
            figures[name][COMMIT_P50] = commits
            figures[name][COMMIT_P99] = commits

        raw = turns.measure(
            "EndTxn round trips",
            raw_end_txn_run,
            lambda b: RawLoad(
                b.bootstrap,
                RAW_TOPIC,
                f"bench-raw-{next(counter)}",
                plan.raw_transactions,
                plan.raw_seconds,
                b.pid,
            ),
        )
        for name, results in raw.items():
            failed = turns.figures[name].get("EndTxn round trips")
            if failed is not None:
                error = Latency(error=failed.error)
                figures[name].update({END_P50: error, END_P99: error, END_RATE: failed})
                continue
            ends = _latency([t for r in results for t in r.end_txn])
            figures[name][END_P50] = ends
            figures[name][END_P99] = ends
            figures[name][END_RATE] = _figure([r.run for r in results])
    return figures


def _cell(row: str, value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):  # the broker could not be measured at all
        return f"[red]error[/]: {value[:70]}"
    if isinstance(value, Latency):
        if value.error:
            reason = value.error.split(" failed: ", 1)[-1]
            return f"[red]error[/]: {reason[:70]}"
        ms = value.p50_ms if row in P50_ROWS else value.p99_ms
        return f"{ms:,.2f} ms (n={value.samples})"
    if isinstance(value, Figure):
        if value.error:
            return value.cell()
        return f"{value.rps:,.0f}/s" if row == END_RATE else value.cell()
    if row in (RATIO, RATIO_CPU):  # the pairs' ratios: their median and range
        if len(value) <= 1:
            return f"{value[0]:.3f}" if value else "—"
        return f"{median(value):.3f} ({min(value):.3f} to {max(value):.3f})"
    return f"{value:,.1f}"


def _cores(value: Any) -> str:
    if isinstance(value, Figure) and not value.error and value.broker_cores:
        return f"{value.broker_cores:.2f} · {value.client_cores:.2f}"
    return ""


def _ratio(row: str, ours: Any, ref: Any) -> str:
    if isinstance(ours, Figure) and isinstance(ref, Figure):
        if ours.error or ref.error or not ref.rps:
            return "—"
        return f"{ours.rps / ref.rps:.2f}x"
    if isinstance(ours, Latency) and isinstance(ref, Latency):
        if ours.error or ref.error:
            return "—"
        p50 = row in P50_ROWS
        a, b = (ours.p50_ms, ref.p50_ms) if p50 else (ours.p99_ms, ref.p99_ms)
        return f"{a / b:.2f}x the time" if b else "—"
    return "—"


def _tansu_note(figures: dict[str, dict[str, Any]]) -> str:
    tansu = figures.get("tansu")
    if tansu is None:
        return ""
    for row in (TRANSACTIONAL, END_P50):
        value = tansu.get(row, tansu.get("error"))
        error = value if isinstance(value, str) else getattr(value, "error", "")
        if error:
            return f"tansu: transactions not supported (error {error[:200]})"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short pair of each (~30 s)")
    parser.add_argument("--only", choices=BROKERS, help="measure one broker only")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--data-root",
        help="where Sluice's log lives (default: the system temporary directory, on disk)",
    )
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    console = Console(width=max(170, Console().width))
    machine = _machine()  # the load average before the bench adds its own
    machine += f", Sluice's log under {args.data_root or tempfile.gettempdir()}, tansu memory://"
    started = datetime.datetime.now(datetime.UTC)
    names = [args.only] if args.only else list(BROKERS)
    figures = measure_all(names, plan, args.data_root)

    table = Table(
        title=f"Transactions, {started:%Y-%m-%d %H:%M} UTC, median of {plan.runs} "
        "(latencies: all samples of all runs)",
        caption=machine,
    )
    table.add_column("figure")
    for name in names:
        table.add_column(name, justify="right")
        table.add_column("cores b · c", justify="right")
    table.add_column("sluice / tansu", justify="right")
    for row in ROWS:
        cells = []
        for name in names:
            value = figures[name].get(row, figures[name].get("error"))
            cells += [_cell(row, value), _cores(value)]
        ratio = _ratio(row, figures.get("sluice", {}).get(row), figures.get("tansu", {}).get(row))
        table.add_row(row, *cells, ratio)
    console.print(table)
    if note := _tansu_note(figures):
        console.print(note)
    console.print(
        f"Producer: {VALUE_BYTES} B records, enable.idempotence=true (acks=all), linger.ms=5, "
        "batch.size=1000000, one partition; the transactional producer adds transactional.id and "
        f"commits after {COMMIT_INTERVAL * 1000:.0f} ms of produce() (commit_transaction() "
        "includes flushing the transaction's last records). "
        f"{plan.seconds:g} s per produce run, {plan.raw_seconds:g} s per EndTxn loop.\n"
        "cores b · c: CPU seconds per second of the broker (b) and of the client process (c)."
    )
    if args.json:

        def plain(value: Any) -> Any:
            return asdict(value) if isinstance(value, Figure | Latency) else value

        args.json.write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "machine": machine,
                    "plan": asdict(plan),
                    "brokers": {
                        name: {row: plain(v) for row, v in rows.items()}
                        for name, rows in figures.items()
                    },
                },
                indent=2,
            )
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
