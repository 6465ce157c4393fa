"""Which instance of an application holds which store and key: Kafka Streams' ``StreamsMetadata``
and ``KeyQueryMetadata``.

Each instance started with ``application_server="host:port"`` (Kafka's ``application.server``)
says so when it joins the group (:mod:`sluice.streams.runtime.group_protocol`), and the leader
sends every member each instance's active and standby partitions by address, as Kafka's
``AssignmentInfo`` does; from those partitions the tasks follow (task ``(sub-topology, p)`` runs
where partition ``p`` of its inputs is), and from the tasks their stores.

A key's partition is Kafka's default partitioner on the key's bytes — ``murmur2`` made positive,
modulo the partition count — so a key written by any Kafka client is found where it was routed:

>>> murmur2(b"21"), murmur2(b"foobar"), murmur2(b"a-little-bit-long-string")
(-973932308, -790332482, -985981536)
>>> partition_for(b"foobar", 6)
0
>>> HostInfo.parse("10.0.0.7:7070")
HostInfo(host='10.0.0.7', port=7070)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sluice.streams.errors import StreamsError
from sluice.streams.task import TaskId
from sluice.streams.topology import Topology

__all__ = [
    "HostInfo",
    "Hosts",
    "KeyQueryMetadata",
    "StreamsMetadata",
    "key_query_metadata",
    "murmur2",
    "partition_for",
    "streams_metadata",
]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (seed ``0x9747b28c``), as a signed 32-bit int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, partitions: int) -> int:
    """Kafka's default partition of a keyed record: ``toPositive(murmur2(key)) % partitions``."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


@dataclass(frozen=True, order=True)
class HostInfo:
    """An instance's ``application_server``."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> HostInfo:
        """``host:port`` (``[v6]:port`` too)."""
        host, sep, port = text.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise StreamsError(f"application_server must be host:port, got {text!r}")
        return cls(host.strip("[]"), int(port))

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class StreamsMetadata:
    """Kafka's ``StreamsMetadata``: what one instance hosts, actively and as standbys."""

    host_info: HostInfo
    state_store_names: frozenset[str]
    topic_partitions: frozenset[tuple[str, int]]
    standby_state_store_names: frozenset[str]
    standby_topic_partitions: frozenset[tuple[str, int]]


@dataclass(frozen=True)
class KeyQueryMetadata:
    """Kafka's ``KeyQueryMetadata``: where a key of a store is, actively and on standbys."""

    active_host: HostInfo
    standby_hosts: frozenset[HostInfo]
    partition: int


TasksOf = Callable[[Sequence[tuple[str, int]]], Iterable[TaskId]]
"""The tasks that a member's partitions make (the stream thread's own mapping)."""

Hosts = Mapping[str, Mapping[str, Sequence[tuple[str, int]]]]
"""``application_server`` → ``{"active": partitions, "standby": partitions}``, as assigned."""


def streams_metadata(topology: Topology, hosts: Hosts, tasks_of: TasksOf) -> list[StreamsMetadata]:
    """One :class:`StreamsMetadata` per instance with an ``application_server``, in address
    order."""
    stores = {sub.id: sub.stores for sub in topology.subtopologies()}
    result = []
    for host, held in hosts.items():
        active, standby = held.get("active", ()), held.get("standby", ())
        result.append(
            StreamsMetadata(
                HostInfo.parse(host),
                frozenset(s for t in tasks_of(active) for s in stores[t.subtopology]),
                frozenset((t, p) for t, p in active),
                frozenset(s for t in tasks_of(standby) for s in stores[t.subtopology]),
                frozenset((t, p) for t, p in standby),
            )
        )
    return sorted(result, key=lambda m: m.host_info)


def key_query_metadata(
    topology: Topology, hosts: Hosts, store: str, partition: int
) -> KeyQueryMetadata | None:
    """Where partition ``partition`` of ``store``'s task is; None when no instance with an
    ``application_server`` has it now (Kafka's ``KeyQueryMetadata.NOT_AVAILABLE``)."""
    sub = next((s for s in topology.subtopologies() if store in s.stores), None)
    if sub is None:
        raise StreamsError(f"no store named {store!r} in the topology")
    wanted = {(topic, partition) for topic in sub.source_topics}

    def having(kind: str) -> list[HostInfo]:
        return sorted(
            HostInfo.parse(host)
            for host, held in hosts.items()
            if wanted & {(t, p) for t, p in held.get(kind, ())}
        )

    active = having("active")
    if not active:
        return None
    return KeyQueryMetadata(active[0], frozenset(having("standby")), partition)
