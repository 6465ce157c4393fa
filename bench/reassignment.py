"""Reassignment: how fast an unthrottled reassignment copies a partition, against a follower
restarted empty catching up the same data, in one run.

    python bench/reassignment.py [--mb 200] [--runs 3] [--quick] [--data-root DIR]

One ZooKeeper and three brokers (``_cluster.py``: the tests' own harness). A topic of one
partition on brokers 1 and 2 gets ``--mb`` MB of 1 KB records (pre-encoded, acks=all, to its
leader). Then, ``--runs`` times (1,2 → 2,3 → 3,1 → 1,2 …):

* **reassignment**: AlterPartitionReassignments moves the partition off its first replica onto
  the third broker (no throttle). The new replica's log size is sampled every 2 ms: timed from
  the request (and from its first bytes) until it holds the whole log, until ZooKeeper lists
  it in the ISR, and until the assignment is the target with nothing adding or removing;
* **catch-up** (the reference): the new replica's broker is stopped, its copy deleted, and it
  is started again: timed from its first bytes until it holds the whole log (and from its
  start, and from its ready line until ZooKeeper lists it in the ISR) — the same bytes, copied
  by the same replica fetcher, without the reassignment's machinery.

Printed side by side in MB/s (the median of the runs, and each run), with the target of issue
21: reassignment (from the request) ≥ 50 % of catch-up (from the first byte). Every wait is
bounded; every process is stopped by PID at the end, whatever happened.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _clients import Workload
from _cluster import CLUSTER, BrokerCluster, create_assigned, partition_state, running_cluster
from _harness import in_child
from _wire import wire_produce_run
from broker_throughput import _machine
from rich.console import Console
from rich.table import Table

from sluice import wire
from sluice.cli.partitions import alter_reassignments

TOPIC = "moving"
RECORD = 1000
TARGET = 0.5


def _until(condition: Callable[[], bool], what: str, timeout: float) -> float:
    """Poll ``condition`` every 10 ms until it holds (bounded); the monotonic time it did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return time.monotonic()
        except (AssertionError, LookupError, OSError):  # ZooKeeper between states: not yet
            pass
        time.sleep(0.01)
    raise TimeoutError(f"{what}: not within {timeout:g} s")


def log_bytes(directory: Path) -> int:
    """The bytes of the segments in a partition directory (0 while it does not exist)."""
    try:
        return sum(p.stat().st_size for p in directory.glob("*.log"))
    except FileNotFoundError:
        return 0


class Growth:
    """Samples, every 2 ms in a thread, the log size of a partition directory: when its first
    bytes came and when it reached a size (the copy itself, whatever came before it)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="growth", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), log_bytes(self.directory)))
            time.sleep(0.002)

    def wait(self, size: int, timeout: float) -> tuple[float, float]:
        """Wait (bounded) until the log holds ``size`` bytes; (first bytes, reached) times."""
        _until(lambda: bool(self.samples) and self.samples[-1][1] >= size, "log copied", timeout)
        self._stop.set()
        self._thread.join(5)
        first = next(t for t, n in self.samples if n > 0)
        reached = next(t for t, n in self.samples if n >= size)
        return first, reached


@dataclass
class Times:
    """One run's moments (monotonic seconds) and the bytes each copy moved."""

    size: int
    request: float
    first: float
    full: float
    in_isr: float
    done: float
    restart: float
    ready: float
    c_first: float
    c_full: float
    back: float


