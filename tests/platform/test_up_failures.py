"""`sluice up` explains failures: exit codes and signals, the last error line of a child's log,
crash loops, restart policies, and `sluice status` (plain and ``--json``) showing all of it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from sluice.connect.deploy import DeploymentError
from sluice.up import load
from sluice.up import state as up_state
from sluice.up.children import Child, Launch
from sluice.up.exits import error_line, last_error_line
from sluice.up.spec import RestartPolicy
from tests.conftest import free_port
from tests.platform.fixtures import SLUICE, Running

ERROR = "ProcessingError: orders[0]@257: processing failed: KeyError('customer_id')"

CRASHER = """\
print("starting", flush=True)


class ProcessingError(Exception):
    pass


raise ProcessingError("orders[0]@257: processing failed: KeyError('customer_id')")
"""

FINISHER = """\
print("generated 10 orders")
"""

ONCE = """\
import sys
print("2026-01-01 12:00:00 ERROR once: cannot open input.csv", flush=True)
print("giving up", flush=True)
sys.exit(3)
"""

SLEEPER = """\
import os, sys, time
with open(sys.argv[1], "a") as out:
    out.write(os.environ.get("SLUICE_STREAMS_CONFIG", "-") + "\\n")
while True:
    time.sleep(1)
"""

DLQ = "app-dlq"


def _file(port: int) -> str:
    return f"""\
        broker:
          listen: 127.0.0.1:{port}
        topics:
          - name: {DLQ}
        streams:
          - name: app
            app: sleeper.py
            args: [app-config.txt]
            config:
              errors.deadletterqueue.topic.name: {DLQ}
              processing.guarantee: at_least_once
          - name: quitter
            app: finisher.py
        processes:
          - name: crasher
            app: crasher.py
          - name: generator
            app: finisher.py
          - name: once
            app: once.py
            restart: never
          - name: sleeper
            app: sleeper.py
            args: [sleeper-config.txt]
        """


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("up-failures")
    for name, text in (
        ("crasher.py", CRASHER),
        ("finisher.py", FINISHER),
        ("once.py", ONCE),
        ("sleeper.py", SLEEPER),
    ):
        (folder / name).write_text(text)
    (folder / "sluice.yaml").write_text(textwrap.dedent(_file(free_port())))
    run = Running(folder)
    yield run
    run.stop()


def _status(running: Running, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SLUICE, "status", "--home", ".sluice", "--interval", "0", *args],
        cwd=running.folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "COLUMNS": "250"},
    )


def _status_component(running: Running, name: str) -> dict[str, Any]:
    result = _status(running, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    components = json.loads(result.stdout)["supervisor"]["components"]
    [found] = [c for c in components if c["name"] == name]
    assert isinstance(found, dict)
    return found


def _row(output: str, name: str) -> str:
    rows = [line for line in output.splitlines() if line.startswith(f"{name} ")]
    assert len(rows) == 1, f"expected one row of {name} in:\n{output}"
    return rows[0]


def test_a_crash_looping_child_is_shown_with_its_reason(running: Running) -> None:
    crasher = running.wait_component("crasher-0", {"failures": 3})
    assert crasher["restart"] == "on-failure"  # the default of processes:
    assert (crasher["exit_code"], crasher["signal"], crasher["exit"]) == (1, None, "exited 1")
    assert crasher["last_error"] == ERROR
    assert crasher["state"] == "crash-loop"

    shown = _status_component(running, "crasher-0")
    assert shown["state"] == "crash-loop"
    assert (shown["exit_code"], shown["exit"], shown["last_error"]) == (1, "exited 1", ERROR)
    assert shown["failures"] >= 3 and shown["restarts"] >= 2, shown
    if shown["pid"] is None:  # waiting, not retrying at this moment
        assert shown["backoff"] >= 4 and shown["next_start"] is not None, shown

    result = _status(running)
    assert result.returncode == 0, result.stdout + result.stderr
    header = result.stdout.splitlines()[3].split()  # after the heading and the first line
    assert header == [
        "NAME",
        "KIND",
        "STATE",
        "PID",
        "RESTARTS",
        "UP",
        "LAST-EXIT",
        "LAST-ERROR",
    ]
    row = _row(result.stdout, "crasher-0")
    assert row.split()[1:3] in (["process", "crash-loop,"], ["process", "crash-loop"]), row
    assert "exited 1" in row and row.endswith(ERROR), row

    # the supervisor's own output says it too
    output = running.output()
    assert f"crasher-0: exited 1: {ERROR}; restarting in 1 s" in output
    assert f"crasher-0: exited 1: {ERROR}; crash-loop: ended 3 times in a row" in output


def test_a_child_killed_by_a_signal_shows_the_signal(running: Running) -> None:
    first = running.wait_component("sleeper-0", {"state": "running"})
    os.kill(first["pid"], signal.SIGKILL)
    again = running.wait_component("sleeper-0", {"state": "running", "restarts": 1})
    assert again["pid"] != first["pid"]
    assert (again["exit"], again["signal"], again["exit_code"]) == (
        "killed by SIGKILL",
        "SIGKILL",
        None,
    )
    shown = _status_component(running, "sleeper-0")
    assert (shown["exit"], shown["signal"]) == ("killed by SIGKILL", "SIGKILL")
    assert shown["alive"] is True
    row = _row(_status(running).stdout, "sleeper-0")
    assert "killed by SIGKILL" in row, row
    assert "sleeper-0: killed by SIGKILL; restarting in 1 s" in running.output()


def test_a_generator_that_finishes_is_completed_not_restarted(running: Running) -> None:
    generator = running.wait_component("generator-0", {"state": "completed"})
    assert (generator["exit_code"], generator["exit"], generator["last_error"]) == (
        0,
        "exited 0",
        None,
    )
    # a Streams app (restart: always by default) that exits 0 is started again
    running.wait_component("quitter-0", {"restart": "always"}, until=lambda c: c["restarts"] >= 2)
    generator = running.wait_component("generator-0", {"state": "completed"})
    assert generator["restarts"] == 0 and generator["pid"] is None
    log = (running.folder / ".sluice/logs/generator-0.log").read_text()
    assert log.count(" starting\n") == 1, log
    assert "generator-0: exited 0; completed, not restarted (restart: on-failure)" in (
        running.output()
    )
    row = _row(_status(running).stdout, "generator-0")
    assert row.split()[:7] == ["generator-0", "process", "completed", "-", "0", "-", "exited"], row


def test_restart_never_leaves_a_failed_child_failed(running: Running) -> None:
    once = running.wait_component("once-0", {"state": "failed"})
    assert once["restart"] == "never"
    assert (once["exit_code"], once["exit"]) == (3, "exited 3")
    assert once["last_error"] == "2026-01-01 12:00:00 ERROR once: cannot open input.csv"
    time.sleep(2)  # longer than the first backoff
    once = running.wait_component("once-0", {"state": "failed"})
    assert once["restarts"] == 0
    assert "once-0: exited 3: 2026-01-01 12:00:00 ERROR once: cannot open input.csv; failed, " in (
        running.output()
    )


def test_a_streams_app_gets_its_config_and_its_dead_letters_are_counted(
    running: Running,
) -> None:
    running.wait_component("app-0", {"state": "running", "dead_letter_topic": DLQ})
    config_file = running.folder / "app-config.txt"
    sleeper_file = running.folder / "sleeper-config.txt"
    deadline = time.monotonic() + 30
    while not (config_file.exists() and sleeper_file.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert json.loads(config_file.read_text().splitlines()[0]) == {
        "errors.deadletterqueue.topic.name": DLQ,
        "processing.guarantee": "at_least_once",
    }
    # a process has no config: the variable is not set
    assert sleeper_file.read_text().splitlines()[0] == "-"

    bootstrap = running.state()["bootstrap"]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(3):
        producer.produce(DLQ, f"bad-{i}".encode())
    assert producer.flush(30) == 0
    # dead letters written in transactions (as under exactly-once): markers and aborted
    # records take offsets but are not dead letters
    transactional = Producer({"bootstrap.servers": bootstrap, "transactional.id": "dlq-test"})
    transactional.init_transactions(30)
    for commit, values in ((True, ["bad-3", "bad-4"]), (False, ["never"])):
        transactional.begin_transaction()
        for value in values:
            transactional.produce(DLQ, value.encode())
        if commit:
            transactional.commit_transaction(30)
        else:
            transactional.abort_transaction(30)

    result = _status(running, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    [app] = [a for a in json.loads(result.stdout)["streams"] if a["app"] == "app"]
    assert (app["dead_letter_topic"], app["dead_letters"]) == (DLQ, 5)
    [quitter] = [a for a in json.loads(result.stdout)["streams"] if a["app"] == "quitter"]
    assert (quitter["dead_letter_topic"], quitter["dead_letters"]) == (None, None)
    plain = _status(running).stdout
    assert "DEAD-LETTERS" in _row(plain, "APP")
    assert f"5 ({DLQ})" in _row(plain, "app"), plain


# -- the file ------------------------------------------------------------------------------


def _problems(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "sluice.yaml").write_text(textwrap.dedent(text))
    with pytest.raises(DeploymentError) as caught:
        load(tmp_path / "sluice.yaml")
    return [f"{p.line}: {p.key}: {p.reason}" for p in caught.value.problems]


def test_restart_takes_a_known_policy_and_config_is_for_streams(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("")
    found = _problems(
        tmp_path,
        """\
        streams:
          - name: a
            app: app.py
            restart: no
            config: {errors.deadletterqueue.topic: dlq}
        processes:
          - name: p
            app: app.py
            restart: OnFailure
            config: {x: 1}
        """,
    )
    assert found == [
        "4: streams[0].restart: must be one of always, on-failure, never, not 'no' "
        "(docker-compose's 'no' is 'never')",
        "5: streams[0].config.errors.deadletterqueue.topic: unknown Streams setting "
        "'errors.deadletterqueue.topic' " + found[1].partition("topic' ")[2],
        "9: processes[0].restart: must be one of always, on-failure, never, not 'OnFailure'",
        "10: processes[0].config: unknown key; known: name, app, "
        "module, args, instances, environment, restart",
    ]
    assert "errors.deadletterqueue.topic.name" in found[1]  # the known names are listed


def test_restart_defaults_always_for_streams_and_on_failure_for_processes(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("")
    (tmp_path / "sluice.yaml").write_text(
        textwrap.dedent(
            """\
            streams:
              - {name: a, app: app.py}
              - name: b
                app: app.py
                restart: never
                config: {errors: {deadletterqueue.topic.name: dlq}}
            processes:
              - {name: c, app: app.py}
              - {name: d, app: app.py, restart: always}
            """
        )
    )
    programs = {p.name: p for p in load(tmp_path / "sluice.yaml").programs}
    assert {name: p.restart for name, p in programs.items()} == {
        "a": "always",
        "b": "never",
        "c": "on-failure",
        "d": "always",
    }
    assert programs["b"].config == (("errors.deadletterqueue.topic.name", "dlq"),)
    assert programs["b"].dead_letter_topic == "dlq"
    assert programs["a"].dead_letter_topic is None


def test_the_state_file_round_trips_and_reads_older_files(tmp_path: Path) -> None:
    component = up_state.Component(
        name="revenue-0",
        kind="streams",
        app="revenue",
        state="crash-loop",
        restarts=4,
        command=["python", "revenue.py"],
        restart="always",
        exit_code=None,
        signal="SIGKILL",
        exit="killed by SIGKILL",
        last_error=ERROR,
        failures=5,
        backoff=16.0,
        next_start=1.5,
        dead_letter_topic=DLQ,
    )
    written = up_state.UpState(
        pid=12,
        file="/srv/sluice.yaml",
        updated=1.0,
        bootstrap="127.0.0.1:9092",
        connect_url=None,
        generation=2,
        last_reload={"id": "x", "ok": True},
        components=[component],
    )
    up_state.write(tmp_path, written)
    assert up_state.read(tmp_path) == written
    assert not (tmp_path / "up.tmp").exists()

    # what an older sluice up wrote: the new keys are missing
    older = {"pid": None, "components": [{"name": "broker", "kind": "broker", "pid": 7}]}
    up_state.state_path(tmp_path).write_text(json.dumps(older))
    read = up_state.read(tmp_path)
    assert read is not None
    [broker] = read.components
    assert (broker.name, broker.pid, broker.exit, broker.failures, broker.backoff) == (
        "broker",
        7,
        None,
        0,
        None,
    )

    up_state.state_path(tmp_path).write_text('{"components": [{"name": "a", "signal": 9}]}')
    with pytest.raises(up_state.StateFileError, match=r"components\[0\]\.signal: expected a"):
        up_state.read(tmp_path)
    assert up_state.read(tmp_path / "nowhere") is None


# -- one child, in-process -----------------------------------------------------------------


def _child(tmp_path: Path, code: str, restart: RestartPolicy) -> Child:
    launch = Launch((sys.executable, "-c", code))
    return Child("c", "process", launch, tmp_path / "c.log", restart=restart)


def _until_ended(child: Child) -> None:
    deadline = time.monotonic() + 30
    while child.process is not None:
        assert time.monotonic() < deadline, "the child did not end in 30 s"
        child.process.wait(30)
        child.check(time.time())


def test_a_changed_policy_starts_a_child_it_left_ended(tmp_path: Path) -> None:
    child = _child(tmp_path, "import time; print('done'); time.sleep(0.5)", "on-failure")
    child.start()
    _until_ended(child)
    assert (child.state, child.restarts, child.next_start) == ("completed", 0, None)
    child.set_restart("on-failure")  # unchanged: nothing happens
    assert child.state == "completed"
    child.set_restart("always")
    assert child.state == "restarting"
    child.check(time.time())
    assert child.state == "running" and child.restarts == 1
    child.stop()
    assert child.state == "stopped"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [
                "Traceback (most recent call last):",
                '  File "a.py", line 1, in <module>',
                "KeyError: 'customer_id'",
                "",
                "The above exception was the direct cause of the following exception:",
                "",
                "Traceback (most recent call last):",
                '  File "a.py", line 3, in <module>',
                "sluice.streams.errors.ProcessingError: orders[0]@257: processing failed",
                "INFO shutting down",
            ],
            "sluice.streams.errors.ProcessingError: orders[0]@257: processing failed",
        ),
        (
            [
                "2026-01-01 12:00:00,1 ERROR sluice.connect: cannot reach the broker",
                "2026-01-01 12:00:01,1 INFO sluice.connect: stopped",
            ],
            "2026-01-01 12:00:00,1 ERROR sluice.connect: cannot reach the broker",
        ),
        (
            ["starting", "error: cannot serve the REST API on '127.0.0.1:8083': in use"],
            "error: cannot serve the REST API on '127.0.0.1:8083': in use",
        ),
        (["KeyboardInterrupt"], "KeyboardInterrupt"),
        (["all good", "an Error happened? no: just words", "INFO errors: 0"], None),
        ([], None),
    ],
)
def test_the_last_error_line_of_a_log(lines: list[str], expected: str | None) -> None:
    assert error_line(lines) == expected


def test_the_last_error_line_is_of_the_last_run(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text("RuntimeError: the first run\n--- starting\n")
    start = log.stat().st_size
    with log.open("a") as out:
        out.write("all good\n")
    assert last_error_line(log, start) is None
    assert last_error_line(log, 0) == "RuntimeError: the first run"
    assert last_error_line(tmp_path / "missing.log") is None
