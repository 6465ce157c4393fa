"""``sluice connect apply`` and ``status`` against a standalone worker's REST API (real
processes, real broker): create, update state, refuse a bad file whole, prune."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import BrokerProcess, create_topic, free_port

SLUICE = str(Path(sys.executable).with_name("sluice"))


def _sluice(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SLUICE, *args], capture_output=True, text=True, timeout=60, check=False)


def _wait_up(url: str, worker: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert worker.poll() is None, "the worker exited"
        try:
            with urllib.request.urlopen(f"{url}/", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("the REST API did not come up")


def _state(url: str, name: str) -> str:
    with urllib.request.urlopen(f"{url}/connectors/{name}/status", timeout=10) as response:
        return str(json.loads(response.read())["connector"]["state"])


def _deployment(path: Path, topic: str, state: str, *, with_file: bool = True) -> None:
    line = f"    file: {path.parent / 'out.txt'}\n" if with_file else ""
    path.write_text(
        f"name: copy\nclass: file-sink\nstate: {state}\nconfig:\n    topics: {topic}\n{line}"
    )


def test_apply_reconciles_and_refuses_a_bad_file_whole(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    empty = tmp_path / "none"
    empty.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [
                *(SLUICE, "connect", "standalone", str(empty), "-b", shared_broker.bootstrap),
                *("--offsets", str(tmp_path / "offsets.json"), "--rest", f"127.0.0.1:{port}"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_up(url, worker)
        deployment = tmp_path / "deploy" / "copy.yaml"
        deployment.parent.mkdir()
        _deployment(deployment, topic, "running")
        result = _sluice("connect", "apply", str(deployment.parent), "--url", url)
        assert result.returncode == 0, result.stderr
        assert "copy: created (running)" in result.stderr
        assert _state(url, "copy") == "RUNNING"
        status = _sluice("connect", "status", "--url", url)
        assert status.returncode == 0, status.stderr
        assert "copy" in status.stdout and "RUNNING" in status.stdout

        _deployment(deployment, topic, "paused")
        result = _sluice("connect", "apply", str(deployment), "--url", url)
        assert result.returncode == 0, result.stderr
        assert "copy: unchanged (paused)" in result.stderr
        assert _state(url, "copy") == "PAUSED"

        _deployment(deployment, topic, "running", with_file=False)  # file-sink needs `file`
        result = _sluice("connect", "apply", str(deployment), "--url", url)
        assert result.returncode == 2
        assert f"{deployment}:1: file:" in result.stderr, result.stderr
        assert _state(url, "copy") == "PAUSED", "a bad file changed something"

        (tmp_path / "deploy" / "copy.yaml").unlink()
        result = _sluice("connect", "apply", str(deployment.parent), "--url", url, "--prune")
        assert result.returncode == 0, result.stderr
        assert "copy: deleted" in result.stderr
        with urllib.request.urlopen(f"{url}/connectors", timeout=10) as response:
            assert json.loads(response.read()) == []
    finally:
        worker.terminate()
        worker.wait(30)
