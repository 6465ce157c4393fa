"""Broker throughput and latency: Sluice beside tansu and loopback, measured in the same run.

    python bench/broker_throughput.py [--quick] [--only sluice|tansu] [--no-latency]
                                      [--data-root DIR] [--json PATH]
    python bench/broker_throughput.py --consume-only [--quick] [--only ...] [--data-root DIR]

Figures, each the median of ``runs`` runs (3, or 1 with ``--quick``):

* produce, 100 B and 1 KB records, acks=1 and acks=all, through one confluent-kafka producer
  (``_clients.produce_run``), timed until every record is acknowledged;
* consume of the same records from offset 0 (``_clients.consume_run``);
* long consume: one partition of 2,000,000 100 B records (written beforehand by the pre-encoded
  producer, untimed) read from offset 0 by one confluent-kafka consumer with
  ``fetch.max.bytes=52428800``, ``max.partition.fetch.bytes=10485760``,
  ``queued.min.messages=1000000``, ``fetch.queue.backoff.ms=10`` (``_clients.CONSUMER_FETCHING``;
  librdkafka's 1 s default pauses a run of ~1 s at random): the broker's fetch path with
  10 MB responses. ``--consume-only`` measures this figure alone;
* the same produce through kcat (librdkafka from C, no Python loop), where kcat is on PATH;
* produce of one pre-encoded batch sent over and over (``_wire``): the broker's ingest ceiling
  with the client taken out;
* produce-to-consume latency p50/p99 at 20,000 records/s (``broker_latency``).

References measured in the same run: tansu (memory storage) under the same load, the machine's
loopback TCP bandwidth, and the client ceiling (how fast one Python process can call
``produce()`` with no broker at all), which bounds every confluent-kafka produce figure.
Both brokers run side by side, each in a fresh temporary directory, and take turns run by run
(sluice, tansu, sluice, ...), so load from elsewhere on the machine falls on both alike; each run
is a fresh child process. Beside each figure: the CPU the broker and the client used meanwhile.
Brokers are stopped by PID when done, whatever happened.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import _kcat
import broker_latency
from _clients import Run, Workload, client_ceiling, consume_run, produce_run
from _harness import (
    BROKERS,
    Broker,
    add_warm_option,
    create_topic,
    in_child,
    median,
    running_broker,
    warmed,
)
from _loopback import loopback_bytes_per_second
from _wire import wire_produce_run
from confluent_kafka import KafkaException
from rich.console import Console
from rich.table import Table

SIZES = (100, 1000)
ACKS = ("1", "all")
TARGET_RPS = 1_000_000
TARGET_VS_TANSU = 2.0
TARGET_LOOPBACK_SHARE = 0.60
TARGET_P99_MS = 5.0


@dataclass(frozen=True)
class Plan:
    """How much each figure runs: full (~5 min for both brokers) or ``--quick`` (~1 min)."""

    runs: int
    seconds: float
    records: dict[int, int]
    latency_runs: int
    latency_seconds: float
    loopback_runs: int
    loopback_seconds: float
    rate: int = 20_000


FULL = Plan(3, 2.0, {100: 1_000_000, 1000: 300_000}, 3, 4.0, 3, 2.0)
QUICK = Plan(1, 1.5, {100: 600_000, 1000: 150_000}, 1, 3.0, 1, 1.0)
LONG_CONSUME_RECORDS = 2_000_000
LONG_CONSUME_SECONDS = 30.0
"""The long consume's bound in time (it reads the 2,000,000 records in ~1-3 s)."""
LONG_CONSUME = f"consume 100 B, {LONG_CONSUME_RECORDS:,} from one partition"


@dataclass(frozen=True)
class Figure:
    """A median rate over some runs, or the error that stopped the measurement."""

    rps: float = 0.0
    mbps: float = 0.0
    runs: int = 0
    error: str = ""
    broker_cores: float = 0.0  # broker CPU seconds per second of the timed window (median)
    client_cores: float = 0.0  # the same for the client process

    def cell(self) -> str:
        if self.error:
            reason = self.error.split(" failed: ", 1)[-1].removeprefix("RuntimeError: ")
            return f"[red]error[/]: {reason[:70]}"
        return f"{self.rps:,.0f}/s · {self.mbps:,.1f} MB/s"


