"""A task's warnings in distributed mode: written to ``connect-status`` with its state and shown
by ``GET /connectors/{name}/status`` (an extra ``warnings`` field beside Kafka Connect's), and
gone once the task no longer has them. ``file-source`` on a file that does not exist yet."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.connect.cluster_fixtures import Cluster
from tests.connect.rest_fixtures import create, unique, wait_for

FILE_SOURCE = "sluice.connectors.file.source.FileSourceConnector"


def test_a_waiting_file_source_shows_a_warning_in_its_status(
    cluster: Cluster, tmp_path: Path
) -> None:
    _, client = cluster("worker-a:8083")
    name, path = unique("tail"), tmp_path / "later.log"
    config = {"connector.class": FILE_SOURCE, "file": str(path), "topic": unique("lines")}
    create(client, name, config)

    def task() -> dict[str, Any] | None:
        tasks = client.get(f"/connectors/{name}/status").json()["tasks"]
        return tasks[0] if tasks and tasks[0]["state"] == "RUNNING" else None

    running = wait_for(lambda: (t := task()) is not None and "warnings" in t and t, "warnings")
    assert running["warnings"] == [f"file {path} does not exist: waiting for it to appear"]
    assert (
        client.get(f"/connectors/{name}/tasks/0/status").json()["warnings"] == (running["warnings"])
    )
    path.write_text("hello\n")
    wait_for(lambda: (t := task()) is not None and "warnings" not in t, "the warning to go")
