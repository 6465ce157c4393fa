"""Distributed mode with real processes: two ``sluice connect start`` workers of one group, a
file-source with 4 tasks deployed by ``sluice connect apply``; one worker is killed (``kill -9``)
and its tasks run on the other within the session timeout, as the REST API and ``sluice connect
status`` say; every line of the files reaches the topic (at-least-once: nothing lost)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BrokerProcess, free_port
from tests.connect.cluster_fixtures import read_topic
from tests.connect.rest_fixtures import wait_for

SLUICE = Path(sys.executable).with_name("sluice")
SESSION_TIMEOUT_MS = 6000


class Workers:
    """``sluice connect start`` processes of one fresh group; all stopped at teardown."""

    def __init__(self, bootstrap: str, tmp_path: Path) -> None:
        self.bootstrap = bootstrap
        self.tmp_path = tmp_path
        suffix = uuid.uuid4().hex[:8]
        self.group = f"connect-{suffix}"
        self.topics = [
            f"config.storage.topic=configs-{suffix}",
            f"offset.storage.topic=offsets-{suffix}",
            f"status.storage.topic=status-{suffix}",
        ]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> str:
        """Start a worker; returns its REST API's URL once it answers."""
        port = free_port()
        worker_id = f"127.0.0.1:{port}"
        settings = [
            *self.topics,
            "offset.storage.partitions=8",
            f"session.timeout.ms={SESSION_TIMEOUT_MS}",
            "heartbeat.interval.ms=1000",
            "offset.flush.interval.ms=200",
            "value.converter=string",
            "key.converter=string",
        ]
        command = [str(SLUICE), "connect", "start", "--group", self.group, "-b", self.bootstrap]
        command += ["--rest", worker_id]
        for setting in settings:
            command += ["-X", setting]
        with open(self.tmp_path / f"worker-{port}.log", "ab") as log:
            self.processes[worker_id] = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ}
            )
        url = f"http://{worker_id}"
        wait_for(lambda: _get(url, "/") is not None, f"worker {worker_id} to serve")
        return url

    def kill(self, url: str) -> None:
        process = self.processes[url.removeprefix("http://")]
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    def logs(self) -> str:
        return "\n".join(p.read_text()[-2000:] for p in self.tmp_path.glob("worker-*.log"))

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def _get(url: str, path: str) -> Any:
    try:
        with urllib.request.urlopen(f"{url}{path}", timeout=10) as response:
            return json.loads(response.read())
    except OSError:
        return None


@pytest.fixture
def workers(shared_broker: BrokerProcess, tmp_path: Path) -> Iterator[Workers]:
    group = Workers(shared_broker.bootstrap, tmp_path)
    try:
        yield group
    finally:
        group.stop()


def _running_on(url: str, name: str) -> dict[str, Any] | None:
    status = _get(url, f"/connectors/{name}/status")
    if not status or len(status["tasks"]) != 4:
        return None
    if any(task["state"] != "RUNNING" for task in status["tasks"]):
        return None
    return status if status["connector"]["state"] == "RUNNING" else None


def test_tasks_move_to_the_surviving_worker_after_kill_9(
    workers: Workers, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    first, second = workers.start(), workers.start()
    topic = f"lines-{uuid.uuid4().hex[:8]}"
    files = [tmp_path / f"input-{i}.log" for i in range(4)]
    for index, path in enumerate(files):
        path.write_text("".join(f"{index}-{n}\n" for n in range(50)))
    deployment = tmp_path / "tail.yaml"
    deployment.write_text(
        f"""\
name: tail
class: file-source
tasks_max: 4
config:
  files: {tmp_path}/input-*.log
  topic: {topic}
  poll.interval.ms: 100
"""
    )
    applied = subprocess.run(
        [str(SLUICE), "connect", "apply", str(deployment), "--url", second],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr

    status = wait_for(lambda: _running_on(first, "tail"), "4 running tasks", timeout=60)
    owners = {task["worker_id"] for task in status["tasks"]}
    assert owners == {first.removeprefix("http://"), second.removeprefix("http://")}
    wait_for(lambda: len(set(read_topic(shared_broker.bootstrap, topic))) == 200, "the first lines")

    workers.kill(second)
    survivor = first.removeprefix("http://")

    def moved() -> dict[str, Any] | None:
        body = _running_on(first, "tail")
        ok = body and {t["worker_id"] for t in body["tasks"]} == {survivor}
        return body if ok and body["connector"]["worker_id"] == survivor else None

    # the session timeout, then a rebalance and the restart of the tasks: bounded generously
    wait_for(moved, "every task on the surviving worker", timeout=SESSION_TIMEOUT_MS / 1000 + 30)
    printed = subprocess.run(
        [str(SLUICE), "connect", "status", "tail", "--url", first],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout.count(survivor) == 5  # the connector and its 4 tasks
    assert "RUNNING" in printed.stdout

    for index, path in enumerate(files):
        with open(path, "a") as handle:
            handle.write("".join(f"{index}-{n}\n" for n in range(50, 80)))
    expected = {f"{index}-{n}" for index in range(4) for n in range(80)}
    try:
        wait_for(
            lambda: expected <= set(read_topic(shared_broker.bootstrap, topic)),
            "every line, the new ones included",
            timeout=60,
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\nworker logs:\n{workers.logs()}") from None
    time.sleep(0.5)
    assert set(read_topic(shared_broker.bootstrap, topic)) == expected  # nothing else
