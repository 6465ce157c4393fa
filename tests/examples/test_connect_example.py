"""examples/connect_files: the YAML of the README, run by a standalone worker process."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import BrokerProcess, create_topic, free_port

EXAMPLE = Path(__file__).parents[2] / "examples" / "connect_files"
SLUICE = str(Path(sys.executable).with_name("sluice"))


def test_lines_go_through_the_topic_into_the_output_file(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    pipeline = (EXAMPLE / "pipeline.yaml").read_text().replace("lines", topic)
    (tmp_path / "pipeline.yaml").write_text(pipeline)
    port = free_port()
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [
                *(SLUICE, "connect", "standalone", "pipeline.yaml", "-b", shared_broker.bootstrap),
                *("--rest", f"127.0.0.1:{port}", "-X", "key.converter=string"),
                *("-X", "value.converter=string", "-X", "offset.flush.interval.ms=200"),
            ],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        with open(tmp_path / "input.log", "a") as source:
            source.write("hello\nworld\n")
        output = tmp_path / "output.txt"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if output.exists() and output.read_text() == "hello\nworld\n":
                break
            time.sleep(0.1)
        assert output.read_text() == "hello\nworld\n", (tmp_path / "worker.log").read_text()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/connectors?expand=status") as r:
            states = {
                name: body["status"]["connector"]["state"]
                for name, body in json.loads(r.read()).items()
            }
        assert states == {"tail-input": "RUNNING", "write-output": "RUNNING"}
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