def _figure(runs: list[Run]) -> Figure:
    timed = [r for r in runs if r.seconds > 0]
    return Figure(
        median([r.records_per_second for r in runs]),
        median([r.mb_per_second for r in runs]),
        len(runs),
        broker_cores=median([r.broker_cpu / r.seconds for r in timed]),
        client_cores=median([r.client_cpu / r.seconds for r in timed]),
    )


def _label(kind: str, size: int, acks: str | None = None) -> str:
    size_text = "100 B" if size == 100 else "1 KB"
    return f"{kind} {size_text}" + (f" acks={acks}" if acks else "")


class _Turns:
    """Brokers side by side, taking turns run by run, so that noise from the rest of the machine
    (other processes come and go) falls on each broker alike rather than on whichever ran second.
    """

    def __init__(self, brokers: dict[str, Broker], runs: int) -> None:
        self.brokers = brokers
        self.runs = runs
        self.figures: dict[str, dict[str, Figure]] = {name: {} for name in brokers}
        self.console = Console(stderr=True)

    def measure(
        self,
        label: str,
        fn: Callable[[Any], Any],
        load_for: Callable[[Broker], Any],
        isolated: bool = True,
    ) -> dict[str, list[Any]]:
        """Run ``fn(load_for(broker))`` ``runs`` times per broker, in turns; keep the results.

        ``isolated``: each run in a fresh child process (``fn`` must not start processes itself).
        """
        self.console.log(label)
        results: dict[str, list[Any]] = {name: [] for name in self.brokers}
        for _ in range(self.runs):
            for name, broker in self.brokers.items():
                if isinstance(self.figures[name].get(label), Figure):
                    continue  # this broker already failed this figure
                try:
                    load = load_for(broker)
                    results[name].append(in_child(fn, load) if isolated else fn(load))
                except (RuntimeError, TimeoutError) as exc:
                    self.figures[name][label] = Figure(error=str(exc).splitlines()[0])
        return results

    def record(self, label: str, results: dict[str, list[Run]]) -> None:
        for name, runs in results.items():
            self.figures[name].setdefault(label, _figure(runs))


def measure_all(
    names: list[str],
    plan: Plan,
    latency: bool,
    data_root: str | None = None,
    consume_only: bool = False,
) -> dict[str, dict[str, Figure]]:
    """Every figure for every broker named, by broker and row label; ``data_root`` holds
    the brokers' temporary directories (see ``running_broker``). ``consume_only``: only the
    long consume (:func:`_long_consume`)."""
    console = Console(stderr=True)
    with contextlib.ExitStack() as stack:
        brokers: dict[str, Broker] = {}
        for name in names:
            try:
                brokers[name] = stack.enter_context(running_broker(name, data_root))
                for size in SIZES:
                    for kind in ("produce", "wire", "kcat"):
                        create_topic(brokers[name].bootstrap, f"{kind}-{size}")
                create_topic(brokers[name].bootstrap, "long-consume")
            except (RuntimeError, TimeoutError, KafkaException) as exc:
                console.print(f"[red]{name} could not be measured: {exc}[/]")
                brokers.pop(name, None)
        turns = _Turns(brokers, plan.runs)
        if consume_only:
            _long_consume(turns)
            return turns.figures
        stored = {name: dict.fromkeys(SIZES, 0) for name in brokers}
        for size in SIZES:
            for acks in ACKS:
                label = _label("produce", size, acks)
                results = turns.measure(
                    label,
                    produce_run,
                    lambda b, size=size, acks=acks: Workload(
                        b.bootstrap,
                        f"produce-{size}",
                        size,
                        plan.records[size],
                        plan.seconds,
                        acks,
                        broker_pid=b.pid,
                    ),
                )
                turns.record(label, results)
                for name, runs in results.items():
                    stored[name][size] += sum(r.records for r in runs)
        for size in SIZES:
            label = _label("consume", size)
            results = turns.measure(
                label,
                consume_run,
                lambda b, size=size: Workload(
                    b.bootstrap,
                    f"produce-{size}",
                    size,
                    max(1, min(plan.records[size], stored[b.name][size])),
                    plan.seconds,
                    broker_pid=b.pid,
                ),
            )
            turns.record(label, results)
        _long_consume(turns)
        if _kcat.available():
            for size in SIZES:
                for acks in ACKS:
                    label = _label("kcat produce", size, acks)
                    results = turns.measure(
                        label,
                        _kcat.kcat_produce_run,
                        lambda b, size=size, acks=acks: Workload(
                            b.bootstrap,
                            f"kcat-{size}",
                            size,
                            plan.records[size],
                            plan.seconds,
                            acks,
                            broker_pid=b.pid,
                        ),
                    )
                    turns.record(label, results)
        for size in SIZES:
            for acks in ACKS:
                label = _label("pre-encoded produce", size, acks)
                results = turns.measure(
                    label,
                    wire_produce_run,
                    lambda b, size=size, acks=acks: Workload(
                        b.bootstrap,
                        f"wire-{size}",
                        size,
                        3 * plan.records[size],
                        plan.seconds,
                        acks,
                        broker_pid=b.pid,
                    ),
                )
                turns.record(label, results)
        if latency:
            _latency(turns, plan)
        return turns.figures


