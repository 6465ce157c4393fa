"""The stream thread: consume, process, commit; tasks follow the group's assignment.

The thread is a member of the group ``application_id``; which tasks it runs follows the
group's assignment (:mod:`sluice.streams.runtime.rebalance`): task ``(sub-topology, p)`` reads
partition *p* of its sub-topology's topics. On a rebalance, everything is committed first
(Kafka Streams' eager protocol), then the thread joins the group again and routes the records
of the partitions it was assigned to their tasks.

A commit (every ``commit_interval_ms``, when a processor asks, on rebalance and on close):
flush the stores (one changelog record per dirty key), then

- at-least-once: wait until the producer has every record acknowledged, commit the consumed
  offsets (OffsetCommit with this member's id and generation), write checkpoints;
- exactly-once v2: one transactional producer per process (its ``transactional.id`` is the same
  after a restart: the process id is kept in the state directory); the output, the changelog
  records, the dead-letter records and the consumed offsets (``send_offsets_to_transaction``
  with the group metadata of this member, which fences zombies by generation) commit in one
  transaction. When the group has moved on, the work since the last commit is aborted and the
  tasks are closed without a commit before joining again (Kafka's ``TaskMigratedException``).
  When the transaction became abortable outside a commit (a record of it could not be
  delivered: the producer refuses the next one), the work is aborted and the tasks are rebuilt
  from their changelogs and read again from the committed offsets, the member staying in the
  group (Kafka's ``TaskCorruptedException``); a producer found fenced then is the first case.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from sluice import clients
from sluice.streams.config import StreamsConfig
from sluice.streams.errors import ProductionError, RecordError, StreamsError, handler_from
from sluice.streams.globals import GlobalStores
from sluice.streams.runtime import checkpoint, thread_clients
from sluice.streams.runtime.collector import KafkaCollector, TransactionStateError
from sluice.streams.runtime.dead_letter import dead_letter_headers
from sluice.streams.runtime.global_updater import GlobalStoreUpdater
from sluice.streams.runtime.group_protocol import Assignment, group_metadata
from sluice.streams.runtime.membership import CommitFailedError, GroupMembership
from sluice.streams.runtime.partition_group import PartitionGroup
from sluice.streams.runtime.rebalance import Rebalancer
from sluice.streams.runtime.restore import Restoration
from sluice.streams.runtime.standby import StandbyTasks
from sluice.streams.runtime.streams_producer import StreamsProducer
from sluice.streams.runtime.task_creator import TaskCreator, now_ms
from sluice.streams.runtime.topics import InternalTopics
from sluice.streams.task import StreamTask, TaskCounters, TaskId
from sluice.streams.topology import Topology

__all__ = ["StreamThread"]

log = logging.getLogger("sluice.streams")

Partition = tuple[str, int]

REBALANCE_TIMEOUT_MS = 300_000
"""How long the coordinator waits for every member to join again (Kafka's
``max.poll.interval.ms`` default)."""

LAG_REFRESH_S = 1.0
"""How often the consumer lag of the metrics is computed (from cached watermarks, no request)."""


class StreamThread:
    """Runs the tasks of this process; see the module docstring."""

    def __init__(
        self, topology: Topology, config: StreamsConfig, topics: InternalTopics, process_id: str
    ) -> None:
        self.topology = topology
        self.config = config
        self.topics = topics
        self.process_id = process_id
        """Kept in the state directory: the same after a restart (see ``state_directory``)."""
        self.state = "CREATED"
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._task_of: dict[Partition, StreamTask] = {}
        self._groups: dict[TaskId, PartitionGroup] = {}
        self._single: set[TaskId] = set()  # tasks of one partition: no buffering needed
        self._only_topic: str | None = None  # the consumer's topic, when it reads only one
        self._offsets: dict[Partition, int] = {}
        self._closing = False
        self._last_commit = time.monotonic()
        self.processed = 0
        # metrics (sluice.streams.runtime.metrics reads them from its HTTP thread)
        self.thread_id = f"{config.application_id}-{self.process_id}-StreamThread-1"
        self.consumer_client_id = thread_clients.client_id(config, self.process_id, "consumer")
        self.counters = TaskCounters()
        self.polls = 0
        self.commits = 0
        self.lag: dict[Partition, int] = {}
        """Records behind the high watermark per assigned partition (every LAG_REFRESH_S)."""
        self._lag_refreshed = 0.0
        self.restorations: dict[tuple[str, str], list[Restoration]] = {}
        """Restorations by (task id, store): the latest of each task now assigned, and globals."""
        assert config.state_dir is not None
        self.state_dir = Path(config.state_dir) / config.application_id
        self.consumer = thread_clients.group_consumer(config, self.process_id)
        self.restore_consumer = thread_clients.restore_consumer(config, self.process_id)
        self._on_production_error = handler_from(config.production_exception_handler, "production")
        self.dropped_output = 0
        """Output records the broker refused that the production handler skipped."""
        self.collector = KafkaCollector(self.topics.partitions.get, self._unwritten)
        self.output = StreamsProducer(config, self.process_id, self.collector)
        self.globals = GlobalStores(topology)
        self._global_updater = GlobalStoreUpdater(self.globals, config, self.topics.partitions)
        self.standbys: StandbyTasks | None = None
        if topology.stores:  # standby replicas and warm-ups
            self.standbys = StandbyTasks(
                topology,
                self.topics.changelog_topic,
                thread_clients.standby_consumer(config, self.process_id),
                self.state_dir,
            )
        self.membership = GroupMembership(
            config.bootstrap_servers,
            config.application_id,
            client_id=self.consumer_client_id,
            session_timeout_ms=config.session_timeout_ms,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            security=thread_clients.wire_security(config),
        )
        self._rebalancer = Rebalancer(
            topology,
            config,
            self.topics,
            process_id=self.process_id,
            state_dir=self.state_dir,
            membership=self.membership,
            consumer=self.consumer,
            restore_consumer=self.restore_consumer,
            standbys=self.standbys,
            creator=TaskCreator(
                topology,
                config,
                self.topics,
                self.state_dir,
                collector=self.collector,
                global_stores=self.globals.stores,
                standbys=self.standbys,
                dead_letter=self.dead_letter,
                counters=self.counters,
            ),
            skip_topics=[t for t in topology.source_topics() if self.globals.reads(t)],
            end_offset=self._end_offset,
            close_task=lambda task: self._close_task(task, clean=True),
            track_restorations=self._track_restorations,
        )

    @property
    def tasks(self) -> dict[TaskId, StreamTask]:
        """The active tasks (kept by the rebalancer)."""
        return self._rebalancer.tasks

    @property
    def assignment(self) -> Assignment:
        """This member's latest assignment (with every instance's partitions, by address)."""
        return self._rebalancer.assignment

    @property
    def restored(self) -> int:
        """Records restored into the stores of active tasks."""
        return self._rebalancer.restored

    def tasks_of(self, partitions: Sequence[tuple[str, int]]) -> set[TaskId]:
        """The tasks that ``partitions`` (of any member) make."""
        return self._rebalancer.tasks_of(partitions)

    # -- life -------------------------------------------------------------------------------
    def stop(self) -> None:
        """Ask the loop to finish (commit, close) at the next iteration."""
        self._stop.set()

    def run(self) -> None:
        """The loop; returns after :meth:`stop`, raises what stopped it otherwise."""
        try:
            self._start()
            self.state = "RUNNING"
            while not self._stop.is_set():
                self._poll_once()
            self.state = "PENDING_SHUTDOWN"
            self._shutdown(clean=True)
            self.state = "NOT_RUNNING"
        except BaseException as error:
            self.error = error
            self.state = "ERROR"
            log.error("stream thread stopped: %s", error)
            self._shutdown(clean=False)
            raise

    def _start(self) -> None:
        self.state = "STARTING"
        self.output.init()
        self._global_updater.bootstrap(
            self.state_dir / "global",
            self.restore_consumer,
            lambda work: self._track_restorations([("global", item) for item in work]),
        )
        sources = self._rebalancer.topics()
        self._only_topic = sources[0] if len(sources) == 1 else None
        self._rebalance()

    def _poll_once(self) -> None:
        if self.membership.rejoin_needed.is_set() or self._rebalancer.probe_due():
            self._rebalance()
        try:
            self._process_and_commit()
        except CommitFailedError as error:
            # Kafka Streams' TaskMigratedException: the group moved on without this member
            # (it was paused past its session, say): its work since the last commit is
            # dropped, and it joins the group again instead of stopping
            log.warning("%s: closing the tasks without committing; joining again", error)
            self._lose_tasks()
            self.membership.rejoin_needed.set()
        except TransactionStateError as error:
            self._transaction_refused(error)
        now = time.monotonic()
        if now - self._lag_refreshed >= LAG_REFRESH_S:
            self._lag_refreshed = now
            self._refresh_lag()

    def _process_and_commit(self) -> None:
        messages = self.consumer.consume(self.config.max_poll_records, self.config.poll_ms / 1000)
        self.polls += 1
        if messages:
            self._buffer(messages)
        self._process_buffered()
        self._global_updater.poll()
        if self.standbys is not None:
            self.standbys.poll()
        if self.tasks:
            self.output.begin_if_needed()
            for task in self.tasks.values():
                task.punctuate_wall_clock()
        interval = (self.config.commit_interval_ms or 0) / 1000
        now = time.monotonic()
        if now - self._last_commit >= interval or any(
            t.commit_requested for t in self.tasks.values()
        ):
            self.commit()

    def _transaction_refused(self, error: TransactionStateError) -> None:
        """The producer refused a record outside a commit. Under exactly-once the transaction
        is aborted; then a fenced producer (replaced by a new one) or a member the group
        dropped loses its tasks and joins again, as a refused commit does (Kafka Streams'
        ``TaskMigratedException``). Otherwise the transaction had become abortable (a record
        of it timed out, say): the member stays in the group and every active task, whose
        work was in that one transaction, is closed without a commit and rebuilt from its
        changelogs, its partitions read again from the committed offsets (Kafka Streams'
        ``TaskCorruptedException``: ``closeDirtyAndRevive``; Kafka also enforces a rebalance
        there under exactly-once, so that a task restoring from scratch may move to a caught-up
        standby, but here a revived task is restored before the thread goes on, so a
        rebalance would find it running and leave it here)."""
        if not self.config.exactly_once:
            raise error
        if self.output.abort() or self.membership.lost.is_set():
            log.warning("%s: closing the tasks without committing; joining again", error)
            self._lose_tasks()
            self.membership.rejoin_needed.set()
            return
        log.warning("%s: the transaction is aborted; rebuilding the tasks from changelogs", error)
        self._forget_routes()
        self._route(self._rebalancer.revive_tasks())

    def _refresh_lag(self) -> None:
        """Lag per assigned partition: cached high watermark minus the consumer's position."""
        lag: dict[Partition, int] = {}
        assignment = self.consumer.assignment()
        if assignment:
            for tp in self.consumer.position(assignment):
                high = self.consumer.get_watermark_offsets(tp, cached=True)
                if high and high[1] >= 0 and tp.offset >= 0:
                    lag[(tp.topic, tp.partition)] = max(high[1] - tp.offset, 0)
        self.lag = lag  # replaced whole: read from another thread

    # -- processing -------------------------------------------------------------------------
    def _buffer(self, messages: list[Any]) -> None:
        """Process records of single-partition tasks at once; buffer the others (by time)."""
        run: list[Any] = []  # consecutive messages of one partition
        topic = self._only_topic
        if topic is not None:  # one topic: the partition number tells runs apart
            number = -1
            for message in messages:
                partition = message.partition()
                if partition != number:
                    self._dispatch((topic, number), run)
                    run = []
                    number = partition
                if message.error() is not None:
                    self._consumer_error(message.error())
                    continue
                run.append(message)
            self._dispatch((topic, number), run)
            return
        current: Partition = ("", -1)
        for message in messages:
            partition_of = (message.topic(), message.partition())
            if partition_of != current:
                self._dispatch(current, run)
                run = []
                current = partition_of
            if message.error() is not None:
                self._consumer_error(message.error())
                continue
            run.append(message)
        self._dispatch(current, run)

    def _consumer_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._PARTITION_EOF:
            return
        if error.fatal():
            raise StreamsError(f"consumer failed: {error.str()}")
        log.warning("consumer: %s", error.str())

    def _dispatch(self, partition: Partition, run: list[Any]) -> None:
        if not run:
            return
        task = self._task_of.get(partition)
        if task is None:
            return  # revoked meanwhile
        if task.id in self._single:
            self.output.begin_if_needed()
            task.process_messages(partition[0], partition[1], run)
            self._offsets[partition] = run[-1].offset() + 1
            self.processed += len(run)
        else:
            self._groups[task.id].add(partition, run, [m.timestamp()[1] for m in run])

    def _process_message(self, task: StreamTask, message: Any) -> None:
        topic, partition = message.topic(), message.partition()
        task.process_messages(topic, partition, [message])
        self._offsets[(topic, partition)] = message.offset() + 1
        self.processed += 1

    def _has_unfetched(self, partition: Partition) -> bool:
        _, high = self.consumer.get_watermark_offsets(TopicPartition(*partition), cached=True) or (
            -1,
            -1,
        )
        position = self._offsets.get(partition)
        if position is None:  # nothing read yet since the assignment: is there anything?
            (found,) = self.consumer.position([TopicPartition(*partition)])
            position = found.offset if found.offset >= 0 else 0
        return high > position

    def _process_buffered(self) -> None:
        now = now_ms()
        for task_id, group in self._groups.items():
            if not len(group):
                continue
            task = self.tasks[task_id]
            self.output.begin_if_needed()
            while True:
                message = group.next(self._has_unfetched, now)
                if message is None:
                    break
                self._process_message(task, message)

    def dead_letter(self, error: RecordError) -> None:
        """Send a record a handler skipped to the dead-letter topic, if one is set (under
        exactly-once in the transaction that commits the offset past it)."""
        topic = self.config.dead_letter_topic
        if topic is not None:
            self.output.begin_if_needed()
            self.collector.send(
                topic,
                error.raw_key,
                error.raw_value,
                error.timestamp,
                dead_letter_headers(error),
                None,
            )

    def _unwritten(self, error: KafkaError, message: Any) -> bool:
        """A record the producer could not write (the broker refused it): under at-least-once
        the production handler may skip it (log, count, dead-letter: the record as it was
        produced, its context the output topic and partition, offset -1, since which input
        made it is not known any more). Under exactly-once the transaction cannot commit
        without it: always fatal. A dead-letter record that cannot be written is fatal too."""
        topic, partition = message.topic(), message.partition()
        if self.config.exactly_once or topic == self.config.dead_letter_topic:
            return False
        headers = message.headers()
        timestamp = message.timestamp()[1]
        failure = ProductionError(
            f"cannot write the record: {error.str()}",
            topic,
            partition,
            -1,
            exception=KafkaException(error),
            timestamp=timestamp if timestamp >= 0 else now_ms(),  # librdkafka may not keep it
            headers=tuple(headers) if headers else (),
            raw_key=message.key(),
            raw_value=message.value(),
        )
        if not self._on_production_error(failure):
            return False
        log.warning("skipping record: %s", failure)
        self.dropped_output += 1
        self.dead_letter(failure)
        return True

    # -- commits ----------------------------------------------------------------------------
    def commit(self) -> None:
        """Flush stores, then commit output, changelogs and offsets (see the module docstring)."""
        for task in self.tasks.values():
            task.flush()
        offsets = [TopicPartition(t, p, o) for (t, p), o in self._offsets.items()]
        if self.config.exactly_once:
            self.output.commit(
                offsets,
                lambda: group_metadata(
                    self.config.application_id,
                    self.membership.generation,
                    self.membership.member_id,
                ),
            )
            self.collector.check()
        else:
            self.collector.flush()
            if offsets:
                self.membership.commit({(tp.topic, tp.partition): tp.offset for tp in offsets})
            self._write_checkpoints(self.tasks.values())
        if self.standbys is not None:
            self.standbys.checkpoint()
        self._last_commit = time.monotonic()
        self.commits += 1

    def _write_checkpoints(self, tasks: Any) -> None:
        for task in tasks:
            offsets: dict[tuple[str, int], int] = {}
            for name, store in task.stores.items():
                topic = self.topics.changelog_topic(name)
                if topic is None or not store.persistent:
                    continue
                if topic in self.topology.source_changelogs.values():
                    offset = self._offsets.get((topic, task.id.partition))
                    if offset is None:
                        continue
                else:
                    end = self._end_offset(topic, task.id.partition)
                    if end is None:
                        # the previous checkpoint stays, which a restart restores from
                        # (replaying more of the changelog, which is harmless)
                        log.warning("%s: checkpoint not written this time", task.id)
                        offsets = {}
                        break
                    offset = end
                offsets[(topic, task.id.partition)] = offset
            if offsets:
                checkpoint.write(self.state_dir / str(task.id), offsets)

    # -- rebalancing ------------------------------------------------------------------------
    def _rebalance(self) -> None:
        """Commit every task (Kafka Streams' eager protocol), then join the group again and
        route the records of the partitions assigned to their tasks."""
        self.state = "REBALANCING"
        if self.membership.lost.is_set():
            # dropped by the group: what it did since its last commit is not committed now
            log.warning("the group dropped this member: closing its tasks without committing")
            self._lose_tasks()
        elif self.tasks:
            try:
                self.commit()
            except (CommitFailedError, TransactionStateError) as error:
                log.warning("%s: closing the tasks without committing", error)
                self._lose_tasks()
        self._forget_routes()
        self._route(self._rebalancer.rebalance())
        self.state = "RUNNING"

    def _route(self, taken: dict[TaskId, list[Partition]]) -> None:
        """Send the records of each task's partitions to it."""
        for task_id, task_partitions in taken.items():
            task = self.tasks[task_id]
            self._groups[task_id] = PartitionGroup(task_partitions, max_idle_ms=100)
            if len(task_partitions) == 1:
                self._single.add(task_id)
            for partition in task_partitions:
                self._task_of[partition] = task

    def _forget_routes(self) -> None:
        self._task_of.clear()
        self._groups.clear()
        self._single.clear()
        self._offsets.clear()

    def _end_offset(self, topic: str, partition: int) -> int | None:
        """The end of a changelog partition (the leader's view of a task's state); ``None``
        when the broker does not say in time (its leader moving, say).

        The restore consumer is assign-only and mostly assigned nothing, so nothing refreshes
        its metadata: after its cached leader died it kept asking the dead broker, each query
        held until its timeout (:func:`sluice.clients.watermarks` gives each try 2 s, refreshes
        the metadata and asks again, for up to 10 s in all)."""
        try:
            [(_, high)] = clients.watermarks(
                self.restore_consumer, [TopicPartition(topic, partition)], 10
            )
        except KafkaException as error:
            log.warning("the end of %s[%d] is not known: %s", topic, partition, error.args[0].str())
            return None
        return max(high, 0)

    def _lose_tasks(self) -> None:
        """The group moved on while this member had uncommitted work: abort it and close every
        task without a commit (Kafka Streams' ``TaskMigratedException``). A producer fenced
        meanwhile (the transaction outlived ``transaction.timeout.ms`` during a pause, say) is
        replaced by a new one, as Kafka Streams does under exactly-once v2."""
        self.output.abort()
        self._rebalancer.lose_tasks()
        self._forget_routes()

    def _track_restorations(self, work: list[tuple[str, Restoration]]) -> None:
        """Show ``work`` (task id, restoration) in the metrics; forget tasks gone elsewhere."""
        live = {str(t) for t in self.tasks} | {"global"}
        kept = {key: items for key, items in self.restorations.items() if key[0] in live}
        fresh: dict[tuple[str, str], list[Restoration]] = {}
        for task, item in work:
            fresh.setdefault((task, item.store.name), []).append(item)
        self.restorations = {**kept, **fresh}  # replaced whole: read from another thread

    def _close_task(self, task: StreamTask, *, clean: bool) -> None:
        if clean and not self.config.exactly_once:
            self._write_checkpoints([task])
        task.close()

    # -- shutdown ---------------------------------------------------------------------------
    def _shutdown(self, *, clean: bool) -> None:
        try:
            if clean:
                self.commit()
                for task in self.tasks.values():
                    if self.config.exactly_once:
                        self._write_checkpoints([task])
                    self._close_task(task, clean=True)
            else:
                self.output.abort_quietly()
                for task in self.tasks.values():
                    task.close()
            self._rebalancer.close_suspended()
            if self.standbys is not None:
                self.standbys.close()
                self.standbys.consumer.close()
            self.tasks.clear()
        finally:
            self._closing = True
            self.membership.close(leave=clean)
            self.consumer.close()
            self.restore_consumer.close()
            self._global_updater.close()
            self.output.flush(10)

    def metrics(self) -> dict[str, Any]:
        """Counters of this thread."""
        return {
            "state": self.state,
            "tasks": sorted(str(t) for t in self.tasks),
            "processed_records": self.processed,
            "restored_records": self.restored,
            "standby_tasks": []
            if self.standbys is None
            else sorted(str(t) for t in self.standbys.tasks),
            "dropped_records": sum(t.dropped for t in self.tasks.values()) + self.dropped_output,
        }
