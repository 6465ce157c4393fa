"""Standby replicas: a second instance keeps a warm copy of each task's state and, taking over,
restores only what its standby had not read yet."""

from __future__ import annotations

import uuid
from pathlib import Path

from sluice.dsl import App
from tests.conftest import BrokerProcess, create_topic
from tests.streams.runtime.fixtures import produce, read, wait_for

KEYS = 50


def _app(bootstrap: str, app_id: str, lines: str, out: str, state_dir: Path) -> App:
    app = App(
        app_id,
        bootstrap,
        stores="memory",  # without the standby, a take-over would restore every record
        state_dir=state_dir,
        commit_interval_ms=100,
        num_standby_replicas=1,
        session_timeout_ms=6000,
        statestore_cache_max_bytes=0,  # every update is read below
    )
    app.stream(lines).group_by_key().count(name="counts").to_stream().to(out)
    return app


def test_standby_takes_over_without_a_full_restore(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    lines, out = create_topic(bootstrap, 2), create_topic(bootstrap, 2)
    app_id = f"standby-{uuid.uuid4().hex[:8]}"
    first = _app(bootstrap, app_id, lines, out, tmp_path / "a")
    second = _app(bootstrap, app_id, lines, out, tmp_path / "b")
    first.start()
    second.start()
    try:
        a, b = first._runtime, second._runtime
        assert a is not None and b is not None

        def balanced() -> bool:
            ma, mb = a.metrics(), b.metrics()
            return (
                len(ma["tasks"]) == 1
                and len(mb["tasks"]) == 1
                and ma["standby_tasks"] == mb["tasks"]
                and mb["standby_tasks"] == ma["tasks"]
            )

        wait_for(balanced, "one active and one standby task on each instance")
        produce(bootstrap, lines, [(f"k{i % KEYS}", {}, 1_000 + i) for i in range(2_000)])
        read(bootstrap, out, until=lambda rs: len(rs) >= 2_000)
        assert b.thread is not None
        standby_task = b.thread.standbys.tasks  # type: ignore[union-attr]
        wait_for(
            lambda: sum(t.applied for t in standby_task.values()) >= 1,
            "the standby to read the changelog",
        )
        before = b.metrics()["restored_records"]
        first.close()
        wait_for(lambda: len(b.metrics()["tasks"]) == 2, "the survivor to take both tasks")
        restored = b.metrics()["restored_records"] - before
        # the changelog holds one record per key per commit: a full restore reads >= KEYS/2
        assert restored < KEYS // 4, f"restored {restored} records: the standby was not used"
        produce(bootstrap, lines, [(f"k{i}", {}, 10_000 + i) for i in range(KEYS)])
        final = read(
            bootstrap,
            out,
            until=lambda rs: (
                {k: v for k, v, _ in rs}.get("k0") == 41
                and len({k for k, v, _ in rs if v == 41}) == KEYS
            ),
        )
        counts = {k: v for k, v, _ in final}
        assert counts == {f"k{i}": 41 for i in range(KEYS)}, counts
    finally:
        first.close()
        second.close()
