"""examples/spark_pipeline: the README's steps against a real broker process, a standalone Connect
worker running ``lake.yaml`` (spark-sink) and the test session's Spark (one SparkSession).

The expected figures are worked out from the JSON-lines files in plain Python: windows of
10 minutes per product, written once the watermark (the latest ``ts`` read minus 5 minutes)
passes their end; spend per customer and day over every purchase.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

from tests.conftest import BrokerProcess
from tests.connectors.spark import conftest as spark_conftest
from tests.connectors.spark.sink_fixtures import table_rows

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(600)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline"
SLUICE = str(Path(sys.executable).with_name("sluice"))
WINDOW = dt.timedelta(minutes=10)
WATERMARK = dt.timedelta(minutes=5)
WAIT = 120.0  # seconds: the bound on the wait for the sink's table


def load(name: str) -> ModuleType:
    """``examples/spark_pipeline/<name>`` imported from its file (the example is no package)."""
    spec = importlib.util.spec_from_file_location(f"spark_pipeline_{name[:-3]}", EXAMPLE / name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


spark = spark_conftest.spark  # the session-wide local SparkSession fixture, for this module
job = load("job.py")
query = load("query.py")


def purchases(*names: str) -> list[dict[str, Any]]:
    """The purchases of the example's JSON-lines files, ``ts`` parsed, ``amount`` a Decimal."""
    out = []
    for name in names:
        for line in (EXAMPLE / name).read_text().splitlines():
            record = json.loads(line, parse_float=Decimal)
            record["ts"] = dt.datetime.fromisoformat(record["ts"])
            out.append(record)
    return out


def closed_windows(events: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, Decimal]]:
    """(window start ``YYYY-MM-DD HH:MM:SS`` UTC, product) → (purchases, revenue), for the
    windows whose end the watermark has passed."""
    watermark = max(e["ts"] for e in events) - WATERMARK
    sums: dict[tuple[str, str], tuple[int, Decimal]] = defaultdict(lambda: (0, Decimal(0)))
    for event in events:
        ts = event["ts"]
        start = ts - dt.timedelta(minutes=ts.minute % 10, seconds=ts.second)
        if start + WINDOW <= watermark:
            key = (start.strftime("%Y-%m-%d %H:%M:%S"), event["product"])
            count, revenue = sums[key]
            sums[key] = (count + 1, revenue + event["amount"])
    return dict(sums)


def spend(events: list[dict[str, Any]]) -> list[tuple[str, str, int, float, str]]:
    """``top_customers.sql`` worked out by hand: (date, user, purchases, spent, first ts)."""
    by_user: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_user[event["ts"].strftime("%Y-%m-%d"), event["user"]].append(event)
    rows = [
        (
            date,
            user,
            len(es),
            float(sum(e["amount"] for e in es)),
            min(e["ts"] for e in es).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        for (date, user), es in by_user.items()
    ]
    return sorted(rows, key=lambda r: (-r[3], r[1]))


def sluice(*args: str, cwd: Path) -> None:
    """A ``sluice`` command of the README, which must succeed."""
    done = subprocess.run(
        [SLUICE, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"sluice {' '.join(args)} failed:\n{done.stdout}{done.stderr}"


@pytest.fixture
def worker(broker: BrokerProcess, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``sluice connect standalone lake.yaml`` in ``tmp_path`` (so ``lake/`` is made there)."""
    command = [SLUICE, "connect", "standalone", str(EXAMPLE / "lake.yaml")]
    command += ["-b", broker.bootstrap, "--rest", "", "--offsets", str(tmp_path / "offsets")]
    command += ["-X", "offset.flush.interval.ms=1000"]
    with open(tmp_path / "worker.log", "wb") as log:
        process = subprocess.Popen(
            command, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ)
        )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def _windows(spark: SparkSession, out: Path) -> dict[tuple[str, str], tuple[int, Decimal]]:
    df = spark.read.parquet(str(out / "revenue"))
    rows = df.selectExpr("CAST(window_start AS STRING) AS start", "*").collect()
    found = [(r["start"], r["product"]) for r in rows]
    assert len(found) == len(set(found)), f"a window was written twice: {sorted(found)}"
    return {(r["start"], r["product"]): (r["purchases"], r["revenue"]) for r in rows}


def _wait_for_table(lake: Path, count: int, worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + WAIT
    held = 0
    while time.monotonic() < deadline:
        assert worker.poll() is None, f"the worker exited:\n{log.read_text()[-3000:]}"
        table = lake / "purchases"
        if table.is_dir() and any(table.rglob("part-*.parquet")):
            held = len(table_rows(table, sort="ts"))
            if held >= count:
                return
        time.sleep(0.5)
    raise AssertionError(
        f"the table holds {held} of {count} purchases after {WAIT:.0f} s:\n"
        f"{log.read_text()[-3000:]}"
    )


def test_pipeline_windows_and_sql_match_the_input(
    spark: SparkSession,
    broker: BrokerProcess,
    worker: subprocess.Popen[bytes],
    tmp_path: Path,
) -> None:
    boot = broker.bootstrap
    sluice("topics", "create", "purchases", "-p", "3", "-b", boot, cwd=tmp_path)
    source = str(EXAMPLE / "purchases.jsonl")
    sluice("produce", "purchases", "--file", source, "-b", boot, cwd=tmp_path)
    out = tmp_path / "spark-out"

    # First run: the windows the watermark closed (10:00, 10:10, 10:20); 10:30 stays open.
    job.run(spark, boot, out)
    first = purchases("purchases.jsonl")
    assert _windows(spark, out) == closed_windows(first)

    # More purchases, second run from the checkpoint: 10:30 is written, 10:40 stays open.
    more = str(EXAMPLE / "more-purchases.jsonl")
    sluice("produce", "purchases", "--file", more, "-b", boot, cwd=tmp_path)
    job.run(spark, boot, out)
    every = purchases("purchases.jsonl", "more-purchases.jsonl")
    expected = closed_windows(every)
    assert {start for start, _ in expected} == {f"2024-05-01 10:{m}0:00" for m in range(4)}
    assert _windows(spark, out) == expected

    # The spark-sink table holds every purchase; the SQL query over it.
    lake = tmp_path / "lake"
    _wait_for_table(lake, len(every), worker, tmp_path / "worker.log")
    result = query.top_customers(spark, lake).collect()
    got = [
        (str(r["date"]), r["user"], r["purchases"], r["spent"], r["first_purchase"]) for r in result
    ]
    assert got == spend(every), f"the SQL result differs from the input:\n{got}"
