"""Standby replicas: warm copies of other instances' task state (``num_standby_replicas``).

After each rebalance every instance looks up the whole group's assignment (``DescribeGroups``)
and derives, the same way on every instance, who keeps a standby of each task: the
``num_standby_replicas`` members that follow the active owner in member-id order. A standby
task owns the same stores as the active one (same directory under ``state_dir``) and keeps them
filled by reading their changelogs continuously with an assign-only consumer. When a standby
task becomes active here, its stores are adopted as they are and only the changelog records the
standby had not read yet are restored — fail-over without a full restore.

>>> standby_owners(["m1", "m2", "m3"], active="m2", replicas=1)
['m3']
>>> standby_owners(["m1", "m2", "m3"], active="m3", replicas=2)
['m1', 'm2']
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from sluice.streams.runtime import checkpoint
from sluice.streams.state.base import StateStore, StoreContext
from sluice.streams.task import TaskId
from sluice.streams.topology import Topology

__all__ = ["StandbyTask", "StandbyTasks", "standby_owners"]

log = logging.getLogger("sluice.streams")


def standby_owners(members: Sequence[str], active: str, replicas: int) -> list[str]:
    """The members that keep a standby of a task ``active`` runs (never ``active`` itself)."""
    ordered = sorted(members)
    start = ordered.index(active)
    others = [ordered[(start + i) % len(ordered)] for i in range(1, len(ordered))]
    return sorted(others[:replicas])


def standby_tasks_of(
    admin: Any,
    group_id: str,
    me: str,
    tasks_for: Callable[[list[TopicPartition]], Iterable[TaskId]],
    replicas: int,
) -> set[TaskId]:
    """The tasks member ``me`` keeps standbys of, from the whole group's assignment
    (``tasks_for`` maps a member's partitions to its tasks); none when the group cannot be
    described — no standbys this round rather than no processing."""
    try:
        group = admin.describe_consumer_groups([group_id])[group_id].result(30)
    except Exception as error:
        log.warning("cannot describe the group for standby replicas: %s", error)
        return set()
    owners: dict[TaskId, str] = {}
    for member in group.members:
        assignment = member.assignment.topic_partitions if member.assignment else []
        for task_id in tasks_for(assignment):
            owners[task_id] = member.member_id
    members = [m.member_id for m in group.members]
    if me not in members:
        return set()
    return {
        task_id
        for task_id, active in owners.items()
        if active != me and me in standby_owners(members, active, replicas)
    }


def _never_sends(topic: str, partition: int, key: bytes, value: bytes | None, ts: int) -> None:
    raise AssertionError("a standby store is only restored, never written")


@dataclass
class StandbyTask:
    """The stores of one task kept here as a standby, and how far each changelog was read."""

    id: TaskId
    stores: dict[str, StateStore]
    changelogs: dict[str, tuple[str, int]]  # store -> (topic, partition)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # next offset to read
    applied: int = 0


class StandbyTasks:
    """Every standby task of this instance, fed by one consumer."""

    def __init__(
        self,
        topology: Topology,
        changelog_topic: Callable[[str], str | None],
        consumer: Consumer,
        state_dir: Path,
    ) -> None:
        self.topology = topology
        self.changelog_topic = changelog_topic
        self.consumer = consumer
        self.state_dir = state_dir
        self.tasks: dict[TaskId, StandbyTask] = {}
        self._subs = {sub.id: sub for sub in topology.subtopologies()}
        self._by_partition: dict[tuple[str, int], list[tuple[StandbyTask, StateStore]]] = {}

    def update(self, wanted: set[TaskId]) -> None:
        """Keep standbys of exactly ``wanted`` (stateful tasks only); re-point the consumer."""
        for task_id in [t for t in self.tasks if t not in wanted]:
            self._close(self.tasks.pop(task_id))
        for task_id in sorted(wanted):
            if task_id not in self.tasks and self._subs[task_id.subtopology].stores:
                self.tasks[task_id] = self._create(task_id)
        self._reassign()

    def take(self, task_id: TaskId) -> StandbyTask | None:
        """Hand a standby over to become active here (its stores stay open)."""
        task = self.tasks.pop(task_id, None)
        if task is not None:
            self._reassign()
        return task

    def _create(self, task_id: TaskId) -> StandbyTask:
        directory = self.state_dir / str(task_id)
        saved = checkpoint.read(directory)
        checkpoint.clear(directory)
        stores: dict[str, StateStore] = {}
        changelogs: dict[str, tuple[str, int]] = {}
        offsets: dict[tuple[str, int], int] = {}
        for name in self._subs[task_id.subtopology].stores:
            topic = self.changelog_topic(name)
            if topic is None:
                continue
            store = self.topology.stores[name].build()
            store.init(StoreContext(None, task_id.partition, _never_sends, directory / name))
            partition = (topic, task_id.partition)
            start = saved.get(partition) if store.persistent else None
            if start is None:
                store.wipe()
                start = OFFSET_BEGINNING
            stores[name] = store
            changelogs[name] = partition
            offsets[partition] = start
        log.info("standby task %s created", task_id)
        return StandbyTask(task_id, stores, changelogs, offsets)

    def _reassign(self) -> None:
        self._by_partition = {}
        assignment = []
        for task in self.tasks.values():
            for name, changelog in task.changelogs.items():
                self._by_partition.setdefault(changelog, []).append((task, task.stores[name]))
            for (topic, number), offset in task.offsets.items():
                assignment.append(TopicPartition(topic, number, offset))
        if assignment:
            self.consumer.assign(assignment)
        else:
            self.consumer.unassign()

    def poll(self, max_records: int = 10_000) -> int:
        """Apply what the changelogs have that the standbys have not; never blocks."""
        if not self.tasks:
            return 0
        applied = 0
        for message in self.consumer.consume(max_records, 0):
            if message.error() is not None:
                continue
            partition = (str(message.topic()), int(message.partition() or 0))
            targets = self._by_partition.get(partition)
            if not targets:
                continue
            key = message.key()
            offset = int(message.offset() or 0)
            if key is not None:
                timestamp = int(message.timestamp()[1])
                for task, store in targets:
                    store.restore(key, message.value(), timestamp)
                    task.applied += 1
            for task, _ in targets:
                task.offsets[partition] = offset + 1
            applied += 1
        return applied

    def checkpoint(self) -> None:
        """Make standby stores durable and record how far they are (persistent stores only)."""
        for task in self.tasks.values():
            for store in task.stores.values():
                store.flush_restored()
            saved = {
                partition: offset
                for name, partition in task.changelogs.items()
                if task.stores[name].persistent and (offset := task.offsets.get(partition, -1)) >= 0
            }
            if saved:
                checkpoint.write(self.state_dir / str(task.id), saved)

    def _close(self, task: StandbyTask) -> None:
        self.checkpoint_one(task)
        for store in task.stores.values():
            store.close()

    def checkpoint_one(self, task: StandbyTask) -> None:
        """Checkpoint one standby (before it is closed)."""
        tasks, self.tasks = self.tasks, {task.id: task}
        try:
            self.checkpoint()
        finally:
            self.tasks = tasks

    def close(self) -> None:
        """Checkpoint and close every standby."""
        for task in self.tasks.values():
            self._close(task)
        self.tasks.clear()
