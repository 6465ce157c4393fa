"""Exactly-once keeps one transactional id per application instance across restarts.

The process id lives in ``<state_dir>/<application id>/kafka-streams-process-metadata`` (as
Kafka Streams keeps it), so a restarted instance comes back as ``<application id>-<process
id>-1``: its InitProducerId bumps the epoch and fences whatever still held the id. Two running
instances cannot share a state directory (it is locked), and instances with state directories
of their own have ids of their own.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer

from sluice import wire
from sluice.dsl import App
from sluice.streams import StreamsError
from sluice.streams.runtime.state_directory import StateDirectory
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import produce, read, wait_for


def _app(bootstrap: str, app_id: str, source: str, out: str, state_dir: Path) -> App:
    app = App(
        app_id,
        bootstrap,
        processing_guarantee="exactly_once_v2",
        stores="memory",
        state_dir=state_dir,
        commit_interval_ms=100,
    )
    app.stream(source).map_values(lambda v: v["n"] * 10).to(out)
    return app


def _transactions(bootstrap: str, prefix: str) -> dict[str, Any]:
    """DescribeTransactions of every transactional id starting with ``prefix`` (one broker)."""
    with wire.connect(bootstrap, timeout=10) as conn:
        listed = conn.call(wire.LIST_TRANSACTIONS, state_filters=(), producer_id_filters=())
        ids = tuple(
            sorted(
                t.transactional_id
                for t in listed.transaction_states
                if t.transactional_id.startswith(prefix)
            )
        )
        if not ids:
            return {}
        described = conn.call(wire.DESCRIBE_TRANSACTIONS, transactional_ids=ids)
        return {t.transactional_id: t for t in described.transaction_states}


def _running(app: App) -> Any:
    runtime = app._runtime
    assert runtime is not None
    wait_for(lambda: runtime.state == "RUNNING" and bool(runtime.metrics()["tasks"]), "running")
    return runtime


def test_a_restart_keeps_the_transactional_id_and_fences_the_previous_holder(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    source, out = create_topic(bootstrap), create_topic(bootstrap)
    app_id = f"txid-{uuid.uuid4().hex[:8]}"
    state = tmp_path / "state"

    first = _app(bootstrap, app_id, source, out, state)
    first.start()
    try:
        runtime = _running(first)
        produce(bootstrap, source, [("a", {"n": 1}, 1), ("b", {"n": 2}, 2)])
        read(bootstrap, out, until=lambda rs: len(rs) >= 2, committed_only=True)
        process_id = runtime.thread.process_id
    finally:
        first.close()
    saved = json.loads((state / app_id / "kafka-streams-process-metadata").read_text())
    assert saved == {"processId": process_id}
    transactional_id = f"{app_id}-{process_id}-1"
    before = _transactions(bootstrap, app_id)
    assert list(before) == [transactional_id]

    # the previous incarnation, still alive with a transaction open
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(out, b'"zombie"', b"z")
    assert zombie.flush(30) == 0

    second = _app(bootstrap, app_id, source, out, state)
    second.start()
    try:
        runtime = _running(second)
        assert runtime.thread.process_id == process_id
        produce(bootstrap, source, [("c", {"n": 3}, 3)])
        results = read(bootstrap, out, until=lambda rs: len(rs) >= 3, committed_only=True)
        assert [(k, v) for k, v, _ in results] == [("a", 10), ("b", 20), ("c", 30)]
        after = _transactions(bootstrap, app_id)
        assert list(after) == [transactional_id]  # the same id: no new one left behind
        assert after[transactional_id].producer_epoch > before[transactional_id].producer_epoch + 1
        with pytest.raises(KafkaException) as fenced:
            zombie.commit_transaction(30)
        assert "fenced" in str(fenced.value).lower(), str(fenced.value)
    finally:
        second.close()


def test_two_running_instances_cannot_share_a_state_directory(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    source, out = create_topic(bootstrap, 2), create_topic(bootstrap, 2)
    app_id = f"shared-{uuid.uuid4().hex[:8]}"
    first = _app(bootstrap, app_id, source, out, tmp_path / "one")
    same_dir = _app(bootstrap, app_id, source, out, tmp_path / "one")
    own_dir = _app(bootstrap, app_id, source, out, tmp_path / "two")
    first.start()
    try:
        _running(first)
        with pytest.raises(StreamsError) as refused:
            same_dir.start()
        assert str(refused.value).startswith(
            f"the state directory {tmp_path / 'one' / app_id} is locked by another running "
            f"instance of {app_id!r} (pid "
        )
        assert str(refused.value).endswith("give each its own state_dir (state.dir)")
        own_dir.start()
        _running(own_dir)
        wait_for(lambda: len(_transactions(bootstrap, app_id)) == 2, "two transactional ids")
        ids = set(_transactions(bootstrap, app_id))
        assert ids == {
            f"{app_id}-{app._runtime.thread.process_id}-1"  # type: ignore[union-attr]
            for app in (first, own_dir)
        }
    finally:
        own_dir.close()
        first.close()
    # closed: the directory can be taken again, by the same identity
    again = StateDirectory(tmp_path / "one", app_id)
    again.lock()
    try:
        assert again.process_id() == first._runtime.thread.process_id  # type: ignore[union-attr]
    finally:
        again.unlock()


def test_an_unreadable_process_file_is_replaced_by_a_new_id(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, "app")
    first = directory.process_id()
    assert uuid.UUID(first)
    assert directory.process_id() == first
    (tmp_path / "app" / "kafka-streams-process-metadata").write_text("{not json")
    replaced = directory.process_id()
    assert replaced != first
    assert StateDirectory(tmp_path, "app").process_id() == replaced


def test_the_lock_holds_until_unlocked(tmp_path: Path) -> None:
    holder, other = StateDirectory(tmp_path, "app"), StateDirectory(tmp_path, "app")
    holder.lock()
    try:
        with pytest.raises(StreamsError, match=r"is locked by another running instance"):
            other.lock()
    finally:
        holder.unlock()
    other.lock()
    other.unlock()
