"""`sluice up`: the file's checks, and a running deployment reconciled with an edited file."""

from __future__ import annotations

import signal
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from sluice.connect.deploy import DeploymentError
from sluice.up import load
from tests.conftest import free_port
from tests.platform.fixtures import SLUICE, Running

SLEEPER = """\
import os, sys, time
with open(sys.argv[1], "a") as out:
    out.write(f"{os.getpid()} {os.environ['SLUICE_BOOTSTRAP']} {' '.join(sys.argv[2:])}\\n")
while True:
    time.sleep(1)
"""


def problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "sluice.yaml").write_text(textwrap.dedent(text))
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path / "sluice.yaml")
    return [f"{p.line}: {p.key}: {p.reason}" for p in caught.value.problems]


def test_every_problem_is_named_at_its_line_and_key(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        broker:
          listen: localhost
          datadir: x
        topics:
          - name: orders
            partitions: -1
          - name: orders
        streams:
          - name: app
            app: missing.py
            instances: 0
        processes:
          - module: 1bad
        connectors:
          - name: c
            class: no-such-connector
        extra: 1
        """,
    )
    unknown = "unknown connector class 'no-such-connector' (known: file-sink, file-source,"
    assert found == [
        "2: broker.listen: must be HOST:PORT, not 'localhost'",
        "3: broker.datadir: unknown key (did you mean data_dir?); known: "
        "listen, data_dir, config, metrics, bootstrap_servers, brokers, zookeeper, "
        "zookeeper_listen, rebalance_on_add",
        "6: topics[0].partitions: must be a whole number >= 1, not '-1'",
        "7: topics: the topic name 'orders' is used twice (first at line 5)",
        f"10: streams[0].app: no such file: {tmp_path / 'missing.py'}",
        "11: streams[0].instances: must be a whole number >= 1, not '0'",
        "13: processes[0]: missing: name:",
        "13: processes[0].module: not a module name: '1bad'",
        "16: class: " + found[8].partition("16: class: ")[2],
        "17: extra: unknown key; known: broker, topics, connect, connectors, streams, processes, "
        "security, schema_registry, rest_proxy",
    ]
    assert found[8].startswith(f"16: class: {unknown}")


def test_an_external_broker_takes_nothing_else(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        """\
        broker:
          bootstrap_servers: kafka:9092
          data_dir: x
        """,
    )
    assert found == [
        "3: broker.data_dir: an external broker (bootstrap_servers:) takes nothing else"
    ]


def test_a_good_file_gives_its_parts(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("")
    (tmp_path / "sluice.yaml").write_text(
        textwrap.dedent(
            """\
            broker:
              listen: 127.0.0.1:9999
              config: {log: {retention.ms: 1000}}
            topics: [{name: t, partitions: 3, config: {cleanup.policy: compact}}]
            connectors:
              - name: lines
                class: file-source
                config: {files: in.txt, topic: t}
            streams:
              - {name: counts, app: app.py, instances: 2, environment: {A: b}}
            """
        )
    )
    deployment = load(tmp_path / "sluice.yaml")
    assert deployment.broker.bootstrap == "127.0.0.1:9999"
    assert deployment.broker.config == (("log.retention.ms", "1000"),)
    assert [(t.name, t.partitions, t.config) for t in deployment.topics] == [
        ("t", 3, (("cleanup.policy", "compact"),))
    ]
    assert deployment.connect is not None  # connectors imply a worker
    assert deployment.connect.url == "http://127.0.0.1:8083"
    [program] = deployment.programs
    assert (program.kind, program.instances, program.application_id) == ("streams", 2, "counts")
    assert program.command("python") == ["python", str((tmp_path / "app.py").resolve())]


@pytest.fixture
def running(tmp_path: Path) -> Iterator[Running]:
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    port = free_port()
    write_file(tmp_path, port, partitions=1, instances=1, args="first")
    run = Running(tmp_path)
    yield run
    run.stop()


def write_file(
    folder: Path,
    port: int,
    *,
    partitions: int,
    instances: int,
    args: str,
    more: tuple[str, ...] = (),
) -> None:
    lines = [
        "broker:",
        f"  listen: 127.0.0.1:{port}",
        "topics:",
        "  - name: events",
        f"    partitions: {partitions}",
        *more,
        "processes:",
        "  - name: sleeper",
        "    app: sleeper.py",
        f"    args: [started.txt, {args}]",
        f"    instances: {instances}",
    ]
    (folder / "sluice.yaml").write_text("\n".join(lines) + "\n")


def test_an_edited_file_is_reconciled_and_sigterm_stops_everything(running: Running) -> None:
    running.wait_running({"broker", "sleeper-0"})
    broker = running.pid("broker")
    first = running.pid("sleeper-0")
    bootstrap = running.state()["bootstrap"]

    more = ("  - name: audit", "    config: {cleanup.policy: compact}")
    port = int(bootstrap.rpartition(":")[2])
    write_file(running.folder, port, partitions=3, instances=2, args="second", more=more)
    again = subprocess.run(
        [SLUICE, "up", "-f", "sluice.yaml"],
        cwd=running.folder,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert again.returncode == 0, again.stderr + running.output()
    assert "applied" in again.stderr
    running.wait_running({"broker", "sleeper-0", "sleeper-1"})
    assert running.pid("broker") == broker  # unchanged: not restarted
    assert running.pid("sleeper-0") != first  # its arguments changed: restarted
    started = (running.folder / "started.txt").read_text().splitlines()
    assert [line.split()[2] for line in started] == ["first", "second", "second"]
    assert {line.split()[1] for line in started} == {bootstrap}

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = admin.list_topics(timeout=10).topics
    assert len(topics["events"].partitions) == 3
    [future] = admin.describe_configs([ConfigResource("topic", "audit")]).values()
    assert future.result()["cleanup.policy"].value == "compact"

    # a bad edit is refused by the second run before it reaches the running one
    (running.folder / "sluice.yaml").write_text("topics: [{name: x, partitions: none}]\n")
    refused = subprocess.run(
        [SLUICE, "up", "-f", "sluice.yaml"],
        cwd=running.folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "sluice.yaml:1: topics[0].partitions: must be a whole number" in refused.stderr
    running.wait_running({"broker", "sleeper-0", "sleeper-1"})

    pids = running.pids | {running.process.pid}
    running.process.send_signal(signal.SIGTERM)
    assert running.process.wait(120) == 0
    assert [pid for pid in pids if psutil.pid_exists(pid)] == []
