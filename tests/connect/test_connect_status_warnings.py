"""``sluice connect status`` prints a task's warnings under the table (a real standalone worker
process running ``file-source`` on a file that does not exist yet)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import SLUICE, BrokerProcess, create_topic, free_port, stop_process
from tests.connect.worker_helpers import standalone_worker, wait, worker_log


def _status(url: str) -> subprocess.CompletedProcess[str]:
    command = [str(SLUICE), "connect", "status", "--url", url]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_status_shows_the_warning_of_a_waiting_file_source(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    missing = tmp_path / "later.log"
    deployment = tmp_path / "tail.yaml"
    topic = create_topic(shared_broker.bootstrap)
    deployment.write_text(
        f"name: tail\nclass: file-source\nconfig:\n  file: {missing}\n  topic: {topic}\n"
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    worker = standalone_worker(
        deployment, shared_broker.bootstrap, tmp_path, "--rest", f"127.0.0.1:{port}"
    )
    try:

        def warned() -> str | None:
            assert worker.poll() is None, worker_log(tmp_path)
            result = _status(url)
            return result.stdout if "warning:" in result.stdout else None

        printed = wait(warned, "a warning in the status")
        expected = f"warning: tail-0: file {missing} does not exist: waiting for it to appear"
        assert expected in printed, printed
        assert "RUNNING" in printed
    finally:
        stop_process(worker)
