"""Connect: file-source → topic and topic → file-sink throughput beside raw client throughput.

    python bench/connect.py [--lines N] [--timeout S] [--profile DIR] [--json PATH]
                            [--keep DIR] [--log-level LEVEL]

One Sluice broker (``_harness.running_broker``, the initial rebalance delay set to 0 so that the
sink's group joins at once), log under the system's temporary directory. Measured in the same
run, one after the other:

1. **The ceiling.** A raw confluent-kafka producer (``_clients.produce_run``, the harness's
   batching, ``acks=all`` as the source connector uses) writes N 100-byte records to a topic,
   timed from the first ``produce()`` until every record is acknowledged; then a raw consumer
   (``_clients.consume_run``) reads them back in ``consume(10000)`` batches, timed from the first
   batch in hand. Each in its own spawned process.
2. **file-source → topic.** An N-line file is written first (lines of 100 bytes plus the
   newline, so that a record's value is as big as the ceiling's). Then ``sluice connect
   standalone`` runs a ``file-source`` connector on it (its defaults; worker ``-X
   value.converter=string -X key.converter=string -X offset.flush.interval.ms=1000``, no REST
   API, offsets in a fresh file), and the parent asks the broker for the topic's high watermark
   every 20 ms until it reaches N.
3. **topic → file-sink.** With the ceiling's topic (N records) in place, ``sluice connect
   standalone`` runs a ``file-sink`` connector writing it to a file, and the parent counts the
   file's newlines (reading what was appended since the last look) every 20 ms until there are
   N. The sink's writes are buffered and flushed (fsync) at each commit, so the last few KB
   appear up to one commit interval (1 s) after they were put.

For each connector run: lines/s **from the first line seen** (the first record in the topic, the
first line in the file) to the N-th, which leaves out interpreter start, imports, the connect and
the group join (shown apart as "to first"), and lines/s **from the process's start**. CPU-s is
user + system time of the worker process (all its threads and children, psutil) over the timed
window; "broker cores" the broker's CPU per second of it. The ratio is our lines/s (from the first
line) over the ceiling's; the target is ≥ 50 %. Every run is bounded by ``--timeout`` seconds
and its process group is SIGTERMed, then SIGKILLed, whatever happened.

The workers run with ``HYPOTHESIS_STORAGE_DIRECTORY`` set to the repository's ``.hypothesis``:
with the test extra installed, importing kio registers hypothesis strategies, which in a
directory without that cache costs 5-8 s at every start (and leaves a ``.hypothesis/`` there).

``--keep DIR`` works in DIR instead of a temporary directory (the input, the sink's file, the
YAML files and the workers' logs stay there); ``--log-level`` sets the workers' (WARNING).
``--profile DIR`` attaches ``py-spy record`` to each worker 0.5 s after its start (all threads,
250 samples/s, raw collapsed stacks in ``DIR/source.txt`` and ``DIR/sink.txt``) and prints, for
the task thread's samples, each function's inclusive and self share. py-spy stops the worker to
take each sample, so profiled runs are slower: their figures are not the record.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from _clients import Workload, consume_run, produce_run
from _harness import SLUICE, cpu_seconds, create_topic, in_child, running_broker
from _streams_runs import Watermark, stop_group, tail, tree_cpu
from broker_throughput import _machine
from rich.console import Console
from rich.table import Table

# With hypothesis installed (the test extra), importing kio registers hypothesis strategies, and
# in a directory without a warm ``.hypothesis/`` cache that costs 5-8 s at every start: the
# workers use the repository's cache, as a ``sluice`` run from the checkout does.
HYPOTHESIS_CACHE = Path(__file__).resolve().parent.parent / ".hypothesis"
LINE_BYTES = 100  # each line's text; the newline makes it 101 bytes on disk
WATCH_EVERY_S = 0.02
TARGET = 0.50
CEILING_TOPIC = "connect-ceiling"
SOURCE_TOPIC = "connect-source"
WORKER_SETTINGS = {
    "value.converter": "string",
    "key.converter": "string",
    "offset.flush.interval.ms": "1000",
}


@dataclass
class Result:
    """One connector run: ``lines`` moved in ``seconds`` since the first line seen."""

    what: str
    expected: int
    lines: int = 0  # lines in the topic / file at the end
    timed_lines: int = 0  # lines after the first one seen
    seconds: float = 0.0  # first line seen → the N-th
    total_seconds: float = 0.0  # process start → the N-th
    to_first: float = 0.0
    cpu: float = 0.0  # worker CPU-s over the timed window
    cpu_total: float = 0.0  # worker CPU-s from its start
    broker_cpu: float = 0.0
    error: str = ""

    @property
    def lines_per_second(self) -> float:
        return self.timed_lines / self.seconds if self.seconds > 0 else 0.0

    @property
    def lines_per_second_total(self) -> float:
        return self.lines / self.total_seconds if self.total_seconds > 0 else 0.0


def write_input(path: Path, lines: int) -> None:
    """``lines`` lines of exactly LINE_BYTES characters plus a newline: ``0000000042 xxx…``."""
    filler = "x" * (LINE_BYTES - 11)
    with path.open("w", encoding="ascii") as out:
        for start in range(0, lines, 10_000):
            out.write(
                "".join(f"{i:010d} {filler}\n" for i in range(start, min(lines, start + 10_000)))
            )


def _worker_command(yaml_path: Path, bootstrap: str, offsets: Path, log_level: str) -> list[str]:
    command = [
        str(SLUICE),
        "connect",
        "standalone",
        str(yaml_path),
        "-b",
        bootstrap,
        "--offsets",
        str(offsets),
        "--rest",
        "",
        "--log-level",
        log_level,
    ]
    for key, value in WORKER_SETTINGS.items():
        command += ["-X", f"{key}={value}"]
    return command


def _attach_profiler(pid: int, out: Path) -> subprocess.Popen[bytes]:
    """py-spy sampling every thread of ``pid`` until it exits; raw collapsed stacks to ``out``."""
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    command = [py_spy, "record", "-p", str(pid), "-r", "250", "-f", "raw", "-o", str(out)]
    return subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )


class _LineCounter:
    """Newlines in a growing file, reading only what was appended since the last call."""

    def __init__(self, path: Path) -> None:
        self.path, self.count, self._handle = path, 0, None

    def __call__(self) -> int:
        if self._handle is None:
            try:
                self._handle = self.path.open("rb")
            except FileNotFoundError:
                return 0
        while chunk := self._handle.read(1 << 20):
            self.count += chunk.count(b"\n")
        return self.count

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


def run_connector(
    what: str,
    connector: dict[str, object],
    progress: Callable[[], int],
    expected: int,
    *,
    bootstrap: str,
    broker_pid: int,
    workdir: Path,
    timeout: float,
    profile: Path | None,
    log_level: str = "WARNING",
) -> Result:
    """Run ``connector`` in ``sluice connect standalone`` until ``progress()`` is ``expected``."""
    result = Result(what, expected)
    yaml_path = workdir / f"{what}.yaml"
    yaml_path.write_text(json.dumps([connector], indent=2))  # JSON is YAML
    log_path = workdir / f"{what}.log"
    offsets = workdir / f"{what}.offsets"
    command = _worker_command(yaml_path, bootstrap, offsets, log_level)
    with log_path.open("wb") as log:
        began = time.monotonic()
        proc = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            start_new_session=True,
            env={**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(HYPOTHESIS_CACHE)},
        )
    deadline = began + timeout
    first: tuple[float, int, float, float] | None = None  # time, lines, cpu, broker cpu
    seen = 0
    spy: subprocess.Popen[bytes] | None = None
    try:
        while time.monotonic() < deadline:
            seen = progress()
            now = time.monotonic()
            if profile is not None and spy is None and now - began > 0.5:  # once Python runs
                spy = _attach_profiler(proc.pid, profile)
            if first is None and seen > 0:
                first = (now, seen, tree_cpu(proc.pid), cpu_seconds(broker_pid))
            if seen >= expected or proc.poll() is not None:
                break
            time.sleep(WATCH_EVERY_S)
        end, cpu, broker = time.monotonic(), tree_cpu(proc.pid), cpu_seconds(broker_pid)
    finally:
        stop_group(proc)
        if spy is not None:  # it writes its file once the worker is gone
            try:
                spy.wait(30)
            except subprocess.TimeoutExpired:
                stop_group(spy)
    result.lines = seen
    result.total_seconds = end - began
    result.cpu_total = cpu
    if first is None:
        why = "exited" if proc.returncode is not None else f"nothing in {timeout:.0f}s"
        result.error = f"{why}; log: {tail(log_path)}"
        return result
    t0, lines0, cpu0, broker0 = first
    result.to_first = t0 - began
    result.seconds = end - t0
    result.timed_lines = min(seen, expected) - lines0
    result.cpu = cpu - cpu0
    result.broker_cpu = broker - broker0
    if seen < expected:
        how = "exited" if proc.returncode is not None else f"stopped at {timeout:.0f}s"
        result.error = f"{how} with {seen:,} of {expected:,} lines; log: {tail(log_path, 600)}"
    return result


def _frame(raw: str) -> str:
    """``function (package/module.py)`` from py-spy's ``function (path/to/module.py:line)``."""
    name, _, where = raw.partition(" (")
    path = where.rsplit(":", 1)[0].rstrip(")")
    return f"{name} ({'/'.join(path.split('/')[-2:])})"


