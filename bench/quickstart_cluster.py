"""The quickstart's pipeline end to end on three brokers (replication factor 3,
``min.insync.replicas=2``: examples/cluster) against on one broker (examples/quickstart),
measured in the same run.

Each setup is a ``sluice up`` of the example's own file, copied into a temporary folder with free
loopback ports. The generator appends ``--orders`` orders at up to ``--rate`` a second (by
default as fast as it can: much faster than the pipeline goes, so that the pipeline, not the
input, is measured; its real rate is printed too). The figure is **orders per second from input
to results**: ``--orders`` divided by the time from the first order's timestamp (written in
``orders.jsonl``) to the moment ``results.db`` (jdbc-sink) counts every order — and, separately,
the Parquet (spark-sink). On
the way, every order crosses ``file-source`` (exactly-once: a transaction per batch), the Streams
app (``exactly_once_v2``: join, repartition, windowed aggregate, changelog, a transaction per
commit) and the two sinks; on the cluster each write waits for two in-sync replicas of three.

    python bench/quickstart_cluster.py [--orders 100000] [--rate 100000] [--timeout 600]

Bounded in count (``--orders``) and time (``--timeout`` per setup); everything started is
stopped by PID (``sluice up`` gets SIGINT and stops its children in order, else SIGKILL).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SLUICE = str(Path(sys.executable).with_name("sluice"))
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def free_port(count: int = 1) -> int:
    """The first of ``count`` consecutive free loopback ports."""
    for _ in range(100):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            first = int(sock.getsockname()[1])
        try:
            for port in range(first, first + count):
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError(f"no {count} consecutive free ports")


@dataclass(frozen=True)
class Setup:
    name: str
    example: str
    home: str
    files: str


SETUPS = (
    Setup("1 broker (examples/quickstart)", "quickstart", ".sluice", ".sluice/quickstart"),
    Setup("3 brokers, RF 3 (examples/cluster)", "cluster", ".sluice/cluster", ".sluice/cluster"),
)


def prepare(setup: Setup, root: Path) -> Path:
    """Both examples copied under ``root`` (the cluster's names ``../quickstart/``), the setup's
    file given free ports; the folder to run ``sluice up`` in."""
    for example in ("quickstart", "cluster"):
        shutil.copytree(EXAMPLES / example, root / example)
    deployment = root / setup.example / "sluice.yaml"
    text = deployment.read_text()
    counted = set()
    if "brokers:" in text:  # a cluster's listen: and metrics: count up: three ports each
        counted = {
            re.findall(rf"^  {key}: 127\.0\.0\.1:(\d+)$", text, re.MULTILINE)[0]
            for key in ("listen", "metrics")
        }
    for port in sorted(set(re.findall(r"127\.0\.0\.1:(\d+)", text))):
        new = free_port(3 if port in counted else 1)
        text = text.replace(f"127.0.0.1:{port}", f"127.0.0.1:{new}")
    deployment.write_text(text)
    return root / setup.example


def counted_sqlite(files: Path) -> int:
    """The orders ``results.db`` counts (the latest total of each window, summed)."""
    if not (files / "results.db").exists():
        return 0
    try:
        with sqlite3.connect(files / "results.db") as db:
            row = db.execute("SELECT coalesce(sum(orders), 0) FROM revenue_by_tier").fetchone()
    except sqlite3.OperationalError:  # the table is not created yet
        return 0
    return int(row[0])


def counted_parquet(files: Path) -> int:
    """The orders the Parquet counts (the last update of each window, summed)."""
    table = files / "lake" / "revenue-by-tier"
    if not any(table.glob("**/*.parquet")):
        return 0
    try:
        rows = pq.read_table(table, columns=["tier", "window_start", "orders"]).to_pylist()
    except (OSError, pa.ArrowInvalid):  # a file being written: read again at the next poll
        return 0
    latest: dict[tuple[str, int], int] = {}
    for row in rows:
        key = (row["tier"], row["window_start"])
        latest[key] = max(latest.get(key, 0), row["orders"])
    return sum(latest.values())


def first_order_ms(files: Path) -> int | None:
    try:
        with (files / "orders.jsonl").open() as lines:
            first = lines.readline()
    except FileNotFoundError:
        return None
    return int(json.loads(first)["ts"]) if first.endswith("\n") else None


def last_order_ms(files: Path) -> int:
    with (files / "orders.jsonl").open("rb") as lines:
        lines.seek(-200, os.SEEK_END)
        return int(json.loads(lines.read().splitlines()[-1])["ts"])


def measure(setup: Setup, orders: int, rate: float, timeout: float) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="sluice-bench-qc-"))
    folder = prepare(setup, root)
    files = folder / setup.files
    environment = {**os.environ, "QUICKSTART_ORDERS": str(orders), "QUICKSTART_RATE": str(rate)}
    log = (root / "up.out").open("wb")
    up = subprocess.Popen(
        [SLUICE, "up", "-f", "sluice.yaml", "--home", setup.home],
        cwd=folder,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        started = time.monotonic()
        deadline = started + timeout
        done: dict[str, float] = {}
        first: int | None = None
        while len(done) < 2 and time.monotonic() < deadline:
            if up.poll() is not None:
                raise RuntimeError(f"sluice up exited {up.returncode}: see {root / 'up.out'}")
            first = first or first_order_ms(files)
            now = time.time()
            if "sqlite" not in done and counted_sqlite(files) >= orders:
                done["sqlite"] = now
            if "parquet" not in done and counted_parquet(files) >= orders:
                done["parquet"] = now
            time.sleep(0.2)
        if len(done) < 2 or first is None:
            raise RuntimeError(f"{setup.name}: not every order counted in {timeout:.0f} s")
        written = last_order_ms(files) / 1000 - first / 1000
        figures = {where: orders / (at - first / 1000) for where, at in done.items()}
        figures["written"] = orders / written if written > 0 else float("inf")
        figures["lag"] = max(done.values()) - last_order_ms(files) / 1000
        return figures
    finally:
        if up.poll() is None:
            up.send_signal(signal.SIGINT)
            try:
                up.wait(180)
            except subprocess.TimeoutExpired:
                up.kill()
                up.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=100_000.0, help="orders a second written")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per setup")
    options = parser.parse_args()
    print(f"{options.orders} orders written at {options.rate:.0f}/s; orders/s input → results")
    results = {}
    for setup in SETUPS:
        results[setup.name] = measure(setup, options.orders, options.rate, options.timeout)
        figures = results[setup.name]
        print(
            f"{setup.name:40} SQLite {figures['sqlite']:7.1f}/s   "
            f"Parquet {figures['parquet']:7.1f}/s   (written at {figures['written']:.0f}/s; "
            f"all counted {figures['lag']:.1f} s after the last was written)",
            flush=True,
        )
    single, cluster = (results[s.name] for s in SETUPS)
    print(
        f"{'3 brokers / 1 broker':40} SQLite {cluster['sqlite'] / single['sqlite']:7.2f}x   "
        f"Parquet {cluster['parquet'] / single['parquet']:7.2f}x"
    )


if __name__ == "__main__":
    main()
