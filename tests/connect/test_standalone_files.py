"""A YAML file deploys file-source → topic → file-sink on a standalone worker (a real process
against the real broker): the output file gets every input line, across a rotation, a
truncation and a ``kill -9`` of the worker (at-least-once: nothing lost)."""

from __future__ import annotations

import signal
import subprocess
import time
import uuid
from pathlib import Path

from tests.conftest import SLUICE, BrokerProcess, create_topic, stop_process
from tests.connect.worker_helpers import standalone_worker, worker_log

TIMEOUT = 60.0


def _deploy(tmp_path: Path, topic: str) -> Path:
    config = tmp_path / "pipeline.yaml"
    config.write_text(
        f"""\
- name: tail-input
  class: file-source
  tasks_max: 1
  config:
    files: {tmp_path / "input.log"}
    topic: {topic}
    poll.interval.ms: 100
- name: write-output
  class: file-sink
  config:
    topics: {topic}
    file: {tmp_path / "output.txt"}
"""
    )
    return config


def _append(path: Path, lines: list[str]) -> None:
    with open(path, "a") as handle:
        handle.write("".join(f"{line}\n" for line in lines))


def _output(tmp_path: Path) -> list[str]:
    path = tmp_path / "output.txt"
    return path.read_text().splitlines() if path.exists() else []


def _wait_for(tmp_path: Path, expected: list[str], exact: bool) -> None:
    deadline = time.monotonic() + TIMEOUT
    got: list[str] = []
    while time.monotonic() < deadline:
        got = _output(tmp_path)
        if (got == expected) if exact else set(expected) <= set(got):
            return
        time.sleep(0.1)
    log = worker_log(tmp_path)
    missing = [line for line in expected if line not in set(got)]
    raise AssertionError(f"output: {len(got)} lines, missing {missing[:5]}…\nworker log:\n{log}")


def test_file_to_topic_to_file_across_rotation_truncation_and_kill_9(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    config = _deploy(tmp_path, topic)
    source = tmp_path / "input.log"
    worker = standalone_worker(config, shared_broker.bootstrap, tmp_path)
    try:
        expected = [f"first {i}" for i in range(100)]
        _append(source, expected)
        _wait_for(tmp_path, expected, exact=True)
        # rotation by rename: the rest of the old file, then the new one
        _append(source, ["before rotation"])
        source.rename(tmp_path / "input.log.1")
        _append(source, [f"after rotation {i}" for i in range(50)])
        expected += ["before rotation"] + [f"after rotation {i}" for i in range(50)]
        _wait_for(tmp_path, expected, exact=True)
        # truncation: start again at 0
        source.write_text("")
        time.sleep(0.5)
        _append(source, ["after truncation"])
        expected.append("after truncation")
        _wait_for(tmp_path, expected, exact=True)
        # kill -9 while lines keep coming: at-least-once after a restart
        burst = [f"burst {i}" for i in range(5000)]
        _append(source, burst[:2500])
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        _append(source, burst[2500:])
        worker = standalone_worker(config, shared_broker.bootstrap, tmp_path)
        _wait_for(tmp_path, expected + burst, exact=False)
    finally:
        stop_process(worker)
    got = _output(tmp_path)
    assert got[: len(expected)] == expected, "lines before the kill were reordered or lost"


def test_a_bad_file_names_file_line_and_key_and_starts_nothing(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        """\
- name: ok
  class: file-sink
  config:
    topics: t
    file: /tmp/x
- name: broken
  class: file-source
  tasks_max: many
  config:
    topic: t
"""
    )
    result = subprocess.run(
        [str(SLUICE), "connect", "standalone", str(config), "-b", shared_broker.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert f"{config}:8: tasks_max:" in result.stderr, result.stderr


def test_a_sink_reads_a_topic_created_after_it_subscribed(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    """The sink subscribes to two topics, one of which appears only when the source writes its
    first line. librdkafka would look for it again only every topic.metadata.refresh.interval.ms
    (5 min by default); the sink's consumer looks every few seconds."""
    existing = create_topic(shared_broker.bootstrap)
    late = f"late-{uuid.uuid4().hex[:12]}"
    config = _deploy(tmp_path, late)
    config.write_text(config.read_text().replace(f"topics: {late}", f"topics: {existing},{late}"))
    worker = standalone_worker(config, shared_broker.bootstrap, tmp_path)
    try:
        deadline = time.monotonic() + TIMEOUT
        while "Subscribed topic not available" not in (tmp_path / "worker.log").read_text():
            assert time.monotonic() < deadline, worker_log(tmp_path)
            assert worker.poll() is None, worker_log(tmp_path)
            time.sleep(0.1)
        lines = [f"late {i}" for i in range(20)]
        _append(tmp_path / "input.log", lines)
        _wait_for(tmp_path, lines, exact=True)
    finally:
        stop_process(worker)
