"""The key guarantee: a streaming query killed with ``kill -9`` mid-batch and restarted on its
checkpoint writes every record to its Parquet sink exactly once.

The query runs in its own process (``spark_job.py``, its own JVM): the test kills the whole
process tree (the JVM and Spark's Python workers, which leave the process group) while a
micro-batch is planned but not committed, restarts it, produces more records and reads the
output with Spark (which lists only the files in the sink's commit log).
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest

from tests.conftest import BrokerProcess, create_topic
from tests.connectors.spark.source_helpers import produce

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

JOB = Path(__file__).with_name("spark_job.py")
WAIT = 300.0  # seconds: the bound on each wait (a Spark driver starts in 15-40 s here)


class SparkJob:
    """``spark_job.py`` in a new session; :meth:`kill` ends its whole process tree by PID."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.args = args
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> SparkJob:
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(JOB), *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the driver, the JVM and every Python worker, without warning."""
        if self.proc is None:
            return
        try:
            tree = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(True)]
        except psutil.NoSuchProcess:
            tree = []
        for proc in tree:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)
        psutil.wait_procs(tree, timeout=30)
        self.proc.wait(30)

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""


@pytest.fixture
def spark_jobs(tmp_path: Path) -> Iterator[Callable[[list[str]], SparkJob]]:
    """Start ``spark_job.py`` processes; every one is killed (whole tree) at teardown."""
    started: list[SparkJob] = []

    def start(args: list[str]) -> SparkJob:
        job = SparkJob(args, tmp_path / f"job{len(started)}.log")
        started.append(job)
        return job.start()

    yield start
    for job in started:
        job.kill()


def batch_ids(folder: Path) -> set[int]:
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()


def wait_for(condition: Callable[[], bool], what: str, job: SparkJob) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if not job.alive():
            pytest.fail(f"the Spark job exited while waiting for {what}:\n{job.log_tail()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {WAIT:.0f} s:\n{job.log_tail()}")
        time.sleep(0.02)


def committed_total(checkpoint: Path, topic: str) -> int:
    """How many offsets the last committed batch's end offset covers (0 before the first)."""
    commits = batch_ids(checkpoint / "commits")
    if not commits:
        return 0
    lines = (checkpoint / "offsets" / str(max(commits))).read_text().splitlines()
    offsets = json.loads(lines[2])
    assert list(offsets) == [topic] and list(offsets[topic]) == ["0", "1", "2"], lines[2]
    return sum(offsets[topic].values())


def test_kill_9_mid_batch_then_restart_writes_every_record_once(
    spark: SparkSession,
    shared_broker: BrokerProcess,
    spark_jobs: Callable[[list[str]], SparkJob],
    tmp_path: Path,
) -> None:
    boot = shared_broker.bootstrap
    topic = create_topic(boot, 3)
    produced = produce(boot, topic, 1800)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"
    args = [boot, topic, str(checkpoint), str(output), "300"]  # 6 batches of 300

    first = spark_jobs(args)

    def mid_batch() -> bool:
        commits, planned = batch_ids(checkpoint / "commits"), batch_ids(checkpoint / "offsets")
        return len(commits) >= 2 and max(planned) > max(commits)

    wait_for(mid_batch, "batch in progress after two committed ones", first)
    first.kill()
    killed_at = max(batch_ids(checkpoint / "offsets"))
    assert committed_total(checkpoint, topic) < len(produced), "the first run read everything"

    second = spark_jobs(args)
    wait_for(
        lambda: max(batch_ids(checkpoint / "commits")) > killed_at,
        f"a commit after batch {killed_at}",
        second,
    )
    produced += produce(boot, topic, 300, first=1800)
    wait_for(lambda: committed_total(checkpoint, topic) == len(produced), "all records", second)
    second.kill()

    df = spark.read.parquet(str(output)).select("partition", "offset", "key", "value")
    got = sorted((r[0], r[1], bytes(r[2] or b"-"), bytes(r[3])) for r in df.collect())
    expected = sorted((p.partition, p.offset, p.key or b"-", p.value) for p in produced)
    assert len(got) == len(expected), f"{len(got)} rows for {len(expected)} produced records"
    duplicated = len(got) - len(set(got))
    assert got == expected, f"{duplicated} duplicated rows; missing: {set(expected) - set(got)}"
