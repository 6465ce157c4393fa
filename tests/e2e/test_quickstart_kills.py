"""The quickstart killed while orders flow: the Streams app, the Connect worker and the broker,
each SIGKILLed repeatedly mid-flow, and still every order counted exactly once — in results.db,
in the Parquet and in the topics (the Streams app runs ``exactly_once_v2``, ``file-source`` runs
exactly-once on a worker with ``exactly.once.source.support=enabled``)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from tests.e2e.test_quickstart import (
    FILES,
    Up,
    assert_matches_input,
    folder,  # noqa: F401 - the fixture, used by name
    parquet_rows,
    runs,  # noqa: F401 - the fixture, used by name
    topic_records,
    wait_for_results,
)

ORDERS = 1000
RATE = 25  # orders a second: 40 s of flow, time for a Connect worker to rejoin and be killed again
KILLS = ("revenue-0", "connect", "broker") * 2 + ("revenue-0",)
SPACING_S = 2.0  # at least, between two kills
SOURCE_TASK_STARTED = "task orders-file-0: exactly-once"  # the worker's log line


def orders_written(where: Path, files: str = FILES) -> int:
    """The orders the generator appended so far."""
    try:
        with (where / files / "orders.jsonl").open("rb") as lines:
            return sum(1 for _ in lines)
    except FileNotFoundError:
        return 0


def source_task_starts(where: Path) -> int:
    """How many times ``orders-file``'s task started (all workers log to one file)."""
    try:
        text = (where / ".sluice/logs/connect.log").read_text(errors="replace")
    except FileNotFoundError:
        return 0
    return text.count(SOURCE_TASK_STARTED)


def wait_until(condition: Callable[[], object], what: str, run: Up, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert run.process.poll() is None, run.log()
        assert time.monotonic() < deadline, f"no {what} in {timeout} s:\n{run.log()}"
        time.sleep(0.2)


def running_again(run: Up, name: str, old_pid: int | None) -> bool:
    """Child ``name`` runs as a new process (killed 3 times within a minute, it runs in the
    supervisor's ``crash-loop`` state: still restarted, with a longer back-off)."""
    child = run.component(name)
    return child["state"] in ("running", "crash-loop") and child["pid"] not in (None, old_pid)


def test_kills_mid_flow_never_lose_or_double_an_order(
    folder: Path,  # noqa: F811 - the fixture imported above
    runs: list[Up],  # noqa: F811
) -> None:
    run = Up(folder, orders=ORDERS, rate=RATE)
    runs.append(run)
    wait_until(lambda: orders_written(folder) >= 2 * RATE, "orders flowing", run)
    killed: dict[str, int] = {}
    starts = 0  # of the source task, when the worker was last killed
    for name in KILLS:
        # each kill hits a process that works: restarted, and for the worker, running its task
        wait_until(partial(running_again, run, name, killed.get(name)), f"{name} running", run)
        if name == "connect":
            wait_until(lambda seen=starts: source_task_starts(folder) > seen, "its task", run)
            starts = source_task_starts(folder)
        killed[name] = run.component(name)["pid"]
        os.kill(killed[name], signal.SIGKILL)
        time.sleep(SPACING_S)
    written = orders_written(folder)
    assert written < ORDERS, f"the generator finished ({written} orders) before the last kill"

    wait_for_results(run, ORDERS)
    time.sleep(3)  # anything doubled would arrive now
    assert orders_written(folder) == ORDERS
    assert_matches_input(folder)
    bootstrap = run.state()["bootstrap"]
    assert topic_records(bootstrap, "orders") == ORDERS
    assert len(parquet_rows(folder)) == topic_records(bootstrap, "revenue-by-tier")
    assert run.stop() == 0, run.log()
