"""A Sluice app restoring a count store from its changelog, and a bare consumer reading it."""

from __future__ import annotations

import contextlib
import json
import select
import subprocess
import sys
import time
from dataclasses import dataclass

from _clients import Workload, consume_run
from _harness import in_child
from _streams_runs import BENCH, Context, stop_group, tail, tree_cpu

RESTORE_APP = "bench-restore"
RESTORE_STORES = ("rocksdb", "memory")


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
        result.cpu = tree_cpu(proc.pid)
        # The app closes itself (commit, LeaveGroup): the next run joins the same group.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(60)
    finally:
        stop_group(proc)
    try:
        report = json.loads(line)
        result.seconds = float(report["restore_seconds"])
        result.phase_seconds = float(report["restore_phase_seconds"])
    except (ValueError, KeyError):
        result.error = f"no restore report; log: {tail(log_path)}"
    return result


def restore_reference(bootstrap: str, topic: str, keys: int) -> float:
    """Seconds a bare confluent-kafka consumer takes to read ``keys`` records of ``topic``."""
    run = in_child(consume_run, Workload(bootstrap, topic, 8, keys, 120.0), timeout=300)
    return keys / run.records_per_second if run.records_per_second else float("nan")
