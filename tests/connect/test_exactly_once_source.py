"""Exactly-once source tasks (KIP-618): records and offsets in one transaction, zombies fenced,
and the settings refused where they cannot hold."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaException, TopicPartition
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
from fastapi.testclient import TestClient

from sluice import clients
from sluice.connect.rest import create_app
from sluice.connect.runtime.distributed import DEFAULTS, cluster_worker
from sluice.connect.runtime.exactly_once import ExactlyOnceSourceTaskRunner
from sluice.connect.runtime.herder import BadRequestError, Herder
from sluice.connect.runtime.offsets import FileOffsetStore, KafkaOffsetStore, offset_key
from sluice.connect.runtime.standalone import standalone_worker
from sluice.connect.runtime.topic_store import TopicMap, ensure_topic
from sluice.connectors.file.source import FileSourceConnector, FileSourceTask
from sluice.errors import ConfigError
from tests.conftest import SHARED_CONFIG, BrokerProcess
from tests.connect.plugins_for_tests import CountingSource
from tests.connect.worker_helpers import wait


def suffix() -> str:
    return uuid.uuid4().hex[:8]


def values(bootstrap: str, topic: str, isolation: str = "read_committed") -> list[str]:
    """Every value of the one-partition ``topic`` a consumer of ``isolation`` reads."""
    consumer = clients.consumer(bootstrap, **{"isolation.level": isolation})
    try:
        partition = TopicPartition(topic, 0, OFFSET_BEGINNING)
        try:  # read_committed: the end is the last stable offset
            low, end = consumer.get_watermark_offsets(partition, timeout=10)
        except KafkaException:  # not created yet
            return []
        consumer.assign([partition])
        found: list[str] = []
        for _ in range(60):
            [position] = consumer.position([TopicPartition(topic, 0)])
            if end <= low or position.offset >= end:
                break
            found += [m.value().decode() for m in consumer.consume(1000, 0.5) if not m.error()]
        return found
    finally:
        consumer.close()


@pytest.fixture
def eos_settings(shared_broker: BrokerProcess) -> dict[str, Any]:
    """Settings of a fresh distributed group with exactly-once source support enabled."""
    name = suffix()
    return {
        **DEFAULTS,
        "bootstrap.servers": shared_broker.bootstrap,
        "group.id": f"connect-{name}",
        "config.storage.topic": f"configs-{name}",
        "offset.storage.topic": f"offsets-{name}",
        "status.storage.topic": f"status-{name}",
        "offset.storage.partitions": "3",
        "offset.flush.interval.ms": "100",
        "session.timeout.ms": "6000",
        "heartbeat.interval.ms": "1000",
        "exactly.once.source.support": "enabled",
        "value.converter": "string",
        "key.converter": "string",
    }


@pytest.fixture
def offsets(eos_settings: dict[str, Any]) -> Iterator[KafkaOffsetStore]:
    """The group's offsets topic, read back as a map."""
    store = KafkaOffsetStore(
        TopicMap(
            eos_settings["bootstrap.servers"], eos_settings["offset.storage.topic"], partitions=3
        )
    )
    yield store
    store.map.close()


def file_task(
    name: str,
    lines: Path,
    topic: str,
    settings: dict[str, Any],
    store: KafkaOffsetStore,
    **extra: Any,
) -> ExactlyOnceSourceTaskRunner:
    config = {"connector.class": "file-source", "file": str(lines), "topic": topic, **extra}
    runner = ExactlyOnceSourceTaskRunner(name, 0, FileSourceTask(), config, settings, store)
    return runner


