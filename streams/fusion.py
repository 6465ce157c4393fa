"""Fusion: from each source, runs of built-in operators become plain functions of a record's fields.

A processor class that defines ``fuse(downstream)`` (the built-in stateless operators, stream
aggregations, ``to_stream``; see :mod:`sluice.streams.operators.base`) is chained by plain
calls of ``(key, value, timestamp, headers)``, down to the sinks, which serialize and hand the
record to the :class:`RecordCollector` (straight to librdkafka's ``produce`` when it is a Kafka
producer). A record that only passes such nodes never becomes a :class:`Record`; any other
processor gets a new ``Record`` of the fields. A node with several children calls the function
of each in turn. A :class:`~sluice.streams.operators.base.FusedOperator` that a processor which
is not fused forwards to runs the same fused function from there on (its ``fused``).

>>> from sluice.streams.topology import Topology
>>> class Memory:
...     sent = []
...     def send(self, *record): self.sent.append(record)
...     def partitions_of(self, topic): return 1
>>> topology = Topology()
>>> topology.add_source("in", ["words"])
>>> topology.add_sink("out", "upper", "in")
>>> sink = Sink(topology.nodes["out"], Memory())
>>> source = sources_of(topology, ["in", "out"], {"out": sink})["words"]
>>> source.fused, source.emit("k", {"n": 1}, 5, ()), Memory.sent
(True, None, [('upper', b'k', b'{"n":1}', 5, (), None)])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from sluice.streams.errors import StreamsError
from sluice.streams.operators.base import Emit, FusedOperator
from sluice.streams.processor import Processor
from sluice.streams.record import Headers, Record
from sluice.streams.topology import ProcessorNode, SinkNode, SourceNode, Topology

__all__ = ["RecordCollector", "Sink", "SinkFailure", "Source", "sources_of"]


class RecordCollector(Protocol):
    """Where a task's output goes."""

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        headers: Headers,
        partition: int | None,
    ) -> None:
        """Write one record (``partition`` None: by the key, as the producer's partitioner)."""

    def partitions_of(self, topic: str) -> int:
        """How many partitions ``topic`` has (for custom partitioners)."""


class SinkFailure(Exception):  # noqa: N818 - not an error of its own: the task makes one
    """A sink could not serialize or send a record (the task hands it to the production
    exception handler, naming the input record); ``__cause__`` is what was raised."""

    def __init__(self, topic: str, stage: str, error: Exception) -> None:
        super().__init__(f"cannot {stage} the record for {topic}: {error!r}")
        self.topic = topic
        self.error = error
        self.__cause__ = error


