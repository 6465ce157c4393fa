"""A Connect worker's ``/metrics`` (``sluice connect standalone|start --metrics-listen``): records
moved by a file-source → topic → file-sink pipeline, errors skipped to a dead-letter topic."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import SLUICE, BrokerProcess, create_topic, free_port, stop_process
from tests.connect.worker_helpers import standalone_worker, worker_log
from tests.platform.scrape import Scraped, scrape_until

SOURCE = "kafka_connect_source_task_metrics_"
SINK = "kafka_connect_sink_task_metrics_"
ERRORS = "kafka_connect_task_error_metrics_"
WORKER = "kafka_connect_connect_worker_metrics_"


def test_standalone_counts_records_errors_and_dead_letters(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    dlq = create_topic(shared_broker.bootstrap)
    good = [str(n) for n in range(30)]  # JSON numbers
    bad = [f"not json {n} {{" for n in range(5)]
    (tmp_path / "input.log").write_text("".join(f"{line}\n" for line in good + bad))
    config = tmp_path / "pipeline.yaml"
    config.write_text(
        f"""\
- name: tail-input
  class: file-source
  config:
    files: {tmp_path / "input.log"}
    topic: {topic}
    poll.interval.ms: 100
- name: write-output
  class: file-sink
  config:
    topics: {topic}
    file: {tmp_path / "output.txt"}
    value.converter: json
    value.converter.schemas.enable: "false"
    errors.tolerance: all
    errors.deadletterqueue.topic.name: {dlq}
"""
    )
    port = free_port()
    no_rest_but_metrics = ["--rest", "", "--metrics-listen", f"127.0.0.1:{port}"]
    worker = standalone_worker(config, shared_broker.bootstrap, tmp_path, *no_rest_but_metrics)
    try:
        source = {"connector": "tail-input", "task": "0"}
        sink = {"connector": "write-output", "task": "0"}

        def moved(m: Scraped) -> bool:
            return m.all(SINK + "sink_record_read_total", **sink) == [35] and m.all(
                ERRORS + "deadletterqueue_produce_requests", **sink
            ) == [5]

        try:
            m = scrape_until(port, moved, timeout=60, what="35 records read by the sink")
        except (AssertionError, OSError) as error:
            raise AssertionError(f"{error}\nworker log:\n{worker_log(tmp_path)}") from None
        assert m.get(SOURCE + "source_record_poll_total", **source) == 35
        assert m.get(SOURCE + "source_record_write_total", **source) == 35
        assert m.get(SINK + "sink_record_send_total", **sink) == 30
        assert m.get(ERRORS + "total_record_errors", **sink) == 5
        assert m.get(ERRORS + "total_records_skipped", **sink) == 5
        assert m.get(ERRORS + "deadletterqueue_produce_failures", **sink) == 0
        assert m.get(ERRORS + "total_record_errors", **source) == 0
        assert m.all(SINK + "sink_record_read_total", **source) == [], (
            "a source has no sink metrics"
        )
        assert m.get(WORKER + "connector_count") == 2
        assert m.get(WORKER + "task_count") == 2
        assert m.get(WORKER + "connector_running_task_count", connector="tail-input") == 1
        assert m.get(WORKER + "connector_failed_task_count", connector="write-output") == 0
        written = (tmp_path / "output.txt").read_text().splitlines()
        assert sorted(written, key=int) == good
    finally:
        stop_process(worker)
    assert worker.returncode == 0, worker_log(tmp_path)


def test_distributed_worker_serves_its_metrics(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    (tmp_path / "input.log").write_text("".join(f"line {n}\n" for n in range(12)))
    port, rest = free_port(), free_port()
    group = f"metrics-{topic}"
    with open(tmp_path / "worker.log", "ab") as log:
        worker = subprocess.Popen(
            [
                str(SLUICE),
                "connect",
                "start",
                "--group",
                group,
                "-b",
                shared_broker.bootstrap,
                "--rest",
                f"127.0.0.1:{rest}",
                "--metrics-listen",
                f"127.0.0.1:{port}",
                "-X",
                f"config.storage.topic={group}-configs",
                "-X",
                f"offset.storage.topic={group}-offsets",
                "-X",
                f"status.storage.topic={group}-status",
                "-X",
                "value.converter=string",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        try:
            scrape_until(port, lambda m: m.get(WORKER + "connector_count") == 0, timeout=30)
        except (AssertionError, OSError) as error:
            raise AssertionError(f"{error}\nworker log:\n{worker_log(tmp_path)}") from None
        body = {
            "name": "tail",
            "config": {
                "connector.class": "file-source",
                "files": str(tmp_path / "input.log"),
                "topic": topic,
                "poll.interval.ms": "100",
            },
        }
        request = urllib.request.Request(
            f"http://127.0.0.1:{rest}/connectors",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        deadline_error = None
        for _ in range(60):  # the worker answers once it has joined its group
            try:
                with urllib.request.urlopen(request, timeout=30):
                    deadline_error = None
                    break
            except OSError as error:
                deadline_error = error
                time.sleep(0.5)
        assert deadline_error is None, f"{deadline_error}\n{worker_log(tmp_path)}"
        m = scrape_until(
            port,
            lambda s: (
                s.all(SOURCE + "source_record_write_total", connector="tail", task="0") == [12]
            ),
            timeout=60,
            what="12 records written by the distributed source task",
        )
        assert m.get(WORKER + "connector_count") == 1
        assert m.get(WORKER + "task_count") == 1
    finally:
        stop_process(worker)


@pytest.mark.parametrize("mode", ["standalone", "start"])
def test_bad_metrics_addresses_are_usage_errors(mode: str, tmp_path: Path) -> None:
    config = tmp_path / "empty.yaml"
    config.write_text("[]\n")
    args = [str(config)] if mode == "standalone" else []
    common = [str(SLUICE), "connect", mode, *args, "-b", "127.0.0.1:1", "--rest", ""]
    done = subprocess.run(
        [*common, "--metrics-listen", "nowhere"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    assert "--metrics-listen" in done.stderr, done.stderr
    if mode == "start":
        return  # a distributed worker needs a broker before it would listen
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        done = subprocess.run(
            [*common, "--metrics-listen", f"127.0.0.1:{taken}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2, done
    assert "--metrics-listen" in done.stderr and "in use" in done.stderr, done.stderr
