"""``sluice connect standalone``: the worker id is the REST address (``--rest``), as in Kafka
Connect, and ``sluice connect status`` prints it under the CLI's table headers."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.conftest import free_port, stop_process
from tests.connect.worker_helpers import standalone_worker, wait, worker_log

if TYPE_CHECKING:
    from tests.cli.conftest import Sluice


def _status(url: str, name: str) -> Any:
    try:
        with urllib.request.urlopen(f"{url}/connectors/{name}/status", timeout=2) as answer:
            body = json.load(answer)
    except OSError:
        return None
    tasks = body["tasks"]
    running = body["connector"]["state"] == "RUNNING" and tasks and tasks[0]["state"] == "RUNNING"
    return body if running else None


def test_the_worker_id_follows_rest(
    sluice: Sluice, topic_factory: Callable[..., str], bootstrap: str, tmp_path: Path
) -> None:
    topic = topic_factory(1)
    (tmp_path / "input.log").write_text("one\n")
    config = tmp_path / "tail.yaml"
    config.write_text(
        f"- name: tail\n  class: file-source\n  config:\n"
        f"    files: {tmp_path / 'input.log'}\n    topic: {topic}\n"
    )
    port = free_port()
    worker = standalone_worker(config, bootstrap, tmp_path, "--rest", f"127.0.0.1:{port}")
    try:
        url = f"http://127.0.0.1:{port}"
        body = wait(lambda: worker.poll() is None and _status(url, "tail"), "tail running")
        assert worker.poll() is None, worker_log(tmp_path)
        expected = f"127.0.0.1:{port}"
        assert body["connector"]["worker_id"] == expected, body
        assert [t["worker_id"] for t in body["tasks"]] == [expected], body

        printed = sluice("connect", "status", "--url", url)
        assert printed.code == 0, str(printed)
        lines = printed.out.splitlines()
        assert lines[0].split() == ["CONNECTOR", "TASK", "TYPE", "STATE", "WORKER"], printed.out
        assert lines[1].split() == ["tail", "-", "source", "RUNNING", expected], printed.out
        assert lines[2].split() == ["tail", "0", "RUNNING", expected], printed.out
    finally:
        stop_process(worker)