def _drop_fields(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
    pass


def _as_record(process: Callable[[Record], None]) -> Emit:
    def to_record(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
        process(Record(key, value, timestamp, headers))

    return to_record


class Sink(Processor):
    """Serializes and hands the record to the collector."""

    def __init__(self, node: SinkNode, collector: RecordCollector) -> None:
        self.node = node
        self.static_topic = node.topic if isinstance(node.topic, str) else None
        self.collector = collector
        self.send = collector.send  # bound once: this runs for every output record
        self.serialize_key = node.key_serde.serialize
        self.serialize_value = node.value_serde.serialize

    def process(self, record: Record) -> None:
        topic = self.static_topic
        if topic is None:
            topic = self.node.topic(record)  # type: ignore[operator]
        key = record.key
        value = record.value
        partition = None
        if self.node.partitioner is not None:
            partition = self.node.partitioner(key, value, self.collector.partitions_of(topic))
        try:
            serialized_key = None if key is None else self.serialize_key(key)
            serialized_value = None if value is None else self.serialize_value(value)
        except Exception as error:
            raise SinkFailure(topic, "serialize", error) from error
        try:
            self.send(
                topic, serialized_key, serialized_value, record.timestamp, record.headers, partition
            )
        except StreamsError:
            raise
        except Exception as error:
            raise SinkFailure(topic, "send", error) from error

    def fuse(self) -> Emit:
        """:meth:`process` as a function of the fields (a topic chosen per record needs one)."""
        topic = self.static_topic
        if topic is None:
            return _as_record(self.process)
        send = self.send
        serialize_key = self.serialize_key
        serialize_value = self.serialize_value
        partitioner = self.node.partitioner
        partitions_of = self.collector.partitions_of
        produce = getattr(self.collector, "raw_produce", None)
        if produce is not None and partitioner is None:
            # a Kafka producer: no call between the sink and librdkafka

            def sink_to_producer(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
                try:
                    serialized_key = None if key is None else serialize_key(key)
                    serialized_value = None if value is None else serialize_value(value)
                except Exception as error:
                    raise SinkFailure(topic, "serialize", error) from error
                try:
                    if not headers:
                        try:
                            produce(
                                topic, serialized_value, serialized_key, -1, None, None, timestamp
                            )
                            return
                        except Exception:
                            # the queue is full (send() waits for room), or the record was
                            # refused: send() tries once more and raises the collector's error
                            pass
                    send(topic, serialized_key, serialized_value, timestamp, headers, None)
                except StreamsError:
                    raise
                except Exception as error:  # librdkafka refused it (too large…)
                    raise SinkFailure(topic, "send", error) from error

            return sink_to_producer

        def sink(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            partition = (
                None if partitioner is None else partitioner(key, value, partitions_of(topic))
            )
            try:
                serialized_key = None if key is None else serialize_key(key)
                serialized_value = None if value is None else serialize_value(value)
            except Exception as error:
                raise SinkFailure(topic, "serialize", error) from error
            try:
                send(topic, serialized_key, serialized_value, timestamp, headers, partition)
            except StreamsError:
                raise
            except Exception as error:
                raise SinkFailure(topic, "send", error) from error

        return sink


class Source:
    """A source node's deserializers and timestamp extractor, and the fused function of what it
    feeds; ``fused``: nothing downstream can ask for a record's metadata."""

    __slots__ = ("deserialize_key", "deserialize_value", "emit", "extractor", "fused", "name")

    def __init__(self, node: SourceNode, emit: Emit, fused: bool) -> None:
        self.name = node.name
        self.deserialize_key = node.key_serde.deserialize
        self.deserialize_value = node.value_serde.deserialize
        self.extractor = node.timestamp_extractor
        self.emit = emit
        # nothing downstream can ask for the record's metadata: only built-in operators and sinks
        self.fused = fused


class _Fuser:
    """Builds the fused function of each node once (a node reached from two sources is shared)."""

    def __init__(self, topology: Topology, processors: dict[str, Processor]) -> None:
        self.topology = topology
        self.processors = processors
        # per node: its fused function, and whether everything it reaches is fused
        self._emits: dict[str, tuple[Emit, bool]] = {}

    def emit_to(self, names: list[str]) -> tuple[Emit, bool]:
        """A function of a record's fields handing the record to the nodes ``names``; pure?"""
        if len(names) == 1:
            return self.emit_of(names[0])
        if not names:
            return _drop_fields, True
        emits = [self.emit_of(name) for name in names]
        calls = [emit for emit, _ in emits]

        def fan_out(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            for call in calls:
                call(key, value, timestamp, headers)

        return fan_out, all(fused for _, fused in emits)

    def emit_of(self, name: str) -> tuple[Emit, bool]:
        known = self._emits.get(name)
        if known is not None:
            return known
        processor = self.processors[name]
        if isinstance(processor, Sink):
            emit, fused = processor.fuse(), processor.static_topic is not None
        elif "fuse" in type(processor).__dict__:
            node = self.topology.nodes[name]
            assert isinstance(node, ProcessorNode)
            downstream, fused = self.emit_to(list(node.children))
            emit = processor.fuse(downstream)  # type: ignore[attr-defined]
        else:
            emit, fused = _as_record(processor.process), False
        self._emits[name] = (emit, fused)
        return emit, fused


def sources_of(
    topology: Topology, nodes: list[str], processors: dict[str, Processor]
) -> dict[str, Source]:
    """Per input topic, the :class:`Source` of the sub-topology ``nodes`` that reads it."""
    fuser = _Fuser(topology, processors)
    sources: dict[str, Source] = {}
    for name in nodes:
        node = topology.nodes[name]
        if isinstance(node, SourceNode):
            emit, fused = fuser.emit_to(list(node.children))
            source = Source(node, emit, fused)
            for topic in node.topics:
                sources[topic] = source
    for name in nodes:
        # what a processor that is not fused forwards to: fused from there on
        processor = processors.get(name)
        if isinstance(processor, FusedOperator) and "fuse" in type(processor).__dict__:
            processor.fused = fuser.emit_of(name)[0]
    return sources
