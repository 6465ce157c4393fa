"""bench/databases.py's shared pieces: settings, the run context, a Connect worker process,
SQL and waiting helpers, the spread of a sample."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _harness import SLUICE, cpu_seconds, percentile
from _postgres import PostgresServer
from _streams_runs import stop_group, tail, tree_cpu

from connect import HYPOTHESIS_CACHE, _attach_profiler

LAG_TARGET_MS = 200.0


LAG_RATE_TARGET = 5_000.0


SINK_TARGET = 0.50


WARMUP_S = 1.0


SINK_BATCH = 3000


PHASES = ("cdc-lag", "cdc-bulk", "sink")


BULK_TXN_ROWS = 10_000


@dataclass
class Context:
    bootstrap: str
    broker_pid: int
    pg: PostgresServer
    workdir: Path
    timeout: float
    log_level: str
    profile: Path | None
    cdc_schemas: bool

    @property
    def dsn(self) -> str:
        return self.pg.dsn("bench")

    @property
    def url(self) -> str:
        return self.pg.url("bench")

    def cpu(self, worker: Worker | None = None) -> tuple[float, float, float]:
        """CPU seconds so far: the worker's (tree), the broker's, PostgreSQL's (tree)."""
        return (
            tree_cpu(worker.proc.pid) if worker else 0.0,
            cpu_seconds(self.broker_pid),
            tree_cpu(self.pg.pid),
        )


def _sql(dsn: str, *statements: str) -> list[Any]:
    """Run ``statements`` in autocommit; the first row of the last one (if any)."""
    import psycopg2

    connection = psycopg2.connect(dsn)
    try:
        connection.autocommit = True
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
            return list(cursor.fetchone() or ()) if cursor.description else []
    finally:
        connection.close()


# -- a worker ------------------------------------------------------------------------------------
class Worker:
    """``sluice connect standalone`` running one connector, in its own session (process group)."""

    def __init__(
        self, ctx: Context, name: str, connector: dict[str, Any], settings: dict[str, str]
    ) -> None:
        yaml_path = ctx.workdir / f"{name}.yaml"
        yaml_path.write_text(json.dumps([connector], indent=2))  # JSON is YAML
        self.log_path = ctx.workdir / f"{name}.log"
        offsets = ctx.workdir / f"{name}.offsets"
        offsets.unlink(missing_ok=True)
        command = [
            str(SLUICE),
            "connect",
            "standalone",
            str(yaml_path),
            "-b",
            ctx.bootstrap,
            "--offsets",
            str(offsets),
            "--rest",
            "",
            "--log-level",
            ctx.log_level,
        ]
        for key, value in {"offset.flush.interval.ms": "1000", **settings}.items():
            command += ["-X", f"{key}={value}"]
        with self.log_path.open("wb") as log:
            self.began = time.monotonic()
            self.proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=ctx.workdir,
                start_new_session=True,
                env={**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(HYPOTHESIS_CACHE)},
            )
        self.profile = ctx.profile / f"{name}.txt" if ctx.profile else None
        self._spy: subprocess.Popen[bytes] | None = None
        self._checked = 0.0

    def attach_profiler(self) -> None:
        if self.profile is not None and self._spy is None:
            self._spy = _attach_profiler(self.proc.pid, self.profile)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def failed(self) -> bool:
        """Whether the worker logged a task's failure (it keeps running without the task)."""
        now = time.monotonic()
        if now - self._checked < 1.0:
            return False
        self._checked = now
        return "failed:" in tail(self.log_path, 20_000)

    def log_tail(self, chars: int = 1200) -> str:
        return tail(self.log_path, chars)

    def stop(self) -> None:
        stop_group(self.proc)
        if self._spy is not None:  # it writes its file once the worker is gone
            try:
                self._spy.wait(30)
            except subprocess.TimeoutExpired:
                stop_group(self._spy)


def _cdc_settings(ctx: Context) -> dict[str, str]:
    schemas = "true" if ctx.cdc_schemas else "false"
    return {
        "key.converter": "json",
        "value.converter": "json",
        "key.converter.schemas.enable": schemas,
        "value.converter.schemas.enable": schemas,
    }


def _cdc_connector(ctx: Context, name: str, extra: dict[str, str]) -> dict[str, Any]:
    pg = ctx.pg
    return {
        "name": name,
        "class": "postgres-cdc",
        "config": {
            "database.hostname": "127.0.0.1",
            "database.port": str(pg.port),
            "database.user": "sluice",
            "database.password": "sluice",
            "database.dbname": "bench",
            "snapshot.mode": "never",
            **extra,
        },
    }


def _wait(what: str, check: Callable[[], bool], worker: Worker | None, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        if worker is not None and not worker.alive():
            raise RuntimeError(f"the worker exited waiting for {what}: {worker.log_tail()}")
        time.sleep(0.05)
    log = f": {worker.log_tail()}" if worker else ""
    raise TimeoutError(f"no {what} within {timeout:.0f}s{log}")


def _slot_active(dsn: str, slot: str) -> Callable[[], bool]:
    def check() -> bool:
        row = _sql(dsn, f"SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}'")
        return bool(row and row[0])

    return check


# -- 1. CDC lag at a steady load -----------------------------------------------------------------
@dataclass
class Spread:
    """Percentiles of one set of durations, ms."""

    count: int = 0
    p50: float = float("nan")
    p99: float = float("nan")
    p999: float = float("nan")
    max: float = float("nan")

    @classmethod
    def of(cls, values_ms: list[float]) -> Spread:
        values = sorted(values_ms)
        if not values:
            return cls()
        return cls(
            len(values),
            percentile(values, 50),
            percentile(values, 99),
            percentile(values, 99.9),
            values[-1],
        )


Sample = tuple[float, int, tuple[float, float, float]]  # monotonic time, progress, cpu


def _watch(
    ctx: Context, worker: Worker, progress: Callable[[], int], expected: int, poll_s: float
) -> tuple[int, Sample | None, tuple[float, float, float], float]:
    """Poll ``progress()`` until ``expected`` (or the worker exits, or ``ctx.timeout``): the last
    count, the first sample with progress, the CPU and the time at the end."""
    deadline = worker.began + ctx.timeout
    first: Sample | None = None
    seen = 0
    while time.monotonic() < deadline:
        seen = progress()
        now = time.monotonic()
        if now - worker.began > 0.5:
            worker.attach_profiler()
        if first is None and seen > 0:
            first = (now, seen, ctx.cpu(worker))
        if seen >= expected or not worker.alive() or worker.failed():
            break
        time.sleep(poll_s)
    return seen, first, ctx.cpu(worker), time.monotonic()


def _timed(
    result: Any,  # a BulkResult or a SinkResult
    worker: Worker,
    first: Sample | None,
    end_cpu: tuple[float, float, float],
    end: float,
    expected: int,
    done: int,
) -> None:
    """Fill ``result``'s timings from the first sample to ``end`` (``done`` of ``expected``)."""
    if first is None:
        result.error += f" nothing arrived; log: {worker.log_tail(600)}"
        return
    t0, count0, cpu0 = first
    result.to_first = t0 - worker.began
    result.seconds = end - t0
    done = min(expected, done)
    result.rate = (done - count0) / result.seconds if result.seconds > 0 else 0.0
    result.rate_total = done / (end - worker.began)
    result.cpu_worker, result.cpu_broker, result.cpu_pg = (
        b - a for a, b in zip(cpu0, end_cpu, strict=True)
    )