def _long_consume(turns: _Turns) -> None:
    """The long-consume figure: fill ``long-consume`` once per broker (pre-encoded batches of
    ~960 KB, untimed), then read it from offset 0 ``runs`` times per broker, in turns (a broker
    that could not be filled gets the error as its figure)."""
    for name, broker in turns.brokers.items():
        turns.console.log(f"long consume: writing its records to {name}")
        load = Workload(broker.bootstrap, "long-consume", 100, LONG_CONSUME_RECORDS, 120.0)
        try:
            written = in_child(wire_produce_run, load, timeout=180.0).records
        except (RuntimeError, TimeoutError) as exc:
            turns.figures[name][LONG_CONSUME] = Figure(error=str(exc).splitlines()[0])
            continue
        if written < LONG_CONSUME_RECORDS:
            turns.figures[name][LONG_CONSUME] = Figure(error=f"wrote only {written:,} records")
    results = turns.measure(
        LONG_CONSUME,
        consume_run,
        lambda b: Workload(
            b.bootstrap,
            "long-consume",
            100,
            LONG_CONSUME_RECORDS,
            LONG_CONSUME_SECONDS,
            broker_pid=b.pid,
        ),
    )
    turns.record(LONG_CONSUME, results)


def _latency(turns: _Turns, plan: Plan) -> None:
    counter = iter(range(1_000_000))
    results = turns.measure(
        f"latency at {plan.rate:,} rec/s",
        broker_latency.latency_run,
        lambda b: broker_latency.LatencyLoad(
            b.bootstrap, f"latency-{next(counter)}", plan.rate, plan.latency_seconds
        ),
        isolated=False,  # latency_run starts its own producer and consumer processes
    )
    for name, runs in results.items():
        failed = turns.figures[name].pop(f"latency at {plan.rate:,} rec/s", None)
        if failed is not None or not runs:
            error = failed or Figure(error="no run finished")
            turns.figures[name].update({"latency p50 ms": error, "latency p99 ms": error})
            continue
        lat = broker_latency.summarize(runs)
        # A latency figure keeps milliseconds where a rate goes and the achieved rate beside it.
        turns.figures[name]["latency p50 ms"] = Figure(lat.p50_ms, lat.achieved_rate, len(runs))
        turns.figures[name]["latency p99 ms"] = Figure(lat.p99_ms, lat.achieved_rate, len(runs))


def _cell(label: str, fig: Figure | None) -> str:
    if fig is None:
        return "—"
    if label.startswith("latency") and not fig.error:
        return f"{fig.rps:,.2f} ms (at {fig.mbps:,.0f} rec/s)"
    return fig.cell()


