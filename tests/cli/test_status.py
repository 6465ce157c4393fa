"""``sluice status`` against the real broker, a real Connect worker and real processes.

Records are produced and offsets committed with confluent-kafka directly, so every count and
lag the command shows is checked exactly. ``sluice up``'s state file is written by hand, with the
pids of ``sleep`` processes the tests start and stop.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.conftest import BrokerProcess, create_topic, free_port

if TYPE_CHECKING:
    from tests.cli.conftest import Result, Sluice

Run = Callable[..., "Result"]
SLUICE = str(Path(sys.executable).with_name("sluice"))
WAIT = 60.0


def _produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, f"r{i}".encode(), partition=partition)
    assert producer.flush(30) == 0, "records still in flight after 30s"


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for ``group`` without joining it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        answer = consumer.commit(offsets=tps, asynchronous=False)
        assert answer is not None and all(tp.error is None for tp in answer), answer
    finally:
        consumer.close()


def _closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


def _status_json(result: Result) -> dict[str, Any]:
    assert result.code == 0, str(result)
    document = json.loads(result.out)
    assert isinstance(document, dict), result.out
    return document


def _one(items: list[dict[str, Any]], key: str, value: str) -> dict[str, Any]:
    found = [item for item in items if item[key] == value]
    assert len(found) == 1, f"expected one {key}={value!r} in {items}"
    return found[0]


@pytest.fixture
def sleeper() -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """``sleeper()``: a ``sleep`` process (a pid that lives), stopped at teardown."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(["sleep", "300"])
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(10)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(10)


