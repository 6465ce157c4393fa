"""``file-source`` with a configured file that does not exist: the task stays RUNNING and picks
the file up once it appears (as before), and meanwhile its status says so (``warnings``)."""

from __future__ import annotations

from pathlib import Path

from sluice.connectors.file import FileSourceTask
from tests.conftest import BrokerProcess, create_topic
from tests.connect.worker_helpers import in_process_herder, read, wait


def test_the_task_warns_while_its_file_or_pattern_is_missing(tmp_path: Path) -> None:
    task = FileSourceTask()
    missing, pattern = tmp_path / "app.log", str(tmp_path / "logs" / "*.log")
    task.start({"files": f"{missing},{pattern}", "topic": "t", "watch": "false"})
    try:
        assert task.warnings() == [
            f"file {missing} does not exist: waiting for it to appear",
            f"no file matches {pattern}: waiting for one to appear",
        ]
        missing.write_text("a\n")
        (tmp_path / "logs").mkdir()
        (tmp_path / "logs" / "x.log").write_text("b\n")
        assert task.warnings() == []
    finally:
        task.stop()


def test_the_worker_status_shows_the_warning_until_the_file_appears(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap)
    path = tmp_path / "later.txt"
    herder = in_process_herder(bootstrap, tmp_path)
    herder.create_connector(
        "tail",
        {
            "connector.class": "file-source",
            "file": str(path),
            "topic": topic,
            "value.converter": "string",
        },
    )
    try:
        task = wait(
            lambda: next(
                (t for t in herder.connector_status("tail")["tasks"] if t["state"] == "RUNNING"),
                None,
            ),
            "a RUNNING task",
        )
        assert task["warnings"] == [f"file {path} does not exist: waiting for it to appear"]
        assert herder.connector_status("tail")["connector"]["state"] == "RUNNING"
        path.write_text("hello\n")
        found = read(bootstrap, topic, 1)
        assert [m.value() for m in found] == [b"hello"]
        assert "warnings" not in herder.connector_status("tail")["tasks"][0]
    finally:
        herder.runtime.stop()