def test_records_and_offsets_are_committed_together(
    tmp_path: Path, eos_settings: dict[str, Any], offsets: KafkaOffsetStore
) -> None:
    bootstrap = eos_settings["bootstrap.servers"]
    topic = f"lines-{suffix()}"
    ensure_topic(bootstrap, topic, 1, compacted=False)
    lines = tmp_path / "in.txt"
    lines.write_text("".join(f"line {n}\n" for n in range(50)))
    runner = file_task("tail", lines, topic, eos_settings, offsets)
    assert runner.transactional_id == f"{eos_settings['group.id']}-tail-0"
    runner.start()
    try:
        wait(lambda: len(values(bootstrap, topic)) == 50, "50 committed lines")
        with lines.open("a") as handle:
            handle.write("".join(f"line {n}\n" for n in range(50, 60)))
        wait(lambda: len(values(bootstrap, topic)) == 60, "60 committed lines")
        position = lines.stat().st_size
        wait(
            lambda: (offsets.get("tail", {"file": str(lines)}) or {}).get("position") == position,
            "the offset of the last line read back (read_committed)",
        )
    finally:
        runner.stop()
    assert runner.state != "FAILED", runner.trace
    assert values(bootstrap, topic) == [f"line {n}" for n in range(60)]
    # transactions leave their markers in the log: offsets the records do not fill
    consumer = clients.consumer(bootstrap)
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    assert high > 60, f"no transaction markers: high watermark {high} for 60 records"


def test_a_restarted_task_fences_the_old_one_whose_open_transaction_never_counts(
    tmp_path: Path, eos_settings: dict[str, Any], offsets: KafkaOffsetStore
) -> None:
    bootstrap = eos_settings["bootstrap.servers"]
    topic = f"lines-{suffix()}"
    ensure_topic(bootstrap, topic, 1, compacted=False)
    lines = tmp_path / "in.txt"
    lines.write_text("".join(f"line {n}\n" for n in range(20)))
    interval = {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "600000"}
    zombie = file_task("tail", lines, topic, eos_settings, offsets, **interval)
    zombie.start()
    successor = None
    try:
        wait(lambda: zombie.metrics.source_record_write == 20, "20 lines produced, uncommitted")
        wait(lambda: len(values(bootstrap, topic, "read_uncommitted")) == 20, "20 in the log")
        assert values(bootstrap, topic) == []  # in an open transaction
        # the same task started elsewhere: it fences the zombie and aborts its transaction
        successor = file_task("tail", lines, topic, eos_settings, offsets)
        successor.start()
        wait(lambda: len(values(bootstrap, topic)) == 20, "the successor's 20 lines committed")
        with lines.open("a") as handle:
            handle.write("line 20\n")
        wait(lambda: len(values(bootstrap, topic)) == 21, "one more line committed")
    finally:
        zombie.stop()
        if successor is not None:
            successor.stop()
    assert zombie.state == "FAILED" and "fenced" in (zombie.trace or "").lower(), zombie.trace
    assert successor.state != "FAILED", successor.trace
    assert values(bootstrap, topic) == [f"line {n}" for n in range(21)]
    assert len(values(bootstrap, topic, "read_uncommitted")) == 41  # the zombie's 20 aborted


def test_interval_boundary_commits_when_the_interval_ends_or_on_stop(
    tmp_path: Path, eos_settings: dict[str, Any], offsets: KafkaOffsetStore
) -> None:
    bootstrap = eos_settings["bootstrap.servers"]
    topic = f"lines-{suffix()}"
    ensure_topic(bootstrap, topic, 1, compacted=False)
    lines = tmp_path / "in.txt"
    lines.write_text("a\nb\nc\n")
    interval = {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "600000"}
    runner = file_task("tail", lines, topic, eos_settings, offsets, **interval)
    runner.start()
    try:
        wait(lambda: len(values(bootstrap, topic, "read_uncommitted")) == 3, "3 lines in the log")
        assert values(bootstrap, topic) == []
        assert offsets.get("tail", {"file": str(lines)}) is None
    finally:
        runner.stop()  # a clean stop commits the open transaction
    assert runner.state != "FAILED", runner.trace
    assert values(bootstrap, topic) == ["a", "b", "c"]
    key = offset_key("tail", {"file": str(lines)})
    wait(lambda: (offsets.map.get(key) or {}).get("position") == 6, "the offset committed")