def _cpu(fig: Figure | None) -> str:
    if fig is None or fig.error or not (fig.broker_cores or fig.client_cores):
        return ""
    return f"{fig.broker_cores:.2f} · {fig.client_cores:.2f}"


def _ratio(label: str, ours: Figure | None, ref: Figure | None) -> str:
    if ours is None or ref is None or ours.error or ref.error or not ref.rps:
        return "—"
    if label.startswith("latency"):
        return f"{ref.rps / ours.rps:,.2f}x faster" if ours.rps else "—"
    ratio = f"{ours.rps / ref.rps:,.2f}x"
    if ours.broker_cores > 0 and ref.broker_cores > 0:
        per_core = (ours.rps / ours.broker_cores) / (ref.rps / ref.broker_cores)
        ratio += f" ({per_core:,.2f}x per core)"
    return ratio


Target = tuple[str, str, bool | None]
GENERATORS = (
    ("produce", "confluent-kafka"),
    ("kcat produce", "kcat"),
    ("pre-encoded produce", "pre-encoded"),
)


def _targets(sluice: dict[str, Figure], tansu: dict[str, Figure], loopback: float) -> list[Target]:
    """Each target judged on the confluent-kafka rows (the issue's figures) and, beside them, on
    the pre-encoded rows, which show the broker where the client is the limit."""

    def fig(figures: dict[str, Figure], label: str) -> Figure | None:
        f = figures.get(label)
        return f if f is not None and not f.error else None

    out: list[Target] = []
    for kind, how in GENERATORS:
        p100 = fig(sluice, _label(kind, 100, "1"))
        out.append(
            (
                f"≥ {TARGET_RPS:,} rec/s produce of 100 B, one producer, acks=1 ({how})",
                f"{p100.rps:,.0f} rec/s" if p100 else "n/a",
                p100.rps >= TARGET_RPS if p100 else None,
            )
        )
    for kind, how in GENERATORS:
        ratios = []
        for size in SIZES:
            for acks in ACKS:
                ours, ref = (
                    fig(sluice, _label(kind, size, acks)),
                    fig(tansu, _label(kind, size, acks)),
                )
                if ours and ref:
                    ratios.append(ours.rps / ref.rps)
        out.append(
            (
                f"≥ {TARGET_VS_TANSU:g}x tansu's produce throughput, all 4 rows ({how})",
                f"lowest {min(ratios):.2f}x" if ratios else "n/a",
                min(ratios) >= TARGET_VS_TANSU if ratios else None,
            )
        )
    for kind, how in GENERATORS:
        p1k = fig(sluice, _label(kind, 1000, "1"))
        share = p1k.mbps * 1e6 / loopback if p1k and loopback else None
        out.append(
            (
                f"1 KB produce, acks=1 ≥ {TARGET_LOOPBACK_SHARE:.0%} of loopback ({how})",
                f"{share:.1%} of {loopback / 1e6:,.0f} MB/s" if share is not None else "n/a",
                share >= TARGET_LOOPBACK_SHARE if share is not None else None,
            )
        )
    p99 = fig(sluice, "latency p99 ms")
    out.append(
        (
            f"p99 ≤ {TARGET_P99_MS:g} ms at 20,000 rec/s (confluent-kafka)",
            f"{p99.rps:.2f} ms" if p99 else "n/a",
            p99.rps <= TARGET_P99_MS if p99 else None,
        )
    )
    return out


def _machine() -> str:
    import confluent_kafka

    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    client = confluent_kafka.__version__
    librdkafka = confluent_kafka.libversion()[0]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{os.cpu_count()} cores ({model}), Python {platform.python_version()}, "
        f"confluent-kafka {client} / librdkafka {librdkafka}, load average {load}, "
        f"sluice at {_revision()}"
    )


