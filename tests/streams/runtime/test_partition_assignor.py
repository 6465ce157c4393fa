"""The leader's side of a Streams rebalance over a real topology (no broker): what it does when
a changelog's end offset cannot be read (its leader moving, say)."""

from __future__ import annotations

from sluice.dsl import App
from sluice.streams.runtime.assignor import RUNNING
from sluice.streams.runtime.group_protocol import Assignment, Subscription
from sluice.streams.runtime.partition_assignor import StreamsPartitionAssignor
from sluice.streams.task import TaskId

TASKS = [TaskId(0, 0), TaskId(0, 1)]


def _assignor(end_offset: dict[int, int | None]) -> StreamsPartitionAssignor:
    app = App("app")
    app.stream("in").group_by_key().count(name="counts")
    return StreamsPartitionAssignor(
        app.topology,
        {"in": 2},
        lambda store: f"app-{store}-changelog",
        lambda topic, partition: end_offset[partition],
        standby_replicas=0,
        max_warmup_replicas=2,
        acceptable_recovery_lag=100,
        probing_rebalance_interval_ms=600_000,
    )


def _subscription(process: str, active: set[TaskId]) -> bytes:
    sums = {task: RUNNING for task in active}
    return Subscription(["in"], process, None, None, active, set(), sums).encode()


def _assign(end_offset: dict[int, int | None]) -> dict[str, Assignment]:
    members = [("a", _subscription("pa", set(TASKS))), ("b", _subscription("pb", set()))]
    answer = _assignor(end_offset).assign(members)
    return {member: Assignment.decode(data) for member, data in answer.items()}


def test_known_ends_move_a_task_with_a_small_lag_at_once() -> None:
    plan = _assign({0: 50, 1: 50})  # within acceptable_recovery_lag: b takes one task now
    assert len(plan["a"].active) == len(plan["b"].active) == 1
    assert plan["a"].probe_after_ms is None and not plan["b"].warmup


def test_an_unknown_end_keeps_the_task_with_its_owner_and_probes_later() -> None:
    plan = _assign({0: 50, 1: None})  # 1's end unknown: only its owner counts as caught up
    assert TaskId(0, 1) in plan["a"].active
    assert TaskId(0, 1) in plan["b"].warmup  # b warms up for it instead
    assert plan["a"].probe_after_ms == plan["b"].probe_after_ms == 600_000
