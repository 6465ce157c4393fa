"""A task: one sub-topology over one partition of its input topics, with its own stores.

The task deserializes raw input records, keeps the task's stream time (the largest timestamp
seen), drives the processors by plain calls (each built-in operator calls its children's
``process`` directly, no queue in between), runs punctuations and, at commit, flushes its stores
(one changelog record per dirty key). Output goes to a :class:`RecordCollector` (a Kafka producer
in the runtime, in-memory topics in the test driver).

From each source, the nodes are fused into plain functions of the record's fields
(:mod:`sluice.streams.fusion`); :meth:`StreamTask.process_messages` is the one loop that feeds
them (:meth:`StreamTask.process`, one record by its fields, is a batch of one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from sluice.streams.errors import (
    DeserializationError,
    ErrorHandler,
    ProcessingError,
    ProductionError,
    RecordError,
    StreamsError,
)
from sluice.streams.fusion import RecordCollector, Sink, SinkFailure, sources_of
from sluice.streams.processor import (
    Cancellable,
    Processor,
    ProcessorContext,
    PunctuationType,
    RecordMetadata,
)
from sluice.streams.record import Headers, Record
from sluice.streams.state.base import StateStore, StoreContext
from sluice.streams.state.cache import RecordCache, Size, ThreadCache, flush_caches
from sluice.streams.topology import ProcessorNode, SinkNode, SourceNode, SubTopology, Topology

__all__ = ["RecordCollector", "StreamTask", "TaskCounters", "TaskId"]

log = logging.getLogger("sluice.streams")


class TaskCounters:
    """Counters the tasks of one stream thread add to (its metrics read them)."""

    __slots__ = ("punctuations",)

    def __init__(self) -> None:
        self.punctuations = 0
        """Punctuator calls (Kafka's ``punctuate-total``)."""


class TaskId(NamedTuple):
    """Sub-topology number and partition, written ``"1_3"`` as in Kafka Streams."""

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"


class _Schedule:
    __slots__ = ("cancellable", "interval", "next_time", "punctuator")

    def __init__(self, interval: int, next_time: int, punctuator: Callable[[int], None]) -> None:
        self.interval = interval
        self.next_time = next_time
        self.punctuator = punctuator
        self.cancellable = Cancellable()


class _NodeContext(ProcessorContext):
    """The context of one processor node: its children and stores."""

    def __init__(self, task: StreamTask, name: str, store_names: list[str]) -> None:
        self.task = task
        self.name = name
        self.application_id = task.application_id
        self.task_id = str(task.id)
        self.children: dict[str, Processor] = {}
        self.store_names = store_names

    def forward(self, record: Record, to: str | None = None) -> None:
        if to is not None:
            self.children[to].process(record)
            return
        for child in self.children.values():
            child.process(record)

    def forwarder(self) -> Callable[[Record], None]:
        calls = [child.process for child in self.children.values()]
        if len(calls) == 1:
            return calls[0]
        if not calls:
            return _drop

        def fan_out(record: Record) -> None:
            for call in calls:
                call(record)

        return fan_out

    def get_state_store(self, name: str) -> StateStore:
        if name not in self.store_names:
            raise StreamsError(f"processor {self.name!r} is not connected to store {name!r}")
        return self.task.store(name)

    def schedule(
        self, interval_ms: int, kind: PunctuationType, punctuator: Callable[[int], None]
    ) -> Cancellable:
        return self.task.schedule(interval_ms, kind, punctuator)

    def record_cache(
        self, store: str, key_size: Size, value_size: Size, *, windowed: bool = False
    ) -> RecordCache | None:
        return self.task.record_cache(store, key_size, value_size, windowed=windowed)

    def commit(self) -> None:
        self.task.commit_requested = True

    @property
    def record_metadata(self) -> RecordMetadata | None:
        return self.task.metadata

    @property
    def stream_time(self) -> int:
        return self.task.stream_time

    @property
    def wall_clock_time(self) -> int:
        return self.task.clock()


def _drop(record: Record) -> None:
    pass


class _Message(tuple[int, bytes | None, bytes | None, tuple[int, int], Headers]):
    """``(offset, key, value, (timestamp type, timestamp), headers)``: one input record given by
    its fields, read as :meth:`StreamTask.process_messages` reads a consumer message."""

    __slots__ = ()

    def offset(self) -> int:
        return self[0]

    def key(self) -> bytes | None:
        return self[1]

    def value(self) -> bytes | None:
        return self[2]

    def timestamp(self) -> tuple[int, int]:
        return self[3]

    def headers(self) -> Headers:
        return self[4]


class StreamTask:
    """One sub-topology over one partition; see the module docstring."""

    def __init__(
        self,
        task_id: TaskId,
        topology: Topology,
        sub: SubTopology,
        *,
        application_id: str,
        collector: RecordCollector,
        clock: Callable[[], int],
        global_stores: dict[str, StateStore],
        changelog_topic: Callable[[str], str | None],
        state_dir: Path | None = None,
        on_deserialization_error: ErrorHandler,
        on_processing_error: ErrorHandler,
        on_production_error: ErrorHandler,
        dead_letter: Callable[[RecordError], None],
        adopted_stores: dict[str, StateStore] | None = None,
        counters: TaskCounters | None = None,
        thread_cache: ThreadCache | None = None,
    ) -> None:
        self.id = task_id
        self.thread_cache = ThreadCache(0) if thread_cache is None else thread_cache
        self.caches: list[RecordCache] = []
        """The record caches of this task's operators, flushed first at every commit."""
        self.counters = TaskCounters() if counters is None else counters
        self.application_id = application_id
        self.collector = collector
        self.clock = clock
        self.stream_time = -1
        # where the current record came from; a RecordMetadata is made only when asked for
        self._topic: str | None = None
        self._partition = 0
        self._offset = 0
        self.commit_requested = False
        self.dropped_records = 0
        self.processed_records = 0
        self._on_deserialization_error = on_deserialization_error
        self._on_processing_error = on_processing_error
        self._on_production_error = on_production_error
        self._dead_letter = dead_letter
        self._stream_schedules: list[_Schedule] = []
        self._wall_schedules: list[_Schedule] = []
        self._next_stream_punctuation = 2**63 - 1
        self.stores: dict[str, StateStore] = {}
        self._global_stores = global_stores
        adopted = adopted_stores or {}
        for name in sub.stores:
            directory = None if state_dir is None else state_dir / str(task_id) / name
            context = StoreContext(changelog_topic(name), task_id.partition, self._send, directory)
            store = adopted.get(name)
            if store is None:
                store = topology.stores[name].build()
                store.init(context)
            else:
                store.context = context  # a standby's store, already open and filled
            self.stores[name] = store
        self.processors: dict[str, Processor] = {}
        contexts: dict[str, _NodeContext] = {}
        for name in sub.nodes:
            node = topology.nodes[name]
            if isinstance(node, ProcessorNode):
                self.processors[name] = node.supplier()
                contexts[name] = _NodeContext(self, name, node.stores)
            elif isinstance(node, SinkNode):
                self.processors[name] = Sink(node, collector)
        for name in sub.nodes:
            node = topology.nodes[name]
            if isinstance(node, SourceNode | ProcessorNode) and name in contexts:
                for child in node.children:
                    contexts[name].children[child] = self.processors[child]
        for name, processor in self.processors.items():
            if name in contexts:
                processor.init(contexts[name])
        self.sources = sources_of(topology, list(sub.nodes), self.processors)

    @property
    def metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the record being processed (None in punctuation)."""
        if self._topic is None:
            return None
        return RecordMetadata(self._topic, self._partition, self._offset)

    @property
    def dropped(self) -> int:
        """Records skipped: unreadable, negative timestamps, and too late for their window."""
        late = sum(int(getattr(p, "dropped", 0)) for p in self.processors.values())
        return self.dropped_records + late

    # -- stores -----------------------------------------------------------------------------
    def store(self, name: str) -> StateStore:
        """A store of this task, or a global store."""
        store = self.stores.get(name)
        if store is None:
            store = self._global_stores.get(name)
        if store is None:
            raise StreamsError(f"task {self.id} has no store {name!r}")
        return store

    def record_cache(
        self, store: str, key_size: Size, value_size: Size, *, windowed: bool = False
    ) -> RecordCache | None:
        """A record cache under the thread's budget, or None when it is 0."""
        if not self.thread_cache.enabled:
            return None
        name = f"{self.id}-{store}"
        cache = self.thread_cache.cache(name, key_size, value_size, windowed=windowed)
        self.caches.append(cache)
        return cache

    def _send(self, topic: str, partition: int, key: bytes, value: bytes | None, ts: int) -> None:
        self.collector.send(topic, key, value, ts, (), partition)

    # -- processing -------------------------------------------------------------------------
    def process(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
    ) -> None:
        """Handle one input record given by its fields: :meth:`process_messages` with a batch
        of one (raises :class:`RecordError` unless a handler says go on)."""
        # (1: TIMESTAMP_CREATE_TIME, as confluent-kafka gives it)
        message = _Message((offset, key, value, (1, timestamp), headers))
        self.process_messages(topic, partition, [message])

    def process_messages(self, topic: str, partition: int, messages: list[Any]) -> None:
        """Handle a run of input records of one partition, in one tight loop; raises
        :class:`RecordError` for a record unless its handler says go on.

        The one path every input record takes (:meth:`process` is a batch of one): the
        per-record work is inlined here rather than spread over calls (``messages`` are
        confluent-kafka ``Message`` objects, or anything with their ``offset() key() value()
        timestamp() headers()`` methods). When every node the source reaches is fused, nothing
        can ask for the record's metadata while it is processed, so the offset is only looked up
        for an error (and kept for the last record).
        """
        if not messages:
            return
        source = self.sources[topic]
        deserialize_key = source.deserialize_key
        deserialize_value = source.deserialize_value
        extractor = source.extractor
        emit = source.emit
        track = not source.fused
        self._topic = topic
        self._partition = partition
        stream_time = self.stream_time
        for message in messages:
            if track:
                self._offset = message.offset()
            key = message.key()
            value = message.value()
            headers = message.headers()
            headers = tuple(headers) if headers else ()
            timestamp = message.timestamp()[1]
            try:
                record_key = None if key is None else deserialize_key(key)
                record_value = None if value is None else deserialize_value(value)
                if extractor is not None:
                    timestamp = extractor(
                        Record(record_key, record_value, timestamp, headers), stream_time
                    )
            except Exception as error:  # a serde or extractor raised
                self._offset = message.offset()
                self._unreadable(error, key, value, timestamp, headers)
                continue
            if timestamp < 0:
                self._offset = message.offset()
                self._negative_timestamp()
                continue
            if timestamp > stream_time:
                stream_time = self.stream_time = timestamp
            try:
                emit(record_key, record_value, timestamp, headers)
            except SinkFailure as failure:
                self._offset = message.offset()
                self._unwritable(failure, key, value, timestamp, headers)
            except StreamsError:
                raise
            except Exception as error:
                self._offset = message.offset()
                self._failed(error, key, value, timestamp, headers)
            if stream_time >= self._next_stream_punctuation:
                self._punctuate(self._stream_schedules, stream_time)
                self._topic = topic
        self._offset = messages[-1].offset()
        self.processed_records += len(messages)

    def _unreadable(
        self,
        error: Exception,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
    ) -> None:
        failure = self._error(
            DeserializationError,
            f"cannot read record: {error!r}",
            error,
            key,
            value,
            timestamp,
            headers,
        )
        self._handle(failure, self._on_deserialization_error)

    def _negative_timestamp(self) -> None:
        log.warning(
            "skipping %s[%d]@%d: negative timestamp", self._topic, self._partition, self._offset
        )
        self.dropped_records += 1

    def _failed(
        self,
        error: Exception,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
    ) -> None:
        broken = self._error(
            ProcessingError, f"processing failed: {error!r}", error, key, value, timestamp, headers
        )
        self._handle(broken, self._on_processing_error)

    def _unwritable(
        self,
        failure: SinkFailure,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
    ) -> None:
        unsent = self._error(
            ProductionError, str(failure), failure.error, key, value, timestamp, headers
        )
        self._handle(unsent, self._on_production_error)

    def _error(
        self,
        kind: type[RecordError],
        reason: str,
        error: Exception,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
    ) -> RecordError:
        """A ``kind`` error about the record being processed (what its handler is shown)."""
        return kind(
            reason,
            self._topic or "",
            self._partition,
            self._offset,
            exception=error,
            timestamp=timestamp,
            headers=headers,
            raw_key=key,
            raw_value=value,
            task_id=str(self.id),
        )

    def _handle(self, error: RecordError, handler: ErrorHandler) -> None:
        """Fail with ``error``, or skip the record (log, count, dead-letter) if ``handler``
        says go on."""
        if not handler(error):
            raise error
        log.warning("skipping record: %s", error)
        self.dropped_records += 1
        self._dead_letter(error)

    # -- punctuation ------------------------------------------------------------------------
    def schedule(
        self, interval_ms: int, kind: PunctuationType, punctuator: Callable[[int], None]
    ) -> Cancellable:
        """Register a punctuator (see :meth:`ProcessorContext.schedule`)."""
        if interval_ms <= 0:
            raise StreamsError(f"punctuation interval must be positive, got {interval_ms}")
        if kind is PunctuationType.STREAM_TIME:
            # Kafka: aligned to 0 before the first record, so the first record punctuates
            first = self.stream_time + interval_ms if self.stream_time >= 0 else 0
            schedule = _Schedule(interval_ms, first, punctuator)
            self._stream_schedules.append(schedule)
            self._next_stream_punctuation = min(self._next_stream_punctuation, first)
        else:
            schedule = _Schedule(interval_ms, self.clock() + interval_ms, punctuator)
            self._wall_schedules.append(schedule)
        return schedule.cancellable

    def punctuate_wall_clock(self) -> None:
        """Run wall-clock punctuators that are due."""
        if self._wall_schedules:
            self._punctuate(self._wall_schedules, self.clock())

    def _punctuate(self, schedules: list[_Schedule], now: int) -> None:
        self._topic = None
        schedules[:] = [s for s in schedules if not s.cancellable.cancelled]
        for schedule in schedules:
            if now >= schedule.next_time:
                # Kafka: one call per due interval, the next time aligned on the schedule.
                schedule.next_time += schedule.interval * (
                    (now - schedule.next_time) // schedule.interval + 1
                )
                schedule.punctuator(now)
                self.counters.punctuations += 1
        if schedules is self._stream_schedules:
            self._next_stream_punctuation = min((s.next_time for s in schedules), default=2**63 - 1)

    # -- commit and close -------------------------------------------------------------------
    def flush(self) -> None:
        """Flush the record caches (their updates go downstream), then every store: dirty
        entries to the backends and changelogs."""
        if self.caches:
            flush_caches(self.caches)
        for store in self.stores.values():
            store.flush()
        self.commit_requested = False

    def close(self) -> None:
        """Close processors and stores (flush first if the state should be kept)."""
        for processor in self.processors.values():
            processor.close()
        for cache in self.caches:
            cache.drop()
        for store in self.stores.values():
            store.close()
