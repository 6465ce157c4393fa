"""Which tasks this stream thread runs: joining the group again and taking up what it assigns.

A :class:`Rebalancer` owns the thread's tasks, active and suspended. On a rebalance (after
the thread has committed, Kafka Streams' eager protocol) every active task is suspended, the
member joins the group ``application_id`` again (:mod:`sluice.streams.runtime.membership`)
with what it holds — its suspended tasks, its standbys, the offset sums of the task
directories on disk (:mod:`sluice.streams.runtime.partition_assignor`) — and, when it leads,
places every task where its state is (:mod:`sluice.streams.runtime.assignor`). Then it takes
up its part: tasks that come back are resumed, not rebuilt; new ones are created and restored
from their changelogs; suspended tasks not assigned any more are closed; the standbys and
warm-ups are kept assigned; the consumer reads partition *p* of a sub-topology's topics for
task ``(sub-topology, p)``. A leader whose assignment asks for it probes again later (after
warm-ups). After a transaction aborted outside a commit, :meth:`Rebalancer.revive_tasks`
rebuilds the active tasks of the same assignment without joining the group.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from confluent_kafka import OFFSET_STORED, Consumer, KafkaException, TopicPartition

from sluice import clients
from sluice.streams.config import StreamsConfig
from sluice.streams.runtime.assignor import RUNNING
from sluice.streams.runtime.group_protocol import Assignment, Subscription
from sluice.streams.runtime.membership import GroupMembership
from sluice.streams.runtime.partition_assignor import (
    StreamsPartitionAssignor,
    offset_sums_on_disk,
)
from sluice.streams.runtime.restore import Restoration, restore
from sluice.streams.runtime.standby import StandbyTasks
from sluice.streams.runtime.task_creator import TaskCreator
from sluice.streams.runtime.topics import InternalTopics
from sluice.streams.task import StreamTask, TaskId
from sluice.streams.topology import Topology

__all__ = ["Rebalancer"]

log = logging.getLogger("sluice.streams")

COMMITTED_TIMEOUT_S = 30.0
"""How long the committed offsets of a new assignment are asked for while the group's
coordinator moves (Kafka's consumer: ``default.api.timeout.ms``, 60 s)."""

Partition = tuple[str, int]


class Rebalancer:
    """The tasks of one stream thread and how they follow the group; see the module docstring.

    The thread commits (or loses its work) before :meth:`rebalance`, and routes the records
    of the partitions it returns to their tasks; ``close_task`` closes a task that went
    elsewhere (writing its checkpoints), ``track_restorations`` shows restorations in the
    metrics, ``end_offset`` is the end of a changelog partition (the leader's view of a task's
    state).
    """

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig,
        topics: InternalTopics,
        *,
        process_id: str,
        state_dir: Path,
        membership: GroupMembership,
        consumer: Consumer,
        restore_consumer: Consumer,
        standbys: StandbyTasks | None,
        creator: TaskCreator,
        skip_topics: list[str],
        end_offset: Callable[[str, int], int | None],
        close_task: Callable[[StreamTask], None],
        track_restorations: Callable[[list[tuple[str, Restoration]]], None],
    ) -> None:
        self._config = config
        self._process_id = process_id
        self._state_dir = state_dir
        self._membership = membership
        self._consumer = consumer
        self._restore_consumer = restore_consumer
        self._standbys = standbys
        self._creator = creator
        self._close_task = close_task
        self._track_restorations = track_restorations
        self._sub_of_topic = {
            t: sub.id for sub in topology.subtopologies() for t in sub.source_topics
        }
        self.tasks: dict[TaskId, StreamTask] = {}
        """The active tasks."""
        self._suspended: dict[TaskId, StreamTask] = {}
        self.restored = 0
        """Records restored into the stores of active tasks."""
        self.assignment = Assignment([])
        """This member's latest assignment (with every instance's partitions, by address)."""
        self._probe_at: float | None = None
        self._assignor = StreamsPartitionAssignor(
            topology,
            topics.partitions,
            topics.changelog_topic,
            end_offset,
            standby_replicas=config.num_standby_replicas,
            max_warmup_replicas=config.max_warmup_replicas,
            acceptable_recovery_lag=config.acceptable_recovery_lag,
            probing_rebalance_interval_ms=config.probing_rebalance_interval_ms,
            skip_topics=skip_topics,
        )

    def topics(self) -> list[str]:
        """The topics the consumer reads."""
        return self._assignor.topics()

    def tasks_of(self, partitions: Sequence[tuple[str, int]]) -> set[TaskId]:
        """The tasks that ``partitions`` (of any member) make."""
        subs = self._sub_of_topic
        return {TaskId(subs[topic], p) for topic, p in partitions if topic in subs}

    def probe_due(self) -> bool:
        """Whether the probing rebalance the leader planned is due."""
        return self._probe_at is not None and time.monotonic() >= self._probe_at

    def rebalance(self) -> dict[TaskId, list[Partition]]:
        """Suspend every task, join the group again and take up what the leader assigned;
        returns the partitions of each active task (in task order)."""
        self._probe_at = None
        self._suspended.update(self.tasks)
        self.tasks.clear()
        self._consumer.unassign()
        subscription = Subscription(
            self._assignor.topics(),
            self._process_id,
            self._config.application_server,
            self._config.consumer_config.get("client.rack"),
            set(self._suspended),
            set() if self._standbys is None else set(self._standbys.tasks),
            self._offset_sums(),
        )
        assignment = Assignment.decode(
            self._membership.join(subscription.encode(), self._assignor.assign)
        )
        # replaced whole, read from other threads: where every partition is (interactive
        # queries) is known as soon as it arrives, before restoring (Kafka's onAssignment)
        self.assignment = assignment
        if self._membership.lost.is_set():
            # dropped while joining (after the thread's commit): others may have processed
            # its partitions meanwhile, so its suspended tasks are rebuilt, not resumed
            for task in self._suspended.values():
                task.close()
            self._suspended.clear()
        self._membership.lost.clear()
        wanted = self._take_up(assignment)
        if assignment.probe_after_ms is not None and self._membership.leader:
            self._probe_at = time.monotonic() + assignment.probe_after_ms / 1000
        return wanted

    def lose_tasks(self) -> None:
        """Close every task, active and suspended, without a commit (the group moved on while
        the thread had uncommitted work: Kafka Streams' ``TaskMigratedException``)."""
        for task in list(self.tasks.values()) + list(self._suspended.values()):
            task.close()
        self.tasks.clear()
        self._suspended.clear()

    def revive_tasks(self) -> dict[TaskId, list[Partition]]:
        """Close every active task without a commit and build it again, in this member's
        assignment, without joining the group (Kafka Streams' ``TaskCorruptedException``,
        ``closeDirtyAndRevive``); returns the partitions of each task, as :meth:`rebalance`.

        For after an aborted transaction: the stores may hold updates of the aborted work (and
        under exactly-once no checkpoint is on disk while a task runs), so each task is made
        anew — its stores wiped and restored from their changelogs, which hold committed
        records only — and the consumer reads its partitions again from the committed offsets
        (the records fetched meanwhile are dropped). Standbys stay as they are."""
        for task in self.tasks.values():
            task.close()
        self.tasks.clear()
        self._consumer.unassign()
        assignment = self.assignment
        taken = self._build(
            self._tasks_for([TopicPartition(t, p) for t, p in assignment.partitions])
        )
        self._assign_from_committed(assignment)
        log.info("revived tasks %s", ", ".join(str(t) for t in sorted(self.tasks)) or "none")
        return taken

    def close_suspended(self) -> None:
        """Close the suspended tasks (on shutdown)."""
        for task in self._suspended.values():
            task.close()
        self._suspended.clear()

    def _tasks_for(self, partitions: list[TopicPartition]) -> dict[TaskId, list[Partition]]:
        wanted: dict[TaskId, list[Partition]] = {}
        for tp in partitions:
            sub = self._sub_of_topic.get(tp.topic)
            if sub is not None:
                wanted.setdefault(TaskId(sub, tp.partition), []).append((tp.topic, tp.partition))
        return wanted

    def _offset_sums(self) -> dict[TaskId, int]:
        """What this instance holds of each task's changelogs (see ``partition_assignor``)."""
        sums = offset_sums_on_disk(self._state_dir)
        if self._standbys is not None:
            for task in self._standbys.tasks.values():
                sums[task.id] = sum(max(o, 0) for o in task.offsets.values())
        for task_id in self._suspended:
            sums[task_id] = RUNNING
        return sums

    def _take_up(self, assignment: Assignment) -> dict[TaskId, list[Partition]]:
        """Create (or resume) the assigned tasks, restore them, point the consumer at their
        partitions from the committed offsets, and keep the standbys and warm-ups assigned."""
        wanted = self._tasks_for([TopicPartition(t, p) for t, p in assignment.partitions])
        for task_id in [t for t in self._suspended if t not in wanted]:
            self._close_task(self._suspended.pop(task_id))
        taken = self._build(wanted)
        if self._standbys is not None:
            self._standbys.update(assignment.standby | assignment.warmup)
        self._assign_from_committed(assignment)
        log.info(
            "assigned %d partitions, tasks %s",
            len(assignment.partitions),
            ", ".join(str(t) for t in sorted(self.tasks)) or "none",
        )
        if assignment.standby or assignment.warmup:
            log.info(
                "standby tasks %s, warm-up tasks %s",
                ", ".join(str(t) for t in sorted(assignment.standby)) or "none",
                ", ".join(str(t) for t in sorted(assignment.warmup)) or "none",
            )
        return taken

    def _build(self, wanted: dict[TaskId, list[Partition]]) -> dict[TaskId, list[Partition]]:
        """Resume the suspended tasks among ``wanted``, create the others and restore them."""
        restorations: list[Restoration] = []
        tracked: list[tuple[str, Restoration]] = []
        taken: dict[TaskId, list[Partition]] = {}
        for task_id, task_partitions in sorted(wanted.items()):
            task = self._suspended.pop(task_id, None)
            if task is None:
                task, work = self._creator.create(task_id)
                restorations.extend(work)
                tracked.extend((str(task_id), item) for item in work)
            self.tasks[task_id] = task
            taken[task_id] = task_partitions
        self._track_restorations(tracked)
        restore(self._restore_consumer, restorations)
        self.restored += sum(r.restored for r in restorations)
        return taken

    def _assign_from_committed(self, assignment: Assignment) -> None:
        """Point the consumer at the assigned partitions from their committed offsets (stable
        ones under read_committed), read here and asked again while the group's coordinator
        moves (:func:`sluice.clients.committed`: librdkafka's own read, at ``OFFSET_STORED``,
        leaves partitions it could not read unfetched for good). A partition without one —
        or all of them, when the read fails for good — is assigned at ``OFFSET_STORED``:
        librdkafka reads it again, and applies ``auto.offset.reset`` when there is none."""
        wanted = [TopicPartition(t, p) for t, p in assignment.partitions]
        if wanted:
            try:
                wanted = clients.committed(self._consumer, wanted, COMMITTED_TIMEOUT_S)
            except KafkaException as error:
                log.warning("committed offsets not read: %s", error.args[0].str())
        self._consumer.assign(
            [
                TopicPartition(
                    tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_STORED
                )
                for tp in wanted
            ]
        )
