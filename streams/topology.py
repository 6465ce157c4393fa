"""A topology: sources, processors, sinks and the stores they use, as a graph of named nodes.

The DSL builds one; the Processor API builds one by hand::

    topology = Topology()
    topology.add_source("in", ["words"])
    topology.add_processor("upper", Upper, "in")
    topology.add_sink("out", "shouted", "upper")

Nodes connected by edges or sharing a store form a *sub-topology*; a repartition topic (written
by a sink of one sub-topology, read by a source of another) separates them. Each sub-topology
runs as one task per partition of its input topics (:mod:`sluice.streams.task`).

>>> from sluice.streams.processor import Processor
>>> class Upper(Processor):
...     def process(self, record):
...         self.context.forward(record.with_value(record.value.upper()))
>>> t = Topology()
>>> t.add_source("in", ["words"]); t.add_processor("upper", Upper, "in")
>>> t.add_sink("out", "shouted", "upper")
>>> print(t.describe())
Sub-topology 0 (topics: words)
  source in <- words
  processor upper <- in
  sink out -> shouted <- upper
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from sluice.schemas.serdes import for_topic
from sluice.serde import JSON, STRING, Serde
from sluice.streams.errors import TopologyError
from sluice.streams.processor import ProcessorSupplier
from sluice.streams.record import Record
from sluice.streams.state.base import StoreSpec

__all__ = [
    "GlobalStore",
    "ProcessorNode",
    "SinkNode",
    "SourceNode",
    "SubTopology",
    "TimestampExtractor",
    "Topology",
    "TopologyError",
]

TimestampExtractor = Callable[[Record, int], int]
"""``extract(record, partition_time) -> timestamp``; the record carries the log timestamp.

