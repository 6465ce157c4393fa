"""Standby replicas and warm-ups: copies of other instances' task state kept here.

The group leader places them (:mod:`sluice.streams.runtime.assignor`: ``num_standby_replicas``
standbys per stateful task, and warm-up replicas of tasks it means to move here). A standby task
owns the same stores as the active one (same directory under ``state_dir``) and keeps them
filled by reading their changelogs continuously with an assign-only consumer. When a standby
task becomes active here, its stores are adopted as they are and only the changelog records the
standby had not read yet are restored — fail-over without a full restore.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from sluice.streams.runtime import checkpoint
from sluice.streams.state.base import StateStore, StoreContext
from sluice.streams.task import TaskId
from sluice.streams.topology import Topology

__all__ = ["StandbyTask", "StandbyTasks"]

log = logging.getLogger("sluice.streams")


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

    def lag(self, task: StandbyTask, store: str) -> int | None:
        """Changelog records of ``store`` that the standby ``task`` has not applied yet, from the
        high watermark its consumer last saw (None before it saw one)."""
        topic, number = task.changelogs[store]
        try:
            low, high = self.consumer.get_watermark_offsets(
                TopicPartition(topic, number), cached=True
            )
        except Exception:  # librdkafka has not fetched the partition yet
            return None
        if high is None or high < 0:
            return None
        position = task.offsets.get((topic, number), OFFSET_BEGINNING)
        return max(0, high - (max(low, 0) if position < 0 else position))

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