def one_run(cluster: BrokerCluster, current: list[int], console: Console) -> Times:
    """Move the partition from ``current`` to the other broker and the second of ``current``
    (1,2 → 2,3 → 3,1 → 1,2), then restart the new replica empty and let it catch up."""
    new = next(b for b in CLUSTER if b not in current)
    plan = [current[1], new]
    store = cluster.store()

    def assignment() -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        found = store.topic_assignment(TOPIC)
        assert found is not None
        p = found.value.partitions[0]
        return p.replicas, p.adding, p.removing

    leader = partition_state(cluster, TOPIC)[0]
    size = log_bytes(cluster.broker(leader).data_dir / f"{TOPIC}-0")
    target = cluster.broker(new).data_dir / f"{TOPIC}-0"
    growth = Growth(target)
    with wire.connect(cluster.bootstrap, timeout=30, client_id="bench") as conn:
        request = time.monotonic()
        refused = alter_reassignments(conn, {(TOPIC, 0): plan}, 30)
    if refused:
        raise RuntimeError(f"reassignment refused: {refused}")
    first, full = growth.wait(size, 600)
    in_isr = _until(lambda: new in partition_state(cluster, TOPIC)[1], "in the ISR", 600)
    done = _until(lambda: assignment() == (tuple(plan), (), ()), "reassignment done", 120)
    console.log(f"reassignment {current} → {plan}: copied in {full - request:.2f} s")

    cluster.stop(new)
    _until(lambda: new not in partition_state(cluster, TOPIC)[1], "out of the ISR", 60)
    shutil.rmtree(target)
    growth = Growth(target)
    restart = time.monotonic()
    cluster.start(new)
    ready = time.monotonic()
    c_first, c_full = growth.wait(size, 600)
    back = _until(lambda: new in partition_state(cluster, TOPIC)[1], "back in the ISR", 600)
    console.log(f"catch-up of broker {new} from empty: copied in {c_full - c_first:.2f} s")
    return Times(size, request, first, full, in_isr, done, restart, ready, c_first, c_full, back)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--mb", type=int, help="MB in the partition (200; 50 with --quick)")
    parser.add_argument("--runs", type=int, help="reassignments, each then caught up (3; 1)")
    parser.add_argument("--quick", action="store_true", help="50 MB, one run")
    parser.add_argument("--data-root", help="where the logs live (default: the temp directory)")
    args = parser.parse_args()
    mb = args.mb or (50 if args.quick else 200)
    runs = args.runs or (1 if args.quick else 3)
    console = Console(width=max(120, Console().width))
    machine = _machine()
    started = datetime.datetime.now(datetime.UTC)
    done: list[Times] = []
    with (
        tempfile.TemporaryDirectory(dir=args.data_root) as root,
        running_cluster(Path(root), 6000) as cluster,
    ):
        create_assigned(cluster, TOPIC, [[1, 2]])
        leader = partition_state(cluster, TOPIC)[0]
        records = mb * 1_000_000 // RECORD
        load = Workload(cluster.broker(leader).bootstrap, TOPIC, RECORD, records, 300.0, "all")
        written = in_child(wire_produce_run, load, timeout=330)
        console.log(f"{written.records * RECORD / 1e6:.0f} MB written to {TOPIC}-0 on 1, 2")
        current = [1, 2]
        for _ in range(runs):
            done.append(one_run(cluster, current, console))
            current = [current[1], next(b for b in CLUSTER if b not in current)]

    mb_copied = done[0].size / 1e6
    console.print(f"Reassignment, {started:%Y-%m-%d %H:%M} UTC; {machine}, logs under "
                  f"{args.data_root or tempfile.gettempdir()}")  # fmt: skip
    table = Table(
        title=f"One partition of {mb_copied:.0f} MB of log (1 KB records), 3 brokers: "
        f"MB/s, median of {runs} (each run)"
    )
    for column in ("", "from", "to", "MB/s", "runs"):
        table.add_column(column, justify="right")

    def row(what: str, since: str, until: str, a: str, b: str) -> float:
        rates = [t.size / 1e6 / (getattr(t, b) - getattr(t, a)) for t in done]
        each = " · ".join(f"{r:.0f}" for r in rates)
        table.add_row(what, since, until, f"{statistics.median(rates):.1f}", each)
        return statistics.median(rates)

    reassign = row(
        "reassignment", "the request", "the new replica holds the log", "request", "full"
    )
    row("", "its first bytes", "the new replica holds the log", "first", "full")
    row("", "the request", "the new replica in the ISR", "request", "in_isr")
    row("", "the request", "the reassignment done", "request", "done")
    catchup = row("catch-up, restarted empty", "its first bytes", "it holds the log", "c_first",
                  "c_full")  # fmt: skip
    row("", "its start", "it holds the log", "restart", "c_full")
    row("", "its ready line", "it is in the ISR", "ready", "back")
    console.print(table)
    ratio = reassign / catchup if catchup else 0.0
    verdict = "PASS" if ratio >= TARGET else "FAIL"
    console.print(
        f"reassignment (request → copied) / catch-up (first → last byte), medians: {ratio:.2f} "
        f"(target ≥ {TARGET}): {verdict}"
    )
    sys.exit(0)


if __name__ == "__main__":
    main()
