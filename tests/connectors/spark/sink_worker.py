"""Helpers of the spark-sink worker tests: a standalone Connect worker process running
``spark-sink`` from a YAML file, records to produce, and the table as pyarrow reads it."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from tests.conftest import stop_process
from tests.connect.worker_helpers import standalone_worker
from tests.connectors.spark.sink_fixtures import table_rows

WorkerFactory = Callable[..., subprocess.Popen[bytes]]


def deploy(tmp_path: Path, topic: str, **settings: Any) -> Path:
    """A YAML file deploying ``spark-sink`` for ``topic`` into ``tmp_path/warehouse``."""
    config = {
        "topics": topic,
        "warehouse.path": str(tmp_path / "warehouse"),
        "table.name.format": "events",
        **{key.replace("_", "."): value for key, value in settings.items()},
    }
    lines = [f"    {key}: {json.dumps(str(value))}" for key, value in config.items()]
    path = tmp_path / "deploy.yaml"
    path.write_text(
        "- name: land-events\n  class: spark-sink\n  config:\n" + "\n".join(lines) + "\n"
    )
    return path


@pytest.fixture
def sink_worker(tmp_path: Path) -> Iterator[WorkerFactory]:
    """Starts ``sluice connect standalone`` processes (log in ``tmp_path/worker.log``); every
    one still running at the end is stopped (SIGTERM, then SIGKILL)."""
    started: list[subprocess.Popen[bytes]] = []

    def start(config: Path, bootstrap: str, **env: str) -> subprocess.Popen[bytes]:
        process = standalone_worker(
            config,
            bootstrap,
            tmp_path,
            "--rest",
            "",
            settings={
                "value.converter": "json",
                "value.converter.schemas.enable": "false",
                # a static member: a restarted worker takes the killed one's place at once
                # (instead of waiting for its session to time out)
                "consumer.group.instance.id": "spark-sink-test-worker",
            },
            env=env,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        stop_process(process)


def stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM and wait (the worker commits what it holds); returns the exit code."""
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


def kill(process: subprocess.Popen[bytes]) -> None:
    """``kill -9``."""
    process.send_signal(signal.SIGKILL)
    process.wait(10)


def produce(bootstrap: str, topic: str, ids: range, partitions: int, **extra: Any) -> None:
    """Values ``{"id": i, "name": "n<i>", **extra}`` for each id, id ``i`` in partition
    ``i % partitions``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in ids:
        value = json.dumps({"id": i, "name": f"n{i}", **extra}).encode()
        producer.produce(topic, value, str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0, "records not delivered"


def rows(table: Path) -> list[dict[str, Any]]:
    """The table's rows (none while it does not exist)."""
    if not any(table.rglob("part-*.parquet")):
        return []
    return table_rows(table)


def wait_until(condition: Callable[[], bool], what: str, log: Path, timeout: float = 120.0) -> None:
    """Poll ``condition`` until true; fail with the worker's log after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"
    raise AssertionError(f"timed out waiting for {what}\nworker log:\n{tail}")
