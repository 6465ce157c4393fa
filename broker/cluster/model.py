"""The values the metadata store reads and writes: small, frozen, backend-neutral.

Each mirrors one of Kafka's ZooKeeper-era records (the JSON lives in :mod:`.znodes`):

>>> PartitionState(leader=1, leader_epoch=0, isr=(1, 2), controller_epoch=1).isr
(1, 2)
>>> Endpoint.parse("PLAINTEXT://127.0.0.1:9092")
Endpoint(listener='PLAINTEXT', host='127.0.0.1', port=9092)
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")

_ENDPOINT = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[0-9a-fA-F:.]+\]|[^:/\[\]]*):(-?\d+)$")


@dataclass(frozen=True)
class Endpoint:
    """One advertised listener: ``LISTENER://host:port`` as Kafka writes it."""

    listener: str
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        """``NAME://host:port`` (IPv6 hosts in brackets); ValueError names what is wrong."""
        match = _ENDPOINT.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not a listener endpoint (NAME://host:port)")
        host = match.group(2)
        if host.startswith("["):
            host = host[1:-1]
        return cls(match.group(1), host, int(match.group(3)))

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True)
class BrokerRegistration:
    """What a live broker publishes at ``/brokers/ids/<id>`` (Kafka's JSON version 5).

    ``security_protocols`` maps each listener name of ``endpoints`` to its security protocol
    (``listener.security.protocol.map``); ``timestamp_ms`` is when the broker registered;
    ``features`` maps a feature name to its supported ``(min_version, max_version)``.
    """

    broker_id: int
    endpoints: tuple[Endpoint, ...]
    security_protocols: Mapping[str, str]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = 0
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def endpoint(self, listener: str) -> Endpoint | None:
        """The endpoint of the named listener, or None when the broker does not advertise it."""
        return next((e for e in self.endpoints if e.listener == listener), None)


@dataclass(frozen=True)
class LiveBroker:
    """A registered broker and its broker epoch: the zxid that created its registration
    (KIP-380), which grows each time the broker registers again."""

    registration: BrokerRegistration
    epoch: int


@dataclass(frozen=True)
class ReplicaAssignment:
    """The replicas of one partition, in preference order (the first is the preferred leader),
    with those being added or removed by a reassignment in progress."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicAssignment:
    """A topic's partitions and their replicas (``/brokers/topics/<t>``, Kafka's version 3)."""

    partitions: Mapping[int, ReplicaAssignment]
    topic_id: uuid.UUID | None = None


@dataclass(frozen=True)
class PartitionState:
    """Leader, leader epoch and ISR of one partition, and the controller epoch that wrote them
    (``/brokers/topics/<t>/partitions/<p>/state``). ``leader`` is -1 when the partition has none;
    ``leader_recovery_state`` is 1 while a leader elected uncleanly recovers (KIP-704)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    leader_recovery_state: int = 0


@dataclass(frozen=True)
class ControllerRegistration:
    """Who holds ``/controller`` and since when."""

    broker_id: int
    timestamp_ms: int


@dataclass(frozen=True)
class ControllerFence:
    """What a won election returns: the new controller epoch and the version of the
    ``/controller_epoch`` record that holds it. Every write the controller makes is conditional
    on that version, so a controller that lost its office can no longer write."""

    epoch: int
    epoch_version: int


@dataclass(frozen=True)
class ProducerIdBlock:
    """Producer ids ``first`` to ``last`` (both inclusive), claimed by ``broker_id``."""

    broker_id: int
    first: int
    last: int

    @property
    def size(self) -> int:
        """How many ids the block holds."""
        return self.last - self.first + 1


@dataclass(frozen=True)
class TopicPartition:
    """A topic name and a partition number."""

    topic: str
    partition: int


@dataclass(frozen=True)
class ConfigChange:
    """One change notification: its sequence number and the entity whose config changed
    (``topics/<t>`` or ``brokers/<id>``, ``brokers/<default>`` for the cluster default)."""

    sequence: int
    entity_path: str


@dataclass(frozen=True)
class Versioned(Generic[T]):
    """A value as read, with the version a conditional write of it must name."""

    value: T
    version: int


@dataclass(frozen=True)
class BadVersion:
    """A conditional write found another version than the caller expected: someone else wrote
    ``path`` first (or deleted it). Re-read and decide again."""

    path: str
    expected_version: int
