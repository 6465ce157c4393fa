"""One streams pipeline in its own process, timed by the output topic's high watermark.

Also quixstreams' own virtualenv (it pins confluent-kafka < 2.13), made on first use.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from _harness import cpu_seconds, create_topic
from _streams_input import create_compacted_topic
from rich.console import Console

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
QUIX_VERSION = "3.28.1"
QUIX_VENV = ROOT / "build" / "bench-venvs" / "quixstreams"
INPUT = "streams-input"
COMMIT_INTERVAL_S = 5.0  # Sluice's and quixstreams' (its default); faust's broker_commit_interval
WATCH_EVERY_S = 0.02


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


def tree_cpu(pid: int) -> float:
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


def stop_group(proc: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
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
    stores: str = "rocksdb"  # the Sluice pipelines' stores: rocksdb or memory


def _command(ctx: Context, framework: str, pipeline: str, out: str, group: str) -> list[str]:
    script = {
        "sluice": "_sluice_pipelines.py",
        "bare-loop": "_bare_pipelines.py",
        "bare-changelog": "_bare_pipelines.py",
        "native-loop": "_native_pipelines.py",
        "quixstreams": "_quix_pipelines.py",
    }.get(framework, "_faust_pipelines.py")
    python = str(ctx.quix) if framework == "quixstreams" else sys.executable
    logged = ["--changelog", changelog_of(group)] if framework == "bare-changelog" else []
    stores = ["--stores", ctx.stores] if framework == "sluice" else []
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
        *logged,
        *stores,
    ]


def changelog_of(group: str) -> str:
    """The changelog topic of a bare-changelog run (compacted, one partition)."""
    return f"{group}-changelog"


def tail(path: Path, chars: int = 1500) -> str:
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
    if framework == "bare-changelog":
        create_compacted_topic(ctx.bootstrap, changelog_of(group))
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
                first = (now, high, tree_cpu(proc.pid), cpu_seconds(ctx.broker_pid))
            if high >= expected or proc.poll() is not None:
                break
            time.sleep(WATCH_EVERY_S)
        end, cpu, broker = time.monotonic(), tree_cpu(proc.pid), cpu_seconds(ctx.broker_pid)
    finally:
        stop_group(proc)
    result.outputs = high
    if first is None:
        why = "exited" if proc.returncode is not None else f"no output in {ctx.timeout:.0f}s"
        result.error = f"{why}; log: {tail(log_path)}"
        return result
    t0, out0, cpu0, broker0 = first
    result.to_first_output = t0 - began
    result.seconds = end - t0
    result.timed_inputs = (min(high, expected) - out0) * inputs / expected
    result.cpu = cpu - cpu0
    result.broker_cpu = broker - broker0
    if high < expected:
        how = "exited" if proc.returncode is not None else f"stopped at {ctx.timeout:.0f}s"
        result.error = f"{how} with {high:,} of {expected:,} outputs; log: {tail(log_path, 600)}"
    return result
