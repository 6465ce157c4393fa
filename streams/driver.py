"""The test driver: run a topology without a broker, one record at a time.

It builds the same tasks the runtime builds (one per sub-topology; every topic has one
partition), serializes what you pipe in with the source's serdes, and keeps what the sinks write
in memory. After each piped record the tasks commit (record caches and stores flush); then the
records written to repartition topics are fed to the tasks reading them, one at a time, with a
commit after each, as Kafka's ``TopologyTestDriver`` does. The record caches
(``statestore_cache_max_bytes``, Kafka's 10 MiB by default; :mod:`sluice.streams.state.cache`)
fold only the updates of a key made while one record is processed; give 0 to see every update.
Bad records meet the same handlers as in the runtime (``deserialization_exception_handler``,
``processing_exception_handler``, ``production_exception_handler``;
:mod:`sluice.streams.errors`); the records they skip are written to ``dead_letter_topic`` with
the runtime's headers (:mod:`sluice.streams.runtime.dead_letter`), where
:meth:`TestDriver.read_raw` shows them.

>>> from sluice.streams.topology import Topology
>>> from sluice.streams.operators.stateless import Filter
>>> t = Topology()
>>> t.add_source("in", ["numbers"])
>>> t.add_processor("odd", lambda: Filter(lambda k, v: v % 2 == 1), "in")
>>> t.add_sink("out", "odd-numbers", "odd")
>>> with TestDriver(t) as d:
...     for n in range(4):
...         d.pipe("numbers", "k", n, timestamp=n)
...     [(r.value, r.timestamp) for r in d.read_output("odd-numbers")]
[(1, 1), (3, 3)]
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from sluice.serde import Serde
from sluice.streams.errors import HandlerSpec, RecordError, StreamsError, handler_from
from sluice.streams.globals import GlobalStores
from sluice.streams.record import Headers, Record
from sluice.streams.runtime.dead_letter import dead_letter_headers
from sluice.streams.state.base import StateStore
from sluice.streams.state.cache import DEFAULT_MAX_BYTES, ThreadCache
from sluice.streams.task import StreamTask, TaskId
from sluice.streams.topology import SinkNode, Topology

__all__ = ["TestDriver"]


class _MemoryCollector:
    def __init__(self) -> None:
        self.topics: dict[str, list[tuple[bytes | None, bytes | None, int, Headers]]] = (
            collections.defaultdict(list)
        )
        self.internal: collections.deque[tuple[str, bytes | None, bytes | None, int, Headers]] = (
            collections.deque()
        )
        self.internal_topics: set[str] = set()

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
        partition: int | None,
    ) -> None:
        if topic in self.internal_topics:
            self.internal.append((topic, key, value, timestamp, headers))
        self.topics[topic].append((key, value, timestamp, headers))

    def partitions_of(self, topic: str) -> int:
        return 1


class TestDriver:
    """Pipe records in, read output out, look at stores; see the module docstring."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        topology: Topology,
        *,
        application_id: str = "test-driver",
        wall_clock_ms: int = 0,
        state_dir: Path | None = None,
        deserialization_exception_handler: HandlerSpec = "log_and_fail",
        processing_exception_handler: HandlerSpec = "log_and_fail",
        production_exception_handler: HandlerSpec = "log_and_fail",
        dead_letter_topic: str | None = None,
        statestore_cache_max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.topology = topology
        self.thread_cache = ThreadCache(statestore_cache_max_bytes)
        self.application_id = application_id
        self.wall_clock_ms = wall_clock_ms
        self.dead_letter_topic = dead_letter_topic
        self._collector = _MemoryCollector()
        self._collector.internal_topics = set(topology.repartition_topics)
        self._offsets: dict[str, int] = collections.defaultdict(int)
        self._read: dict[str, int] = collections.defaultdict(int)
        self.globals = GlobalStores(topology)
        self.globals.init(state_dir)
        self.tasks: list[StreamTask] = []
        self._task_by_topic: dict[str, StreamTask] = {}
        on_deserialization_error = handler_from(
            deserialization_exception_handler, "deserialization"
        )
        on_processing_error = handler_from(processing_exception_handler, "processing")
        on_production_error = handler_from(production_exception_handler, "production")
        for sub in topology.subtopologies():
            task = StreamTask(
                TaskId(sub.id, 0),
                topology,
                sub,
                application_id=application_id,
                collector=self._collector,
                clock=lambda: self.wall_clock_ms,
                global_stores=self.globals.stores,
                changelog_topic=lambda store: f"{application_id}-{store}-changelog",
                state_dir=state_dir,
                on_deserialization_error=on_deserialization_error,
                on_processing_error=on_processing_error,
                on_production_error=on_production_error,
                dead_letter=self._dead_letter,
                thread_cache=self.thread_cache,
            )
            self.tasks.append(task)
            for topic in sub.source_topics:
                self._task_by_topic[topic] = task

    # -- input ------------------------------------------------------------------------------
    def pipe(
        self,
        topic: str,
        key: Any,
        value: Any,
        *,
        timestamp: int | None = None,
        headers: Headers = (),
    ) -> None:
        """Send one record to ``topic``, serialized with the serdes of the source reading it."""
        timestamp = self.wall_clock_ms if timestamp is None else timestamp
        if self.globals.reads(topic):
            key_serde, value_serde = self.globals.serdes(topic)
            self.globals.update(topic, _ser(key_serde, key), _ser(value_serde, value), timestamp)
            return
        task = self._task_by_topic.get(topic)
        if task is None:
            raise StreamsError(f"no source reads topic {topic!r}")
        source = task.sources[topic]
        raw_key = None if key is None else _serializer_of(self.topology, source.name, "key")(key)
        raw_value = (
            None if value is None else _serializer_of(self.topology, source.name, "value")(value)
        )
        self.pipe_raw(topic, raw_key, raw_value, timestamp=timestamp, headers=headers)

    def pipe_raw(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        timestamp: int | None = None,
        headers: Headers = (),
    ) -> None:
        """Send already-serialized bytes (to test what bad input does)."""
        timestamp = self.wall_clock_ms if timestamp is None else timestamp
        self._process(topic, key, value, timestamp, headers)
        self._commit()

    def pipe_many(self, topic: str, records: Iterable[tuple[Any, Any, int]]) -> None:
        """Pipe ``(key, value, timestamp)`` triples in order."""
        for key, value, timestamp in records:
            self.pipe(topic, key, value, timestamp=timestamp)

    def _process(
        self, topic: str, key: bytes | None, value: bytes | None, timestamp: int, headers: Headers
    ) -> None:
        offset = self._offsets[topic]
        self._offsets[topic] = offset + 1
        self._task_by_topic[topic].process(topic, 0, offset, key, value, timestamp, headers)

    def advance_wall_clock(self, ms: int) -> None:
        """Move the wall clock forward and run wall-clock punctuations that are due."""
        self.wall_clock_ms += ms
        for task in self.tasks:
            task.punctuate_wall_clock()
        self._commit()

    def _commit(self) -> None:
        """Commit every task, then process what repartition topics hold one record at a time,
        committing after each (Kafka's ``TopologyTestDriver``)."""
        internal = self._collector.internal
        for task in self.tasks:
            task.flush()
        while internal:
            self._process(*internal.popleft())
            for task in self.tasks:
                task.flush()

    # -- output -----------------------------------------------------------------------------
    def read_output(
        self, topic: str, *, key_serde: Serde | None = None, value_serde: Serde | None = None
    ) -> list[Record]:
        """Records written to ``topic`` since the last read, deserialized with the sink's serdes."""
        if key_serde is None or value_serde is None:
            sink_key, sink_value = self._sink_serdes(topic)
            key_serde = key_serde or sink_key
            value_serde = value_serde or sink_value
        written = self._collector.topics.get(topic, [])
        start = self._read[topic]
        self._read[topic] = len(written)
        return [
            Record(_de(key_serde, k), _de(value_serde, v), ts, headers)
            for k, v, ts, headers in written[start:]
        ]

    def read_raw(self, topic: str) -> list[tuple[bytes | None, bytes | None, int, Headers]]:
        """Every record written to ``topic`` as bytes (changelogs, dead letters); no reading."""
        return list(self._collector.topics.get(topic, []))

    def _sink_serdes(self, topic: str) -> tuple[Serde, Serde]:
        for node in self.topology.nodes.values():
            if isinstance(node, SinkNode) and node.topic == topic:
                return node.key_serde, node.value_serde
        from sluice.serde import BYTES  # a topic no sink names: a function-chosen topic

        for node in self.topology.nodes.values():
            if isinstance(node, SinkNode) and not isinstance(node.topic, str):
                return node.key_serde, node.value_serde
        return BYTES, BYTES

    # -- state ------------------------------------------------------------------------------
    def store(self, name: str) -> StateStore:
        """The store named ``name`` (a task's, or a global store)."""
        if name in self.globals.stores:
            return self.globals.stores[name]
        for task in self.tasks:
            if name in task.stores:
                return task.stores[name]
        raise StreamsError(f"no store named {name!r}")

    def _dead_letter(self, error: RecordError) -> None:
        if self.dead_letter_topic is not None:
            self._collector.send(
                self.dead_letter_topic,
                error.raw_key,
                error.raw_value,
                error.timestamp,
                dead_letter_headers(error),
                None,
            )

    def close(self) -> None:
        """Close every task."""
        for task in self.tasks:
            task.close()
        self.globals.close()

    def __enter__(self) -> TestDriver:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _serializer_of(topology: Topology, source: str, part: str) -> Any:
    node = topology.nodes[source]
    serde = node.key_serde if part == "key" else node.value_serde  # type: ignore[union-attr]
    return serde.serialize


def _ser(serde: Serde, value: Any) -> bytes | None:
    return None if value is None else serde.serialize(value)


def _de(serde: Serde, data: bytes | None) -> Any:
    return None if data is None else serde.deserialize(data)
