"""Streams: three pipelines in Sluice's DSL beside quixstreams and faust-streaming, and a restore.

    python bench/streams.py [--records N] [--faust-records M] [--only sluice,quixstreams,faust]
                            [--pipelines filter,count,window] [--no-restore] [--restore-keys K]
                            [--json PATH]

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
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from _clients import Workload, bench_producer, consume_run
from _harness import cpu_seconds, create_topic, in_child, running_broker
from broker_throughput import _machine
from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
QUIX_VERSION = "3.28.1"
QUIX_VENV = ROOT / "build" / "bench-venvs" / "quixstreams"
FRAMEWORKS = ("sluice", "quixstreams", "faust")
PIPELINES = ("filter", "count", "window")
KEYS = 10_000
EVENT_SPAN_MS = 3_600_000
INPUT = "streams-input"
RESTORE_APP = "bench-restore"
RESTORE_STORES = ("rocksdb", "memory")
COMMIT_INTERVAL_S = 5.0  # Sluice's and quixstreams' (its default); faust's broker_commit_interval
WATCH_EVERY_S = 0.02
TARGET_VS_QUIX = 5.0
TARGET_VS_FAUST = 20.0
TARGET_STATELESS = 200_000
TARGET_RESTORE_S = 10.0


# -- input ---------------------------------------------------------------------------------------
def produce_events(bootstrap: str, topic: str, records: int, prefixes: list[int]) -> dict[int, int]:
    """Produce the input; return how many of the first ``p`` records pass the filter, per prefix."""
    import random

    import orjson

    rng = random.Random(20261121)
    producer, failed = bench_producer(Workload(bootstrap, topic, 0, records, 600.0))
    produce, poll = producer.produce, producer.poll
    start_ms = int(time.time() * 1000) - 2 * EVENT_SPAN_MS
    passes, passed = {}, 0
    wanted = set(prefixes)
    deadline = time.monotonic() + 600
    for i in range(records):
        if i in wanted:
            passes[i] = passed
        user = f"u{rng.randrange(KEYS)}"
        amount = rng.randrange(2000) / 100
        passed += amount > 10
        ts = start_ms + i * EVENT_SPAN_MS // records
        value = orjson.dumps({"user": user, "amount": amount, "ts": ts})
        while True:
            try:
                produce(topic, value, user.encode(), timestamp=ts)
                break
            except BufferError:  # the local queue is full: let librdkafka drain it, then retry
                poll(0.005)
        if i % 10_000 == 0:
            poll(0)
            if time.monotonic() > deadline:
                raise TimeoutError(f"producing the input took over 600 s ({i} records)")
    passes[records] = passed
    left = producer.flush(60)
    if left or failed:
        raise RuntimeError(f"{left} input records unacknowledged, {len(failed)} failed")
    return passes


def produce_changelog(bootstrap: str, topic: str, keys: int) -> None:
    """``keys`` distinct keys ``k0000000``… with JSON int values: a count store's changelog."""
    producer, failed = bench_producer(Workload(bootstrap, topic, 0, keys, 600.0))
    produce, poll = producer.produce, producer.poll
    now = int(time.time() * 1000)
    for i in range(keys):
        key, value = f"k{i:07d}".encode(), str(i % 1000 + 1).encode()
        while True:
            try:
                produce(topic, value, key, timestamp=now)
                break
            except BufferError:
                poll(0.005)
        if i % 10_000 == 0:
            poll(0)
    left = producer.flush(60)
    if left or failed:
        raise RuntimeError(f"{left} changelog records unacknowledged, {len(failed)} failed")


