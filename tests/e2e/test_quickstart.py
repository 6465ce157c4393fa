"""`sluice up` with the quickstart file: results in SQLite and Parquet equal what the input says;
children killed are restarted; Ctrl-C leaves no process; a second run resumes without duplicates.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pyarrow.parquet as pq
import pytest

from tests.conftest import free_port
from tests.platform.scrape import scrape_until

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart"
SLUICE = str(Path(sys.executable).with_name("sluice"))
TIERS = {1: "gold", 2: "silver", 3: "bronze", 4: "gold", 5: "silver", 6: "bronze"}
FILES = ".sluice/quickstart"
"""Where the pipeline's files are, in the folder of ``sluice up`` (examples/cluster: its own)."""


class Up:
    """One `sluice up` of the copied quickstart, in ``folder``, with its state and logs in
    ``home`` and the pipeline's files in ``files`` (both relative to ``folder``)."""

    def __init__(
        self,
        folder: Path,
        orders: int,
        rate: float = 40,
        *,
        home: str = ".sluice",
        files: str = FILES,
        options: tuple[str, ...] = (),
    ) -> None:
        self.folder = folder
        self.home = home
        self.files = files
        environment = {
            **os.environ,
            "QUICKSTART_ORDERS": str(orders),
            "QUICKSTART_RATE": str(rate),
        }
        self.output = (folder / "up.out").open("ab")
        self.process = subprocess.Popen(
            [SLUICE, "up", "-f", "sluice.yaml", "--home", home, *options],
            cwd=folder,
            env=environment,
            stdout=self.output,
            stderr=subprocess.STDOUT,
        )
        self.pids: set[int] = set()

    def state(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = json.loads((self.folder / self.home / "up.json").read_text())
        except (OSError, ValueError):
            return {"components": []}
        self.pids |= {c["pid"] for c in state["components"] if c["pid"]}
        return state

    def component(self, name: str) -> dict[str, Any]:
        [found] = [c for c in self.state()["components"] if c["name"] == name]
        return found

    def log(self) -> str:
        return (self.folder / "up.out").read_text(errors="replace")

    def component_logs(self, lines: int = 40) -> str:
        """The last ``lines`` of each component's log but the brokers' and ZooKeeper's: where
        a pipeline that stopped short says why."""
        parts = []
        for path in sorted((self.folder / self.home / "logs").glob("*.log")):
            if path.stem.startswith(("broker", "zookeeper")):
                continue
            tail = path.read_text(errors="replace").splitlines()[-lines:]
            parts.append(f"--- {path.name} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "\n".join(parts)

    def stop(self) -> int:
        self.state()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(150)
        finally:
            self.output.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The quickstart copied, with free ports."""
    for file in QUICKSTART.iterdir():
        if file.is_file():
            shutil.copy(file, tmp_path)
    text = (tmp_path / "sluice.yaml").read_text()
    for port in sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", text))):
        text = text.replace(f"127.0.0.1:{port}", f"127.0.0.1:{free_port()}")
    (tmp_path / "sluice.yaml").write_text(text)
    return tmp_path


@pytest.fixture
def runs(folder: Path) -> Iterator[list[Up]]:
    """The runs of a test; each stopped (and every child checked gone) at the end."""
    started: list[Up] = []
    yield started
    for run in started:
        run.stop()
        for pid in run.pids:
            if psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)


def expected(folder: Path, files: str = FILES) -> dict[tuple[str, int], tuple[float, int]]:
    """Revenue and orders per (tier, minute), computed from the orders file."""
    totals: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0])
    for line in (folder / files / "orders.jsonl").read_text().splitlines():
        order = json.loads(line)
        if "customer_id" not in order:  # a bad order: the app sends it to orders-dlq
            continue
        total = totals[(TIERS[order["customer_id"]], order["ts"] - order["ts"] % 60_000)]
        total[0] += order["amount"]
        total[1] += 1
    return {key: (round(revenue, 2), int(count)) for key, (revenue, count) in totals.items()}


def in_sqlite(folder: Path, files: str = FILES) -> dict[tuple[str, int], tuple[float, int]]:
    database = folder / files / "results.db"
    if not database.exists():
        return {}
    with sqlite3.connect(database) as db:
        try:
            rows = db.execute(
                "SELECT tier, window_start, revenue, orders FROM revenue_by_tier"
            ).fetchall()
        except sqlite3.OperationalError:  # not created yet
            return {}
    return {(tier, start): (revenue, orders) for tier, start, revenue, orders in rows}


def parquet_rows(folder: Path, files: str = FILES) -> list[dict[str, Any]]:
    table = folder / files / "lake/revenue-by-tier"
    if not any(table.glob("**/*.parquet")):
        return []
    rows: list[dict[str, Any]] = pq.read_table(table).to_pylist()
    return rows


def in_parquet(folder: Path, files: str = FILES) -> dict[tuple[str, int], tuple[float, int]]:
    """The last update of each window (the one with the most orders)."""
    latest: dict[tuple[str, int], tuple[float, int]] = {}
    for row in parquet_rows(folder, files):
        key = (row["tier"], row["window_start"])
        if key not in latest or row["orders"] > latest[key][1]:
            latest[key] = (row["revenue"], row["orders"])
    return latest


def wait_for_results(run: Up, orders: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    sqlite_orders = parquet_orders = 0
    while time.monotonic() < deadline:
        assert run.process.poll() is None, run.log()
        sqlite_orders = sum(count for _, count in in_sqlite(run.folder, run.files).values())
        parquet_orders = sum(count for _, count in in_parquet(run.folder, run.files).values())
        if sqlite_orders >= orders and parquet_orders >= orders:
            return
        time.sleep(1)
    raise AssertionError(
        f"no complete results in {timeout} s: {sqlite_orders} of {orders} orders in SQLite, "
        f"{parquet_orders} in the Parquet\n{run.log()}\n{run.component_logs()}"
    )


def wait_restarted(run: Up, name: str, old_pid: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        child = run.component(name)
        if child["state"] == "running" and child["pid"] not in (None, old_pid):
            assert child["restarts"] >= 1
            return
        time.sleep(0.5)
    raise AssertionError(f"{name} was not restarted:\n{run.log()}")


def assert_matches_input(folder: Path, files: str = FILES) -> None:
    want = expected(folder, files)
    for found in (in_sqlite(folder, files), in_parquet(folder, files)):
        assert found.keys() == want.keys()
        for key, (revenue, count) in want.items():
            assert found[key][1] == count, key
            assert found[key][0] == pytest.approx(revenue), key


def topic_records(bootstrap: str, topic: str) -> int:
    """The records of ``topic`` (one partition) a read_committed consumer reads: under
    exactly-once, transaction markers and aborted records take offsets too."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "quickstart-test",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        partition = TopicPartition(topic, 0, OFFSET_BEGINNING)
        low, end = consumer.get_watermark_offsets(partition, 10)  # end: the last stable offset
        consumer.assign([partition])
        count = 0
        deadline = time.monotonic() + 60
        while end > low and consumer.position([partition])[0].offset < end:
            assert time.monotonic() < deadline, f"{topic} not read to {end} in 60 s"
            count += sum(1 for m in consumer.consume(1000, 0.5) if m.error() is None)
    finally:
        consumer.close()
    return count


def assert_metrics(folder: Path, orders: int) -> None:
    """Every part's /metrics counted the orders (the ports are those of the copied file)."""
    text = (folder / "sluice.yaml").read_text()
    ports = re.findall(r"metrics: 127\.0\.0\.1:(\d+)", text)
    broker, connect, streams = (int(port) for port in ports)  # in the file's order
    messages = "kafka_server_broker_topic_metrics_messages_in_total"
    scrape_until(broker, lambda s: s.get(messages, topic="orders") == orders, what="orders in")
    written = "kafka_connect_source_task_metrics_source_record_write_total"
    scrape_until(
        connect, lambda s: s.total(written, connector="orders-file") == orders, what="polled"
    )
    processed = "kafka_streams_stream_thread_metrics_process_total"
    scrape_until(streams, lambda s: s.total(processed) >= orders, what="orders processed")


def test_quickstart_runs_heals_stops_and_resumes(folder: Path, runs: list[Up]) -> None:
    first = Up(folder, orders=60)
    runs.append(first)
    wait_for_results(first, 60)
    assert_matches_input(folder)
    assert_metrics(folder, orders=60)

    # a Streams app and the Connect worker killed: noticed and restarted
    for name in ("revenue-0", "connect"):
        pid = first.component(name)["pid"]
        os.kill(pid, signal.SIGKILL)
        wait_restarted(first, name, pid)
    assert "restarting in" in first.log()

    assert first.stop() == 0, first.log()
    left = [pid for pid in first.pids if psutil.pid_exists(pid)]
    assert left == [], f"processes left: {left}"
    state = json.loads((folder / ".sluice/up.json").read_text())
    assert state["pid"] is None
    # everything stopped, but the generator, which completed its 60 orders
    states = {c["name"]: c["state"] for c in state["components"]}
    assert states.pop("generator-0") == "completed", states
    assert set(states.values()) == {"stopped"}, states

    # a second run resumes: the generator goes on to 90 orders, nothing is counted twice
    second = Up(folder, orders=90)
    runs.append(second)
    wait_for_results(second, 90)
    time.sleep(3)  # anything doubled would arrive now
    assert_matches_input(folder)
    bootstrap = second.state()["bootstrap"]
    assert len(parquet_rows(folder)) == topic_records(bootstrap, "revenue-by-tier")

    summary = subprocess.run(
        [sys.executable, "summary.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert summary.returncode == 0, summary.stderr
    for tier in ("gold", "silver", "bronze"):
        assert tier in summary.stdout
    assert second.stop() == 0, second.log()


def test_the_quickstart_runs_secured(folder: Path, runs: list[Up]) -> None:
    """`sluice up --secure`: the whole quickstart on SASL_SSL with per-component users and
    least-privilege ACLs gives the same results; the admin reads it, an anonymous client
    cannot, and `sluice status` reads the secured broker and REST API."""
    run = Up(folder, orders=30, options=("--secure",))
    runs.append(run)
    wait_for_results(run, 30)
    assert_matches_input(folder)
    secure = folder / ".sluice" / "secure"
    bootstrap = run.state()["bootstrap"]
    admin = [
        "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=PLAIN",
        "-X", "sasl.username=admin", "-X", f"sasl.password={(secure / 'admin.pass').read_text()}",
        "-X", f"ssl.ca.location={secure / 'ca.pem'}",
    ]  # fmt: skip
    status = subprocess.run(
        [SLUICE, "status", *admin], cwd=folder, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert status.returncode == 0, status.stdout + status.stderr
    assert "orders-file" in status.stdout and "RUNNING" in status.stdout, status.stdout
    anonymous = subprocess.run(
        [SLUICE, "topics", "list", "-b", bootstrap, "--timeout", "5"], cwd=folder,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert anonymous.returncode != 0 and "orders" not in anonymous.stdout, anonymous
    assert run.stop() == 0, run.log()


def test_a_bad_file_starts_nothing(folder: Path) -> None:
    text = (folder / "sluice.yaml").read_text()
    bad = text.replace(
        "    partitions: 1\n  - name: customers", "    partitons: 1\n  - name: customers"
    )
    bad = bad.replace("mode: timestamp+incrementing", "mode: sometimes")
    (folder / "sluice.yaml").write_text(bad)
    result = subprocess.run(
        [SLUICE, "up", "-f", "sluice.yaml"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    line = next(n for n, text in enumerate(bad.splitlines(), 1) if "partitons" in text)
    assert f"sluice.yaml:{line}: topics[0].partitons: unknown key (did you mean partitions?)" in (
        result.stderr
    )
    mode_line = next(n for n, text in enumerate(bad.splitlines(), 1) if "sometimes" in text)
    assert f"sluice.yaml:{mode_line}: mode:" in result.stderr
    assert not (folder / ".sluice").exists()
