"""Making the active task of an assigned partition: its stores opened and the restorations that
bring them up to date (Kafka Streams' active task creator).

A store restores from its changelog starting at the offset of the task's checkpoint (persistent
stores; the checkpoint is removed at once, since local state may run ahead of the changelog from
then on), or from the start after a wipe. A standby of the task kept by this process hands its
stores over and only what it has not read yet is restored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING

from sluice.streams.config import StreamsConfig
from sluice.streams.errors import handler_from
from sluice.streams.runtime import checkpoint
from sluice.streams.runtime.collector import KafkaCollector
from sluice.streams.runtime.restore import Restoration
from sluice.streams.runtime.standby import StandbyTasks
from sluice.streams.runtime.topics import InternalTopics
from sluice.streams.state import StateStore
from sluice.streams.state.cache import ThreadCache
from sluice.streams.task import StreamTask, TaskCounters, TaskId
from sluice.streams.topology import Topology

__all__ = ["TaskCreator", "now_ms"]

log = logging.getLogger("sluice.streams")


def now_ms() -> int:
    """Wall-clock time in ms (the tasks' clock)."""
    return int(time.time() * 1000)


class TaskCreator:
    """Creates the tasks of one stream thread; the arguments are what every task shares."""

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig,
        topics: InternalTopics,
        state_dir: Path,
        *,
        collector: KafkaCollector,
        global_stores: dict[str, StateStore],
        standbys: StandbyTasks | None,
        dead_letter: Callable[..., None],
        counters: TaskCounters,
    ) -> None:
        self.topology = topology
        self.config = config
        self.topics = topics
        self.state_dir = state_dir
        self.collector = collector
        self.global_stores = global_stores
        self.standbys = standbys
        self.dead_letter = dead_letter
        self.counters = counters
        self._subs = {sub.id: sub for sub in topology.subtopologies()}
        self.thread_cache = ThreadCache(config.statestore_cache_max_bytes)
        """The record caches' budget, shared by the thread's tasks (Kafka's ``ThreadCache``)."""
        self._on_deserialization_error = handler_from(
            config.deserialization_exception_handler, "deserialization"
        )
        self._on_processing_error = handler_from(config.processing_exception_handler, "processing")
        self._on_production_error = handler_from(config.production_exception_handler, "production")

    def create(self, task_id: TaskId) -> tuple[StreamTask, list[Restoration]]:
        """The task and the restorations its stores need before it processes."""
        directory = self.state_dir / str(task_id)
        standby = None if self.standbys is None else self.standbys.take(task_id)
        if standby is not None:
            self.standbys.checkpoint_one(standby)  # type: ignore[union-attr]
        offsets = checkpoint.read(directory)
        checkpoint.clear(directory)  # from now on local state may run ahead of the changelog
        task = StreamTask(
            task_id,
            self.topology,
            self._subs[task_id.subtopology],
            application_id=self.config.application_id,
            collector=self.collector,
            clock=now_ms,
            global_stores=self.global_stores,
            changelog_topic=self._logged_changelog,
            state_dir=self.state_dir,
            on_deserialization_error=self._on_deserialization_error,
            on_processing_error=self._on_processing_error,
            on_production_error=self._on_production_error,
            dead_letter=self.dead_letter,
            adopted_stores=None if standby is None else standby.stores,
            counters=self.counters,
            thread_cache=self.thread_cache,
        )
        work = []
        for name, store in task.stores.items():
            topic = self.topics.changelog_topic(name)
            if topic is None:
                continue
            partition = (topic, task_id.partition)
            if standby is not None and partition in standby.offsets:
                # the standby's stores: only what it has not read yet
                start: int | None = standby.offsets[partition]
                if start == OFFSET_BEGINNING:
                    start = None
            else:
                start = offsets.get(partition) if store.persistent else None
                if start is None:
                    store.wipe()
            work.append(Restoration(store, topic, task_id.partition, start))
        if standby is not None:
            log.info("task %s takes over the stores of its standby", task_id)
        return task, work

    def _logged_changelog(self, store: str) -> str | None:
        if store in self.topology.source_changelogs:
            return None  # restored from its source topic, never written to
        return self.topics.changelog_topic(store)