def create_compacted_topic(bootstrap: str, topic: str, timeout: float = 20.0) -> None:
    """Create ``topic`` with one partition and ``cleanup.policy=compact``, as changelogs are."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})
    for future in admin.create_topics([new]).values():
        future.result(timeout)


# -- quixstreams' virtualenv ---------------------------------------------------------------------
def quix_python(console: Console) -> Path:
    """The Python of ``build/bench-venvs/quixstreams``, created with quixstreams on first use."""
    python = QUIX_VENV / "bin" / "python"
    if python.exists():
        done = subprocess.run(
            [str(python), "-c", "import quixstreams; print(quixstreams.__version__)"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.stdout.strip() == QUIX_VERSION:
            return python
    console.log(
        f"creating {QUIX_VENV.relative_to(ROOT)} with quixstreams=={QUIX_VERSION} "
        "(first run only; it pins confluent-kafka < 2.13, so it cannot share Sluice's venv)"
    )
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(QUIX_VENV)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"quixstreams=={QUIX_VERSION}"],
        check=True,
        timeout=900,
    )
    return python


# -- one pipeline run ----------------------------------------------------------------------------
@dataclass
class Result:
    """One (framework, pipeline) run. ``inputs``: input records the expected outputs stand for;
    ``timed_inputs``: those processed between the first output seen and the last."""

    framework: str
    pipeline: str
    inputs: int = 0
    expected: int = 0
    outputs: int = 0
    timed_inputs: float = 0.0
    seconds: float = 0.0
    cpu: float = 0.0
    broker_cpu: float = 0.0
    to_first_output: float = 0.0
    error: str = ""

    @property
    def events_per_second(self) -> float:
        return self.timed_inputs / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_per_million(self) -> float:
        return self.cpu / self.timed_inputs * 1e6 if self.timed_inputs else 0.0


def _tree_cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` (all threads) and its children, live or reaped."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
    return total


def _stop_group(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    """SIGTERM to the child's process group (it leads its own session), then SIGKILL."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.wait()