def test_topics_groups_and_lag_are_exact(
    sluice: Sluice,
    shared_broker: BrokerProcess,
    topic_factory: Callable[..., str],
    tmp_path: Path,
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = topic_factory(partitions=3)
    _produce(bootstrap, topic, {0: 10, 1: 12, 2: 8})
    group = f"g-{uuid.uuid4().hex[:10]}"
    _commit(bootstrap, group, {(topic, 0): 4, (topic, 1): 12, (topic, 2): 0})  # 6 + 0 + 8 left
    url = _closed_url()

    args = ("status", "--home", str(tmp_path), "--url", url, "--interval", "0.2")
    document = _status_json(sluice(*args, "--json"))
    assert list(document) == [
        *("time", "interval", "supervisor", "broker", "topics", "sizes", "groups"),
        *("connect", "streams"),
    ]
    assert document["supervisor"] is None
    broker = document["broker"]
    assert broker["reachable"] is True and broker["bootstrap"] == bootstrap
    assert broker["cluster_id"] and broker["brokers"][0]["port"] == int(bootstrap.split(":")[1])
    assert broker["topics"] >= 1 and broker["partitions"] >= 3
    segments = shared_broker.data_dir.glob(f"{topic}-*/*.log")
    on_disk = sum(segment.stat().st_size for segment in segments)
    assert on_disk > 0
    assert _one(document["topics"], "name", topic) == {
        "name": topic,
        "internal": False,
        "partitions": 3,
        "messages": 30,
        "size_bytes": on_disk,  # DescribeLogDirs: the partitions' segments
        "messages_per_s": 0.0,  # nobody writes to it while status samples
    }
    assert document["sizes"] == {"available": True, "note": None}
    assert _one(document["topics"], "name", "__consumer_offsets")["internal"] is True
    assert _one(document["groups"], "group", group) == {
        "group": group,
        "state": "Empty",
        "members": 0,
        "lag": 14,
    }
    assert document["connect"]["url"] == url and document["connect"]["reachable"] is False
    assert document["connect"]["connectors"] == []

    result = sluice(*args)
    assert result.code == 0, str(result)
    lines = result.out.splitlines()
    # the size as the table prints it: bytes below 1 KiB, else KiB (how many batches the
    # producer made, so the exact size, depends on timing)
    size = f"{on_disk} B" if on_disk < 1024 else f"{on_disk / 1024:.1f} KiB"
    assert [topic, "3", "30", *size.split(), "0.0"] in [line.split() for line in lines], result.out
    assert [group, "Empty", "0", "14"] in [line.split() for line in lines], result.out
    assert f"worker {url}: unreachable" in result.out
    assert "internal topic" in result.out and "__consumer_offsets" not in result.out
    assert "__consumer_offsets" in sluice(*args, "--all").out


def _up_json(
    home: Path, pid: int, bootstrap: str, components: list[dict[str, Any]], **extra: Any
) -> None:
    home.mkdir(exist_ok=True)
    state = {
        "pid": pid,
        "file": "/srv/sluice.yaml",
        "updated": time.time(),
        "bootstrap": bootstrap,
        "connect_url": None,
        "components": components,
        **extra,
    }
    (home / "up.json").write_text(json.dumps(state))


def _streams(
    name: str, app: str, application_id: str, pid: int | None, state: str
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "streams",
        "app": app,
        "application_id": application_id,
        "pid": pid,
        "state": state,
        "restarts": 1,
        "since": time.time() - 5,
        "log": f".sluice/logs/{name}.log",
    }


def test_streams_apps_come_from_the_state_of_sluice_up(
    run: Run,
    bootstrap: str,
    topic_factory: Callable[..., str],
    tmp_path: Path,
    sleeper: Callable[[], subprocess.Popen[bytes]],
) -> None:
    topic = topic_factory(partitions=2)
    _produce(bootstrap, topic, {0: 5, 1: 7})
    application_id = f"app-{uuid.uuid4().hex[:10]}"
    _commit(bootstrap, application_id, {(topic, 0): 5, (topic, 1): 2})  # 5 left
    supervisor, alive, gone = sleeper(), sleeper(), sleeper()
    _stop(gone)
    home = tmp_path / "home"
    _up_json(
        home,
        supervisor.pid,
        bootstrap,
        [
            {"name": "broker", "kind": "broker", "pid": alive.pid, "state": "running"},
            _streams("revenue-0", "revenue", application_id, alive.pid, "running"),
            _streams("revenue-1", "revenue", application_id, gone.pid, "running"),
            {
                **_streams("revenue-2", "revenue", application_id, None, "crash-loop"),
                "exit_code": 1,
                "exit": "exited 1",
                "last_error": "ProcessingError: orders[0]@257: processing failed",
                "failures": 4,
                "backoff": 16.0,
                "next_start": time.time() + 600,
            },
        ],
    )
    # up.json's broker wins over the environment; only -b on the command line overrides it
    env = {"SLUICE_BOOTSTRAP": "127.0.0.1:1"}
    document = _status_json(run("status", "--home", str(home), "--json", env=env))
    assert document["broker"]["bootstrap"] == bootstrap and document["broker"]["reachable"]
    assert document["supervisor"]["running"] is True
    assert document["supervisor"]["pid"] == supervisor.pid
    assert document["connect"] is None  # up.json: no Connect worker
    revenue = _one(document["streams"], "app", "revenue")
    assert revenue == {
        "app": "revenue",
        "application_id": application_id,
        "source": "supervisor",
        "instances_running": 1,
        "instances_total": 3,
        "group_state": "Empty",
        "members": 0,
        "lag": 5,
        "dead_letter_topic": None,
        "dead_letters": None,
    }
    components = {c["name"]: c for c in document["supervisor"]["components"]}
    assert components["revenue-0"]["alive"] is True
    assert components["revenue-1"]["alive"] is False

    result = run("status", "--home", str(home), "--interval", "0", env=env)
    assert result.code == 0, str(result)
    assert f"sluice up: running, pid {supervisor.pid}, file /srv/sluice.yaml" in result.out
    rows = [line.split() for line in result.out.splitlines()]
    assert ["revenue", application_id, "1/3", "Empty", "0", "5", "-", "sluice", "up"] in rows
    assert [
        "revenue-1",
        "streams",
        "running,",
        "pid",
        "gone",
        str(gone.pid),
        "1",
        "-",
        "-",
        "-",
    ] in (rows)
    # waiting for its next start: no pid, and not "pid gone"
    [crash_loop] = [line for line in result.out.splitlines() if line.startswith("revenue-2 ")]
    assert crash_loop.split()[:8] == [
        "revenue-2",
        "streams",
        "crash-loop,",
        "back-off",
        "16s,",
        "next",
        "start",
        "in",
    ], crash_loop
    assert crash_loop.split()[9:] == [
        "-",
        "1",
        "-",
        "exited",
        "1",
        "ProcessingError:",
        "orders[0]@257:",
        "processing",
        "failed",
    ], crash_loop
    assert components["revenue-2"]["backoff"] == 16.0
    assert "no Connect worker" in result.out

    _stop(supervisor)
    address = f"127.0.0.1:{free_port()}"
    result = run("status", "--home", str(home), "-b", address, "--interval", "0", env=env)
    assert result.code == 1, str(result)
    assert "sluice up: not running (state from " in result.out
    assert ["revenue", application_id, "1/3", "-", "-", "-", "-", "sluice", "up"] in [
        line.split() for line in result.out.splitlines()
    ], result.out
    assert result.err.startswith(f"error: cannot reach a broker at {address}"), result.err


def test_groups_with_changelog_topics_are_shown_as_streams_apps(
    sluice: Sluice, bootstrap: str, topic_factory: Callable[..., str], tmp_path: Path
) -> None:
    topic = topic_factory()
    _produce(bootstrap, topic, {0: 3})
    application_id = f"wc-{uuid.uuid4().hex[:10]}"
    create_topic(bootstrap, name=f"{application_id}-counts-changelog")
    _commit(bootstrap, application_id, {(topic, 0): 1})
    plain = f"g-{uuid.uuid4().hex[:10]}"
    _commit(bootstrap, plain, {(topic, 0): 1})

    args = ("status", "--home", str(tmp_path), "--url", _closed_url(), "--interval", "0")
    document = _status_json(sluice(*args, "--json"))
    assert _one(document["streams"], "app", application_id) == {
        "app": application_id,
        "application_id": application_id,
        "source": "topics",
        "instances_running": None,
        "instances_total": None,
        "group_state": "Empty",
        "members": 0,
        "lag": 2,
        "dead_letter_topic": None,
        "dead_letters": None,
    }
    assert plain not in [app["app"] for app in document["streams"]]
    changelog = _one(document["topics"], "name", f"{application_id}-counts-changelog")
    assert changelog["internal"] is True


def test_a_bad_state_file_is_named(run: Run, tmp_path: Path) -> None:
    (tmp_path / "up.json").write_text('{"pid": 12,')
    result = run("status", "--home", str(tmp_path))
    assert result.code == 2, str(result)
    assert result.err.startswith(f"error: {tmp_path / 'up.json'}:1: not valid JSON"), result.err
    (tmp_path / "up.json").write_text('{"pid": 12, "components": [{"kind": "broker"}]}')
    result = run("status", "--home", str(tmp_path))
    assert result.code == 2, str(result)
    assert f"{tmp_path / 'up.json'}: not a state file of `sluice up`" in result.err, result.err


def _wait_running(url: str, name: str, worker: subprocess.Popen[bytes]) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT
    last: object = None
    while time.monotonic() < deadline:
        assert worker.poll() is None, "the worker exited"
        try:
            with urllib.request.urlopen(f"{url}/connectors/{name}/status", timeout=5) as answer:
                last = json.loads(answer.read())
        except OSError as exc:
            last = exc
        states = (
            [last["connector"]["state"], *(t["state"] for t in last["tasks"])]
            if (isinstance(last, dict))
            else []
        )
        if len(states) > 1 and set(states) == {"RUNNING"}:
            assert isinstance(last, dict)
            return last
        time.sleep(0.2)
    raise AssertionError(f"connector {name} not running within {WAIT:g}s: {last!r}")


def test_connectors_and_tasks_of_a_real_worker(
    sluice: Sluice, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    name = f"copy-{uuid.uuid4().hex[:8]}"
    (deploy / "copy.yaml").write_text(
        f"name: {name}\nclass: file-sink\nconfig:\n    topics: {topic}\n"
        f"    file: {tmp_path / 'out.txt'}\n"
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [
                *(SLUICE, "connect", "standalone", str(deploy), "-b", shared_broker.bootstrap),
                *("--offsets", str(tmp_path / "offsets.json"), "--rest", f"127.0.0.1:{port}"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        expected = _wait_running(url, name, worker)
        args = ("status", "--home", str(tmp_path), "--url", url, "--interval", "0")
        document = _status_json(sluice(*args, "--json"))
        assert document["connect"]["reachable"] is True and document["connect"]["error"] is None
        worker_id = expected["connector"]["worker_id"]
        task_worker = expected["tasks"][0]["worker_id"]
        assert _one(document["connect"]["connectors"], "name", name) == {
            "name": name,
            "type": "sink",
            "state": "RUNNING",
            "worker_id": worker_id,
            "tasks": [{"id": 0, "state": "RUNNING", "worker_id": task_worker, "trace_line": None}],
            "trace_line": None,
        }
        result = sluice(*args)
        assert result.code == 0, str(result)
        rows = [line.split() for line in result.out.splitlines()]
        assert [name, "-", "sink", "RUNNING", worker_id] in rows, result.out
        assert [name, "0", "RUNNING", task_worker] in rows, result.out
    finally:
        worker.terminate()
        worker.wait(30)


def test_a_failed_task_shows_the_line_of_its_trace(
    sluice: Sluice, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = create_topic(shared_broker.bootstrap)
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    name = f"broken-{uuid.uuid4().hex[:8]}"
    (tmp_path / "a-file").write_text("")
    missing = tmp_path / "a-file" / "out.txt"  # its folder is a file: the task cannot start
    (deploy / "broken.yaml").write_text(
        f"name: {name}\nclass: file-sink\nconfig:\n    topics: {topic}\n    file: {missing}\n"
    )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(tmp_path / "worker.log", "wb") as log:
        worker = subprocess.Popen(
            [
                *(SLUICE, "connect", "standalone", str(deploy), "-b", shared_broker.bootstrap),
                *("--offsets", str(tmp_path / "offsets.json"), "--rest", f"127.0.0.1:{port}"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + WAIT
        trace: str | None = None
        while time.monotonic() < deadline and trace is None:
            assert worker.poll() is None, "the worker exited"
            try:
                with urllib.request.urlopen(f"{url}/connectors/{name}/status", timeout=5) as answer:
                    tasks = json.loads(answer.read())["tasks"]
                trace = next((t.get("trace") for t in tasks if t["state"] == "FAILED"), None)
            except OSError:
                pass
            time.sleep(0.2)
        assert trace is not None, f"task of {name} not FAILED within {WAIT:g}s"
        expected = f"FileExistsError: [Errno 17] File exists: '{tmp_path / 'a-file'}'"
        assert trace.rstrip().splitlines()[-1] == expected, trace

        args = ("status", "--home", str(tmp_path), "--url", url, "--interval", "0")
        document = _status_json(sluice(*args, "--json"))
        [task] = _one(document["connect"]["connectors"], "name", name)["tasks"]
        assert (task["state"], task["trace_line"]) == ("FAILED", expected)
        result = sluice(*args)
        assert result.code == 0, str(result)
        header = [line for line in result.out.splitlines() if line.startswith("CONNECTOR ")]
        assert header[0].split() == ["CONNECTOR", "TASK", "TYPE", "STATE", "WORKER", "TRACE"]
        [row] = [line for line in result.out.splitlines() if line.startswith(f"{name}  0 ")]
        assert row.split()[:3] == [name, "0", "FAILED"] and row.endswith(expected), result.out
    finally:
        worker.terminate()
        worker.wait(30)


def test_sizes_sum_every_log_dir_and_leave_future_replicas_out() -> None:
    """The DescribeLogDirs answer of a broker that serves it (Apache Kafka; ours does not yet),
    built with kio's own classes."""
    from kio.schema.describe_log_dirs.v4 import response as r
    from kio.schema.errors import ErrorCode
    from kio.static.primitive import i32, i32Timedelta, i64

    from sluice.cli._status import sizes_of

    def partition(index: int, size: int, future: bool = False) -> r.DescribeLogDirsPartition:
        return r.DescribeLogDirsPartition(
            partition_index=i32(index),
            partition_size=i64(size),
            offset_lag=i64(0),
            is_future_key=future,
        )

    def log_dir(code: ErrorCode, topics: dict[str, list[r.DescribeLogDirsPartition]]) -> Any:
        return r.DescribeLogDirsResult(
            error_code=code,
            log_dir="/data",
            topics=tuple(
                r.DescribeLogDirsTopic(name=name, partitions=tuple(partitions))
                for name, partitions in topics.items()
            ),
            total_bytes=i64(-1),
            usable_bytes=i64(-1),
        )

    answer = r.DescribeLogDirsResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
        error_code=ErrorCode.none,
        results=(
            log_dir(ErrorCode.none, {"orders": [partition(0, 100), partition(1, 50, future=True)]}),
            log_dir(ErrorCode.none, {"orders": [partition(1, 70)], "audit": [partition(0, 0)]}),
            log_dir(ErrorCode.kafka_storage_error, {"orders": [partition(2, 999)]}),
        ),
    )
    assert sizes_of(answer) == {"orders": 170, "audit": 0}