def _revision() -> str:
    """The commit the broker was measured at, marked when the work tree had changes."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        cmd = ["git", *args]
        done = subprocess.run(
            cmd, check=False, cwd=root, capture_output=True, text=True, timeout=10
        )
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD") or "unknown"
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench", ":!docs")
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    return f"{commit}{' + uncommitted changes' if dirty else ''}"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short run of each (~1 min)")
    parser.add_argument("--only", choices=BROKERS, help="measure one broker only")
    parser.add_argument("--no-latency", action="store_true", help="skip the latency runs")
    parser.add_argument(
        "--consume-only",
        action="store_true",
        help=f"measure only the long consume ({LONG_CONSUME}, 10 MB fetches)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    add_warm_option(parser, 16.0)  # both brokers keep what they take (tansu in memory): ~15 GB
    parser.add_argument(
        "--data-root",
        help="where Sluice's log lives (default: the system temporary directory, on disk; "
        "/dev/shm keeps it in memory like tansu's memory:// engine)",
    )
    args = parser.parse_args()
    plan = QUICK if args.quick else FULL
    console = Console(width=max(150, Console().width))
    machine = _machine()  # the load average before the bench adds its own
    machine += f", Sluice's log under {args.data_root or tempfile.gettempdir()}, tansu memory://"
    machine += warmed(args.warm_gib)
    started = datetime.datetime.now(datetime.UTC)

    console.log("loopback bandwidth")
    loopback = median(
        [loopback_bytes_per_second(plan.loopback_seconds) for _ in range(plan.loopback_runs)]
    )
    ceiling: dict[int, Figure] = {}
    for size in SIZES:
        console.log(f"produce() calls alone, {size} B")
        load = Workload("", "ceiling", size, plan.records[size], plan.seconds)
        try:
            ceiling[size] = _figure([in_child(client_ceiling, load) for _ in range(plan.runs)])
        except (RuntimeError, TimeoutError) as exc:
            ceiling[size] = Figure(error=str(exc).splitlines()[0])
    names = [args.only] if args.only else list(BROKERS)
    results = measure_all(
        names,
        plan,
        latency=not args.no_latency and not args.consume_only,
        data_root=args.data_root,
        consume_only=args.consume_only,
    )

    sluice, tansu = results.get("sluice", {}), results.get("tansu", {})
    table = Table(
        title=f"Broker throughput, {started:%Y-%m-%d %H:%M} UTC, median of {plan.runs}",
        caption=machine,
    )
    columns = ("figure", "sluice", "cores b · c", "tansu", "cores b · c", "sluice / tansu")
    for column in columns:
        table.add_column(column, justify="left" if column == "figure" else "right")
    for label in dict.fromkeys([*sluice, *tansu]):
        s, t = sluice.get(label), tansu.get(label)
        table.add_row(
            label, _cell(label, s), _cpu(s), _cell(label, t), _cpu(t), _ratio(label, s, t)
        )
    table.add_section()
    table.add_row("loopback TCP, one connection", f"{loopback / 1e6:,.0f} MB/s")
    for size in SIZES:
        text = _label("", size).strip()
        table.add_row(f"produce() calls alone, {text}, no broker", ceiling[size].cell())
    console.print(table)

    targets = Table(title="Targets (Sluice)")
    for column in ("target", "measured", "result"):
        targets.add_column(column)
    for text, value, ok in _targets(sluice, tansu, loopback):
        verdict = "n/a" if ok is None else ("[green]PASS[/]" if ok else "[red]FAIL[/]")
        targets.add_row(text, value, verdict)
    console.print(targets)
    console.print(
        "cores b · c: CPU seconds per second spent by the broker (b) and by the client process "
        "(c, all its threads) while timed. One Python thread cannot pass 1.00 core. "
        "'per core' compares records per broker CPU-second, which other load disturbs less.\n"
        f"'produce() calls alone' ({ceiling[100].rps:,.0f} rec/s at 100 B) bounds every "
        "confluent-kafka produce figure from above; librdkafka's own thread then needs CPU too.\n"
        "'pre-encoded produce' rows take the client out and show what the broker itself ingests."
    )

    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "machine": machine,
                    "plan": asdict(plan),
                    "loopback_bytes_per_second": loopback,
                    "client_ceiling": {str(k): asdict(v) for k, v in ceiling.items()},
                    "brokers": {
                        name: {label: asdict(fig) for label, fig in figs.items()}
                        for name, figs in results.items()
                    },
                },
                indent=2,
            )
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