class Watermark:
    """The high watermark of partition 0 of a topic, asked of the broker each time."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer

        self._consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "bench-watch", "log_level": 0}
        )

    def high(self, topic: str) -> int:
        from confluent_kafka import TopicPartition

        low_high = self._consumer.get_watermark_offsets(
            TopicPartition(topic, 0), timeout=5, cached=False
        )
        return int(low_high[1]) if low_high else 0

    def close(self) -> None:
        self._consumer.close()


@dataclass(frozen=True)
class Context:
    bootstrap: str
    broker_pid: int
    workdir: Path
    quix: Path | None
    timeout: float


def _command(ctx: Context, framework: str, pipeline: str, out: str, group: str) -> list[str]:
    script = {"sluice": "_sluice_pipelines.py", "quixstreams": "_quix_pipelines.py"}.get(
        framework, "_faust_pipelines.py"
    )
    python = str(ctx.quix) if framework == "quixstreams" else sys.executable
    return [
        python,
        str(BENCH / script),
        pipeline,
        "--bootstrap",
        ctx.bootstrap,
        "--topic",
        INPUT,
        "--out",
        out,
        "--group",
        group,
        "--state-dir",
        str(ctx.workdir / group),
        "--commit-interval",
        str(COMMIT_INTERVAL_S),
    ]


def _tail(path: Path, chars: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def run_pipeline(
    ctx: Context, watch: Watermark, framework: str, pipeline: str, inputs: int, expected: int
) -> Result:
    """Run one pipeline in its own process until ``expected`` outputs exist (or time runs out)."""
    result = Result(framework, pipeline, inputs, expected)
    out, group = f"out-{framework}-{pipeline}", f"bench-{framework}-{pipeline}"
    create_topic(ctx.bootstrap, out)
    log_path = ctx.workdir / f"{group}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            _command(ctx, framework, pipeline, out, group),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ctx.workdir,
            start_new_session=True,
        )
    began = time.monotonic()
    deadline = began + ctx.timeout
    first: tuple[float, int, float, float] | None = None  # time, outputs, cpu, broker cpu
    high = 0
    try:
        while time.monotonic() < deadline:
            high = watch.high(out)
            now = time.monotonic()
            if first is None and high > 0:
                first = (now, high, _tree_cpu(proc.pid), cpu_seconds(ctx.broker_pid))
            if high >= expected or proc.poll() is not None:
                break
            time.sleep(WATCH_EVERY_S)
        end, cpu, broker = time.monotonic(), _tree_cpu(proc.pid), cpu_seconds(ctx.broker_pid)
    finally:
        _stop_group(proc)
    result.outputs = high
    if first is None:
        why = "exited" if proc.returncode is not None else f"no output in {ctx.timeout:.0f}s"
        result.error = f"{why}; log: {_tail(log_path)}"
        return result
    t0, out0, cpu0, broker0 = first
    result.to_first_output = t0 - began
    result.seconds = end - t0
    result.timed_inputs = (min(high, expected) - out0) * inputs / expected
    result.cpu = cpu - cpu0
    result.broker_cpu = broker - broker0
    if high < expected:
        how = "exited" if proc.returncode is not None else f"stopped at {ctx.timeout:.0f}s"
        result.error = f"{how} with {high:,} of {expected:,} outputs; log: {_tail(log_path, 600)}"
    return result


# -- restore -------------------------------------------------------------------------------------
@dataclass
class Restore:
    stores: str
    keys: int
    seconds: float = 0.0  # App.start() until the runtime logs its stores restored
    phase_seconds: float = 0.0  # the runtime's own figure: the restore phase alone
    process_seconds: float = 0.0  # process start until it printed that
    cpu: float = 0.0
    error: str = ""


def run_restore(ctx: Context, stores: str, keys: int) -> Restore:
    result = Restore(stores, keys)
    group = f"{RESTORE_APP}-{stores}"
    log_path = ctx.workdir / f"{group}.log"
    command = [
        sys.executable,
        str(BENCH / "_sluice_pipelines.py"),
        "restore",
        "--bootstrap",
        ctx.bootstrap,
        "--topic",
        "restore-input",
        "--group",
        RESTORE_APP,
        "--state-dir",
        str(ctx.workdir / group),
        "--stores",
        stores,
        "--last-key",
        f"k{keys - 1:07d}",
        "--keys",
        str(keys),
    ]
    with log_path.open("wb") as log:
        began = time.monotonic()
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=ctx.workdir,
            start_new_session=True,
        )
    try:
        assert proc.stdout is not None
        line = b""
        deadline = began + ctx.timeout
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                line = proc.stdout.readline()
                break
        result.process_seconds = time.monotonic() - began
        result.cpu = _tree_cpu(proc.pid)
        # The app closes itself (commit, LeaveGroup): the next run joins the same group.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(60)
    finally:
        _stop_group(proc)
    try:
        report = json.loads(line)
        result.seconds = float(report["restore_seconds"])
        result.phase_seconds = float(report["restore_phase_seconds"])
    except (ValueError, KeyError):
        result.error = f"no restore report; log: {_tail(log_path)}"
    return result


def restore_reference(bootstrap: str, topic: str, keys: int) -> float:
    """Seconds a bare confluent-kafka consumer takes to read ``keys`` records of ``topic``."""
    run = in_child(consume_run, Workload(bootstrap, topic, 8, keys, 120.0), timeout=300)
    return keys / run.records_per_second if run.records_per_second else float("nan")


# -- report --------------------------------------------------------------------------------------
def _rate(r: Result | None) -> str:
    if r is None:
        return "—"
    if r.error and not r.timed_inputs:
        return f"[red]error[/]: {r.error.splitlines()[0][:60]}"
    text = f"{r.events_per_second:,.0f}/s"
    return text + (" [red](incomplete)[/]" if r.error else "")


def _ratio(ours: Result | None, ref: Result | None) -> str:
    if ours is None or ref is None or not ours.events_per_second or not ref.events_per_second:
        return ""
    rate = ours.events_per_second / ref.events_per_second
    per_cpu = ref.cpu_per_million / ours.cpu_per_million if ours.cpu_per_million else 0.0
    return f"{rate:,.2f}x ({per_cpu:,.2f}x per CPU-s)"


def _targets(
    results: dict[tuple[str, str], Result], restores: list[Restore]
) -> list[tuple[str, str, bool | None]]:
    out: list[tuple[str, str, bool | None]] = []
    for pipeline in PIPELINES:
        ours = results.get(("sluice", pipeline))
        for ref_name, target in (("quixstreams", TARGET_VS_QUIX), ("faust", TARGET_VS_FAUST)):
            ref = results.get((ref_name, pipeline))
            ok = None
            measured = "n/a"
            if ours and ref and ours.events_per_second and ref.events_per_second:
                ratio = ours.events_per_second / ref.events_per_second
                measured, ok = f"{ratio:,.2f}x", ratio >= target
            out.append((f"{pipeline}: ≥ {target:g}x {ref_name}", measured, ok))
    stateless = results.get(("sluice", "filter"))
    rate = stateless.events_per_second if stateless else 0.0
    out.append(
        (
            f"filter (stateless): ≥ {TARGET_STATELESS:,} events/s in one process",
            f"{rate:,.0f}/s" if rate else "n/a",
            rate >= TARGET_STATELESS if rate else None,
        )
    )
    for r in restores:
        out.append(
            (
                f"restore of {r.keys:,} keys ≤ {TARGET_RESTORE_S:g} s ({r.stores})",
                f"{r.seconds:.2f} s" if not r.error else "n/a",
                r.seconds <= TARGET_RESTORE_S if not r.error else None,
            )
        )
    return out


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
    restore_floor = float("nan")
    config = {"group.initial.rebalance.delay.ms": "0"}
    with (
        running_broker("sluice", args.data_root, config=config) as broker,
        tempfile.TemporaryDirectory(prefix="bench-streams-", dir=args.data_root) as tmp,
    ):
        ctx = Context(broker.bootstrap, broker.pid, Path(tmp), quix, args.timeout)
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
                r = run_restore(ctx, stores, args.restore_keys)
                restores.append(r)
                if r.error:
                    log.print(f"[red]restore {stores}: {r.error}[/]")

    table = Table(
        title=f"Streams pipelines on Sluice's broker, {started:%Y-%m-%d %H:%M} UTC, "
        f"{records:,} input records (faust: the first {faust_records:,})",
        caption=machine,
    )
    columns = (
        "pipeline",
        "framework",
        "records",
        "events/s",
        "CPU-s",
        "CPU-s per 1M",
        "broker cores",
        "to first output",
        "sluice / this",
    )
    for column in columns:
        table.add_column(column, justify="left" if column in columns[:2] else "right")
    for pipeline in pipelines:
        ours = results.get(("sluice", pipeline))
        for framework in frameworks:
            r = results.get((framework, pipeline))
            if r is None:
                continue
            table.add_row(
                pipeline,
                framework,
                f"{r.inputs:,}",
                _rate(r),
                f"{r.cpu:,.1f}" if r.timed_inputs else "",
                f"{r.cpu_per_million:,.1f}" if r.timed_inputs else "",
                f"{r.broker_cpu / r.seconds:.2f}" if r.seconds else "",
                f"{r.to_first_output:.1f} s" if r.timed_inputs else "",
                "" if framework == "sluice" else _ratio(ours, r),
            )
        table.add_section()
    console.print(table)
    if restores:
        restore_table = Table(
            title=f"Restore of a {args.restore_keys:,}-key count store from its changelog "
            "(one partition, empty state directory)"
        )
        for column in ("stores", "start → restored", "restore phase", "process", "CPU-s"):
            restore_table.add_column(column, justify="left" if column == "stores" else "right")
        for r in restores:
            if r.error:
                restore_table.add_row(r.stores, f"[red]error[/]: {r.error[:80]}")
                continue
            restore_table.add_row(
                r.stores,
                f"{r.seconds:.2f} s",
                f"{r.phase_seconds:.2f} s",
                f"{r.process_seconds:.2f} s",
                f"{r.cpu:.1f}",
            )
        restore_table.add_row(
            "reference: the changelog read by a bare confluent-kafka consumer",
            f"{restore_floor:.2f} s",
        )
        console.print(restore_table)

    targets = Table(title="Targets (Sluice)")
    for column in ("target", "measured", "result"):
        targets.add_column(column)
    for text, value, ok in _targets(results, restores):
        verdict = "n/a" if ok is None else ("[green]PASS[/]" if ok else "[red]FAIL[/]")
        targets.add_row(text, value, verdict)
    console.print(targets)
    console.print(
        "events/s: input records processed per second, timed from the first output record seen "
        "to the last expected one. CPU-s: user + system seconds of the framework's process (all "
        "threads) over that window. broker cores: the broker's CPU seconds per second of it. "
        "sluice / this: the events/s ratio and, in brackets, the ratio of CPU-s per event."
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "started": started.isoformat(),
                    "machine": machine,
                    "records": records,
                    "faust_records": faust_records,
                    "results": [
                        {**asdict(r), "events_per_second": r.events_per_second}
                        for r in results.values()
                    ],
                    "restores": [asdict(r) for r in restores],
                    "restore_consume_alone_seconds": restore_floor,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