def test_a_distributed_group_runs_file_source_exactly_once(
    tmp_path: Path, eos_settings: dict[str, Any]
) -> None:
    bootstrap = eos_settings["bootstrap.servers"]
    topic = f"lines-{suffix()}"
    lines = tmp_path / "in.txt"
    lines.write_text("".join(f"{n}\n" for n in range(30)))
    worker = cluster_worker(eos_settings)
    client = TestClient(create_app(Herder(worker, timeout_s=10)))
    try:
        worker.start("w1:8083")
        wait(lambda: not worker.rebalancing, "the worker to join")
        config = {
            "connector.class": "file-source",
            "file": str(lines),
            "topic": topic,
            "exactly.once.support": "required",
        }
        answer = client.put("/connectors/lines/config", json=config)
        assert answer.status_code == 201, answer.text
        wait(lambda: len(values(bootstrap, topic)) == 30, "30 committed lines")
        [runner] = worker.tasks.values()
        assert isinstance(runner, ExactlyOnceSourceTaskRunner)
        assert runner.transactional_id == f"{eos_settings['group.id']}-lines-0"
        size = lines.stat().st_size
        wait(
            lambda: (
                [
                    o["offset"]["position"]
                    for o in client.get("/connectors/lines/offsets").json()["offsets"]
                ]
                == [size]
            ),
            "the committed offset shown by the REST API",
        )
    finally:
        client.close()
        worker.stop()
    assert values(bootstrap, topic) == [str(n) for n in range(30)]


def errors_of(client: TestClient, config: dict[str, Any]) -> dict[str, list[str]]:
    answer = client.put("/connector-plugins/file-source/config/validate", json=config)
    assert answer.status_code == 200, answer.text
    return {c["value"]["name"]: c["value"]["errors"] for c in answer.json()["configs"]}


@pytest.mark.parametrize(
    ("extra", "key", "message"),
    [
        ({"transaction.boundary": "connector"}, "transaction.boundary", "connector-defined"),
        ({"transaction.boundary": "sometimes"}, "transaction.boundary", "must be one of"),
        ({"exactly.once.support": "maybe"}, "exactly.once.support", "must be one of"),
        ({"offsets.storage.topic": "mine"}, "offsets.storage.topic", "not supported"),
        (
            {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "60000"},
            "transaction.boundary.interval.ms",
            "must be below the producer's transaction.timeout.ms (60000 ms)",
        ),
        ({"transaction.boundary.interval.ms": "0"}, "transaction.boundary.interval.ms", "at least"),
    ],
)
def test_settings_that_cannot_hold_are_refused_with_the_key(
    tmp_path: Path, eos_settings: dict[str, Any], extra: dict[str, str], key: str, message: str
) -> None:
    worker = cluster_worker(eos_settings)
    client = TestClient(create_app(Herder(worker, timeout_s=10)))
    try:
        config = {"connector.class": "file-source", "file": "x", "topic": "t", **extra}
        errors = errors_of(client, config)
        assert any(message in error for error in errors[key]), errors[key]
    finally:
        client.close()
        worker.stop()


def test_required_needs_an_enabled_worker_and_a_connector_that_supports_it(
    eos_settings: dict[str, Any],
) -> None:
    disabled = {**eos_settings, "exactly.once.source.support": "preparing"}
    worker = cluster_worker(disabled)
    client = TestClient(create_app(Herder(worker, timeout_s=10)))
    try:
        config = {
            "connector.class": "file-source",
            "file": "x",
            "topic": "t",
            "exactly.once.support": "required",
        }
        [error] = errors_of(client, config)["exactly.once.support"]
        assert "does not have exactly-once source support enabled" in error
        assert (
            errors_of(client, {**config, "exactly.once.support": "requested"}).get(
                "exactly.once.support", []
            )
            == []
        )
    finally:
        client.close()
        worker.stop()
    # a connector that does not say whether it supports it
    found = [
        message
        for key, message in _problems(CountingSource, {"exactly.once.support": "required"})
        if key == "exactly.once.support"
    ]
    assert any("does not say" in message for message in found), found
    assert _problems(FileSourceConnector, {"exactly.once.support": "required"}) == []


def _problems(cls: type, config: dict[str, Any]) -> list[tuple[str, str]]:
    from sluice.connect.runtime.exactly_once import problems

    worker = {"exactly.once.source.support": "enabled", "offset.storage.topic": "o"}
    return problems(cls, config, worker, distributed=True)


def test_a_bad_worker_setting_is_refused(eos_settings: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="must be one of disabled, preparing, enabled"):
        cluster_worker({**eos_settings, "exactly.once.source.support": "on"})