A negative result drops the record (counted, logged), as Kafka's ``LogAndSkipOnInvalidTimestamp``.
"""


@dataclass(slots=True)
class SourceNode:
    """Reads ``topics`` and deserializes keys and values."""

    name: str
    topics: list[str]
    key_serde: Serde = STRING
    value_serde: Serde = JSON
    timestamp_extractor: TimestampExtractor | None = None
    children: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ProcessorNode:
    """Runs a processor made per task by ``supplier``."""

    name: str
    supplier: ProcessorSupplier
    parents: list[str]
    stores: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)


TopicChooser = Callable[[Record], str]
"""Picks the topic of a record (``KStream.to`` with a function)."""


@dataclass(slots=True)
class SinkNode:
    """Serializes and writes to ``topic`` (a name, or a function of the record)."""

    name: str
    topic: str | TopicChooser
    parents: list[str]
    key_serde: Serde = STRING
    value_serde: Serde = JSON
    partitioner: Callable[[Any, Any, int], int] | None = None


@dataclass(slots=True)
class GlobalStore:
    """A store every instance fills with all partitions of ``topic`` (a global table)."""

    spec: StoreSpec
    topic: str
    key_serde: Serde
    value_serde: Serde


@dataclass(slots=True)
class SubTopology:
    """A connected part of the graph; runs as one task per input partition."""

    id: int
    nodes: list[str]
    source_topics: list[str]
    stores: list[str]


@dataclass(slots=True)
class InternalTopic:
    """A topic the runtime creates: ``partitions`` None means "as many as the upstream inputs"."""

    name: str
    partitions: int | None = None
    config: dict[str, str] = field(default_factory=dict)


class Topology:
    """The graph; see the module docstring."""

    def __init__(self) -> None:
        self.nodes: dict[str, SourceNode | ProcessorNode | SinkNode] = {}
        self.stores: dict[str, StoreSpec] = {}
        self.global_stores: dict[str, GlobalStore] = {}
        self.repartition_topics: dict[str, InternalTopic] = {}
        self.source_changelogs: dict[str, str] = {}
        self.copartition_groups: list[set[str]] = []
        self._topic_sources: dict[str, str] = {}
        self.schema_registry_url: str | None = None
        """Where the schema serdes (:mod:`sluice.schemas.serdes`) that name no registry go."""

    # -- building ---------------------------------------------------------------------------
    def add_source(
        self,
        name: str,
        topics: Iterable[str],
        *,
        key_serde: Serde = STRING,
        value_serde: Serde = JSON,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> None:
        """A node reading ``topics`` (each topic may be read by one source only)."""
        self._new_name(name)
        topics = list(topics)
        for topic in topics:
            if topic in self._topic_sources:
                raise TopologyError(
                    f"topic {topic!r} is already read by source {self._topic_sources[topic]!r}"
                )
            self._topic_sources[topic] = name
        if len(topics) == 1:  # schema serdes learn their subjects' topic (several: by schema id)
            key_serde = self.bind(key_serde, topics[0], is_key=True)
            value_serde = self.bind(value_serde, topics[0], is_key=False)
        self.nodes[name] = SourceNode(name, topics, key_serde, value_serde, timestamp_extractor)

    def add_processor(
        self, name: str, supplier: ProcessorSupplier, *parents: str, stores: Iterable[str] = ()
    ) -> None:
        """A processor node below ``parents``, connected to ``stores``."""
        self._new_name(name)
        node = ProcessorNode(name, supplier, list(parents), list(stores))
        self._link(node.name, parents)
        self.nodes[name] = node
        for store in node.stores:
            if store not in self.stores and store not in self.global_stores:
                raise TopologyError(f"processor {name!r} uses unknown store {store!r}")

    def add_sink(
        self,
        name: str,
        topic: str | TopicChooser,
        *parents: str,
        key_serde: Serde = STRING,
        value_serde: Serde = JSON,
        partitioner: Callable[[Any, Any, int], int] | None = None,
    ) -> None:
        """A node writing what its parents forward to ``topic``."""
        self._new_name(name)
        self._link(name, parents)
        if isinstance(topic, str):
            key_serde = self.bind(key_serde, topic, is_key=True)
            value_serde = self.bind(value_serde, topic, is_key=False)
        self.nodes[name] = SinkNode(name, topic, list(parents), key_serde, value_serde, partitioner)

    def add_state_store(self, spec: StoreSpec, *processors: str) -> None:
        """Register a store (and connect it to already-added ``processors``)."""
        if spec.name in self.stores or spec.name in self.global_stores:
            raise TopologyError(f"a store named {spec.name!r} already exists")
        self.stores[spec.name] = spec
        for processor in processors:
            node = self.nodes.get(processor)
            if not isinstance(node, ProcessorNode):
                raise TopologyError(f"no processor named {processor!r}")
            node.stores.append(spec.name)

    def add_global_store(
        self, spec: StoreSpec, topic: str, *, key_serde: Serde = STRING, value_serde: Serde = JSON
    ) -> None:
        """A store filled from every partition of ``topic`` on every instance (not logged)."""
        if spec.name in self.stores or spec.name in self.global_stores:
            raise TopologyError(f"a store named {spec.name!r} already exists")
        spec.logged = False
        key_serde = self.bind(key_serde, topic, is_key=True)
        value_serde = self.bind(value_serde, topic, is_key=False)
        self.global_stores[spec.name] = GlobalStore(spec, topic, key_serde, value_serde)

    def add_repartition_topic(self, topic: str, partitions: int | None = None) -> None:
        """Declare an internal topic the runtime creates before starting."""
        self.repartition_topics[topic] = InternalTopic(topic, partitions)

    def use_source_as_changelog(self, store: str, topic: str) -> None:
        """Restore ``store`` from its source ``topic`` instead of a changelog of its own."""
        self.source_changelogs[store] = topic

    def require_copartitioned(self, *topics: str) -> None:
        """Refuse to start unless ``topics`` have the same number of partitions (joins)."""
        self.copartition_groups.append(set(topics))

    def bind(self, serde: Serde, topic: str, *, is_key: bool) -> Serde:
        """*serde* for the keys or values of *topic*: a schema serde learns its subject's topic
        (as Kafka Streams passes the topic to its serializers); any other serde is itself."""
        return for_topic(serde, topic, is_key=is_key, default_registry=self.schema_registry_url)

    # -- reading ----------------------------------------------------------------------------
    def subtopologies(self) -> list[SubTopology]:
        """The connected parts, numbered in the order their first node was added."""
        parent: dict[str, str] = {name: name for name in self.nodes}

        def find(name: str) -> str:
            while parent[name] != name:
                parent[name] = parent[parent[name]]
                name = parent[name]
            return name

        def union(a: str, b: str) -> None:
            parent[find(a)] = find(b)

        store_users: dict[str, str] = {}
        for node in self.nodes.values():
            if isinstance(node, ProcessorNode | SinkNode):
                for p in node.parents:
                    union(node.name, p)
            if isinstance(node, ProcessorNode):
                for store in node.stores:
                    if store in self.global_stores:
                        continue
                    if store in store_users:
                        union(node.name, store_users[store])
                    store_users[store] = node.name
        groups: dict[str, list[str]] = {}
        for name in self.nodes:
            groups.setdefault(find(name), []).append(name)
        result = []
        for index, names in enumerate(groups.values()):
            topics = [
                t for n in names if isinstance(s := self.nodes[n], SourceNode) for t in s.topics
            ]
            stores = sorted(
                {st for st, user in store_users.items() if find(user) == find(names[0])}
            )
            result.append(SubTopology(index, names, topics, stores))
        return result

    def source_topics(self) -> list[str]:
        """Every topic read by a source node (input and repartition topics)."""
        return list(self._topic_sources)

    def describe(self) -> str:
        """A text outline, one sub-topology after another."""
        lines = []
        for sub in self.subtopologies():
            lines.append(f"Sub-topology {sub.id} (topics: {', '.join(sub.source_topics)})")
            for name in sub.nodes:
                node = self.nodes[name]
                if isinstance(node, SourceNode):
                    lines.append(f"  source {name} <- {', '.join(node.topics)}")
                elif isinstance(node, ProcessorNode):
                    stores = f" [stores: {', '.join(node.stores)}]" if node.stores else ""
                    lines.append(f"  processor {name} <- {', '.join(node.parents)}{stores}")
                else:
                    topic = node.topic if isinstance(node.topic, str) else "<function>"
                    lines.append(f"  sink {name} -> {topic} <- {', '.join(node.parents)}")
        for name, store in self.global_stores.items():
            lines.append(f"Global store {name} <- {store.topic}")
        return "\n".join(lines)

    # -- helpers ----------------------------------------------------------------------------
    def _new_name(self, name: str) -> None:
        if name in self.nodes:
            raise TopologyError(f"a node named {name!r} already exists")

    def _link(self, child: str, parents: Iterable[str]) -> None:
        parents = list(parents)
        if not parents:
            raise TopologyError(f"node {child!r} needs at least one parent")
        for parent in parents:
            node = self.nodes.get(parent)
            if node is None:
                raise TopologyError(f"node {child!r}: no parent named {parent!r}")
            if isinstance(node, SinkNode):
                raise TopologyError(f"node {child!r}: a sink ({parent!r}) cannot be a parent")
            node.children.append(child)