def summarize_profile(path: Path, top: int = 20) -> tuple[float, list[tuple[str, float, float]]]:
    """From py-spy's raw stacks: the task thread's share of all samples, and per function its
    inclusive and self shares of the task thread's samples (most inclusive first)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = task = 0
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return 0.0, []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        total += int(count)
        frames = [_frame(f) for f in stack.split(";")]
        if not any(f.startswith("TaskRunner._run ") for f in frames):
            continue  # start-up, the main thread waiting, watchdog, …: not the task
        task += int(count)
        for frame in dict.fromkeys(frames):
            inclusive[frame] += int(count)
        own[frames[-1]] += int(count)
    if not task:
        return 0.0, []
    shown = dict(inclusive.most_common(top))
    shown.update((f, inclusive[f]) for f, _ in own.most_common(top // 2))  # the heaviest leaves
    rows = [(f, n / task, own[f] / task) for f, n in shown.items()]
    return task / total, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=1_000_000, help="lines (records) per run")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound of each run, s")
    parser.add_argument("--profile", type=Path, help="run the workers under py-spy into DIR")
    parser.add_argument("--json", type=Path, help="also write the figures there")
    parser.add_argument("--keep", type=Path, help="work in DIR (files, logs kept), not a temp dir")
    parser.add_argument("--log-level", default="WARNING", help="the workers' log level")
    args = parser.parse_args()
    n = args.lines
    console = Console(width=max(Console().width, 150))
    started = datetime.datetime.now(datetime.UTC)
    console.log(f"{_machine()}; load average {os.getloadavg()[0]:.2f}; {n:,} lines")
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)

    with (
        contextlib.nullcontext(args.keep)
        if args.keep
        else tempfile.TemporaryDirectory(prefix="bench-connect-") as tmp,
        running_broker("sluice", config={"group.initial.rebalance.delay.ms": "0"}) as broker,
    ):
        workdir = Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for stale in ("output.txt", "source.offsets", "sink.offsets"):
            (workdir / stale).unlink(missing_ok=True)
        input_path, output_path = workdir / "input.txt", workdir / "output.txt"
        write_input(input_path, n)
        console.log(f"wrote {input_path.stat().st_size / 1e6:.1f} MB of input")
        for topic in (CEILING_TOPIC, SOURCE_TOPIC):
            create_topic(broker.bootstrap, topic)

        load = Workload(
            broker.bootstrap, CEILING_TOPIC, LINE_BYTES, n, 300.0, acks="all", broker_pid=broker.pid
        )
        produced = in_child(produce_run, load, timeout=args.timeout)
        console.log(f"ceiling produce: {produced.records_per_second:,.0f}/s")
        if produced.records != n:
            raise SystemExit(f"the ceiling producer sent {produced.records:,} of {n:,} records")
        consumed = in_child(consume_run, load, timeout=args.timeout)
        console.log(f"ceiling consume: {consumed.records_per_second:,.0f}/s")

        watch = Watermark(broker.bootstrap)
        common = {
            "bootstrap": broker.bootstrap,
            "broker_pid": broker.pid,
            "workdir": workdir,
            "timeout": args.timeout,
            "log_level": args.log_level,
        }
        try:
            source = run_connector(
                "source",
                {
                    "name": "bench-file-source",
                    "class": "file-source",
                    "config": {"files": str(input_path), "topic": SOURCE_TOPIC},
                },
                lambda: watch.high(SOURCE_TOPIC),
                n,
                profile=args.profile / "source.txt" if args.profile else None,
                **common,  # type: ignore[arg-type]
            )
            final = watch.high(SOURCE_TOPIC)  # the worker has stopped: nothing is in flight
            if final != n and not source.error:
                source.error = f"the topic holds {final:,} records after the run, not {n:,}"
        finally:
            watch.close()
        console.log(f"file-source: {source.lines_per_second:,.0f} lines/s {source.error}")
        counter = _LineCounter(output_path)
        try:
            sink = run_connector(
                "sink",
                {
                    "name": "bench-file-sink",
                    "class": "file-sink",
                    "config": {"topics": CEILING_TOPIC, "file": str(output_path)},
                },
                counter,
                n,
                profile=args.profile / "sink.txt" if args.profile else None,
                **common,  # type: ignore[arg-type]
            )
            final = counter()  # the worker has stopped (and flushed)
            if final != n and not sink.error:
                sink.error = f"the file has {final:,} lines after the run, not {n:,}"
        finally:
            counter.close()
        console.log(f"file-sink: {sink.lines_per_second:,.0f} lines/s {sink.error}")
        if not sink.error:
            with output_path.open("rb") as out:
                head = out.readline()
            if head != b"x" * LINE_BYTES + b"\n":
                sink.error = f"unexpected first line in the sink's file: {head[:60]!r}"

    table = Table(
        title=f"Connect, {n:,} lines of {LINE_BYTES} B, one partition "
        f"({started:%Y-%m-%d %H:%M} UTC, load average now {os.getloadavg()[0]:.2f})"
    )
    columns = [
        "figure",
        "lines/s",
        "ceiling/s",
        "ratio",
        "target ≥ 50 %",
        "CPU-s",
        "to first",
        "from start",
        "broker cores",
    ]
    for column in columns:
        table.add_column(column, justify="left" if column == "figure" else "right")
    table.add_row(
        "raw producer (acks=all)",
        f"{produced.records_per_second:,.0f}",
        "",
        "",
        "",
        f"{produced.client_cpu:.1f}",
        "",
        "",
        f"{produced.broker_cpu / produced.seconds:.2f}" if produced.seconds else "",
    )
    table.add_row(
        "raw consumer",
        f"{consumed.records_per_second:,.0f}",
        "",
        "",
        "",
        f"{consumed.client_cpu:.1f}",
        "",
        "",
        f"{consumed.broker_cpu / consumed.seconds:.2f}" if consumed.seconds else "",
    )
    verdicts = {}
    for result, ceiling, label in (
        (source, produced.records_per_second, "file-source → topic"),
        (sink, consumed.records_per_second, "topic → file-sink"),
    ):
        ratio = result.lines_per_second / ceiling if ceiling else 0.0
        verdict = "FAIL" if result.error or ratio < TARGET else "PASS"
        verdicts[result.what] = {"ratio": ratio, "verdict": verdict}
        table.add_row(
            label,
            f"{result.lines_per_second:,.0f}",
            f"{ceiling:,.0f}",
            f"{ratio:.0%}",
            f"[bold]{verdict}[/bold]",
            f"{result.cpu:.1f}",
            f"{result.to_first:.2f} s",
            f"{result.lines_per_second_total:,.0f}",
            f"{result.broker_cpu / result.seconds:.2f}" if result.seconds else "",
        )
    console.print(table)
    for result in (source, sink):
        if result.error:
            console.print(f"[red]{result.what}: {result.error}[/red]")
    if args.profile:
        for name in ("source", "sink"):
            share, rows = summarize_profile(args.profile / f"{name}.txt")
            console.print(
                f"\n[bold]{name}[/bold]: the task thread has {share:.0%} of the samples; "
                "of those, per function: inclusive, self"
            )
            for frame, inclusive, own in rows:
                console.print(f"  {inclusive:6.1%} {own:6.1%}  {frame}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "lines": n,
                    "started": started.isoformat(),
                    "produce": asdict(produced),
                    "consume": asdict(consumed),
                    "source": asdict(source),
                    "sink": asdict(sink),
                    "targets": verdicts,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