def test_a_standalone_worker_has_no_exactly_once_sources(
    tmp_path: Path, shared_broker: BrokerProcess
) -> None:
    settings = {
        "bootstrap.servers": shared_broker.bootstrap,
        "exactly.once.source.support": "enabled",
    }
    with pytest.raises(ConfigError, match="needs a distributed worker"):
        standalone_worker(settings, FileOffsetStore(tmp_path / "offsets.json"))
    runtime = standalone_worker(
        {"bootstrap.servers": shared_broker.bootstrap}, FileOffsetStore(tmp_path / "o")
    )
    runtime.start("127.0.0.1:8083")
    try:
        herder = Herder(runtime)
        config = {"name": "lines", "connector.class": "file-source", "file": "x", "topic": "t"}
        found = herder.validate({**config, "exactly.once.support": "required"})
        errors = {c["value"]["name"]: c["value"]["errors"] for c in found["configs"]}
        assert any("not have exactly-once" in e for e in errors["exactly.once.support"])
        with pytest.raises(BadRequestError, match="exactly-once"):
            herder.create_connector("lines", {**config, "exactly.once.support": "required"})
        assert herder.connectors() == []
        assert herder.validate({**config, "exactly.once.support": "requested"})["error_count"] == 0
    finally:
        runtime.stop()


def test_a_broker_killed_mid_flow_loses_and_doubles_nothing(
    tmp_path: Path, broker_factory: Callable[..., BrokerProcess]
) -> None:
    broker = broker_factory(SHARED_CONFIG)
    bootstrap = broker.bootstrap
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": "connect-kills",
        "offset.storage.topic": "offsets",
        "offset.flush.interval.ms": "100",
        "exactly.once.source.support": "enabled",
        "value.converter": "string",
        "key.converter": "string",
    }
    ensure_topic(bootstrap, "lines", 1, compacted=False)
    store = KafkaOffsetStore(TopicMap(bootstrap, "offsets"))
    lines = tmp_path / "in.txt"
    lines.touch()
    total = 400

    def append() -> None:  # 400 lines at about 100 a second
        for n in range(total):
            with lines.open("a") as handle:
                handle.write(f"line {n}\n")
            time.sleep(0.01)

    writer = threading.Thread(target=append)
    runner = file_task("tail", lines, "lines", settings, store)
    runner.start()
    writer.start()
    try:
        for _ in range(2):  # killed twice while lines flow
            time.sleep(1.0)
            broker.kill()
            time.sleep(0.3)
            broker.start()
        writer.join(30)
        wait(lambda: len(values(bootstrap, "lines")) >= total, f"{total} committed lines")
    finally:
        writer.join(30)
        runner.stop()
        store.map.close()
    assert runner.state != "FAILED", runner.trace
    assert values(bootstrap, "lines") == [f"line {n}" for n in range(total)]


def test_a_refused_record_aborts_its_transaction_and_fails_the_task(
    tmp_path: Path, eos_settings: dict[str, Any], offsets: KafkaOffsetStore
) -> None:
    bootstrap = eos_settings["bootstrap.servers"]
    topic = f"lines-{suffix()}"
    admin = clients.admin(bootstrap)
    small = NewTopic(topic, 1, 1, config={"max.message.bytes": "200"})
    admin.create_topics([small])[topic].result(15)
    lines = tmp_path / "in.txt"
    lines.write_text("a\nb\n")
    runner = file_task("tail", lines, topic, eos_settings, offsets)
    runner.start()
    try:
        wait(lambda: values(bootstrap, topic) == ["a", "b"], "2 committed lines")
        with lines.open("a") as handle:  # one write: one poll, one transaction
            handle.write("c\n" + "x" * 1000 + "\nd\n")
        wait(lambda: runner.state == "FAILED", "the task failed")
    finally:
        runner.stop()
    assert "not committed" in (runner.trace or ""), runner.trace
    assert "aborted" in (runner.trace or ""), runner.trace
    assert values(bootstrap, topic) == ["a", "b"]  # nothing of the aborted transaction
    assert (offsets.get("tail", {"file": str(lines)}) or {}).get("position") == 4
