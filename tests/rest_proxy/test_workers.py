"""``sluice rest-proxy start --workers N``: several processes serve one address, each a whole
proxy, and all of them stop with the command."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import BrokerProcess, create_topic, stop_process
from tests.rest_proxy.fixtures import SLUICE, Proxy, cluster_id


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.add(int(entry.name))
    return found


def _stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped by a signal (state T in /proc)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def _alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if Path(f"/proc/{pid}").exists()}


def test_a_worker_process_serves_while_the_first_is_stopped(
    broker: BrokerProcess, proxy_factory: Callable[..., Proxy]
) -> None:
    proxy = proxy_factory(broker.bootstrap, "--workers", "2")
    topic = create_topic(broker.bootstrap)
    path = f"/v3/clusters/{cluster_id(proxy)}/topics/{topic}/records"
    workers = _children(proxy.proc.pid)
    assert workers, "no worker process was started"
    # with the first process frozen, only another worker can accept a new connection
    os.kill(proxy.proc.pid, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 10
        while not _stopped(proxy.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)  # until then it might still accept the connection
        assert _stopped(proxy.proc.pid)
        answer = proxy.post(path, {"value": {"type": "STRING", "data": "from a worker"}})
    finally:
        os.kill(proxy.proc.pid, signal.SIGCONT)
    assert answer.status == 200, answer.body
    result = answer.json()
    assert (result["error_code"], result["offset"]) == (200, 0), result
    assert proxy.post(path, {"value": {"type": "STRING", "data": "x"}}).json()["offset"] == 1

    stop_process(proxy.proc)
    assert proxy.proc.returncode == 0, proxy.log_text()
    deadline = time.monotonic() + 30
    while _alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(workers), f"workers {_alive(workers)} outlived the command"


def test_workers_must_be_positive() -> None:
    done = subprocess.run(
        [SLUICE, "rest-proxy", "start", "-b", "127.0.0.1:1", "--workers", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0 and "--workers" in done.stderr, done.stderr
