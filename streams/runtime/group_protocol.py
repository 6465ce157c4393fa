"""What a Streams instance says in its group, and what it is told: the bytes of the membership.

The group is a classic consumer group (protocol type ``consumer``) with Kafka Streams' protocol
name ``stream``; subscriptions and assignments are Kafka's ``ConsumerProtocol`` structures (v0),
so that ``DescribeGroups`` and every Kafka tool read the members' topics and partitions, with
Sluice's own user data in them (JSON — a Java Kafka Streams instance cannot join a Sluice
application, nor the other way round):

- :class:`Subscription`: the process id, the ``application_server``, the rack, the tasks it ran and
  kept as standbys, and the changelog offset sum of every task whose state is on its disk;
- :class:`Assignment`: the member's active, standby and warm-up tasks, when to probe again, and
  every instance's partitions by ``application_server`` (for interactive queries).

:func:`group_metadata` makes the bytes that librdkafka's ``consumer_group_metadata()`` returns —
what ``send_offsets_to_transaction`` takes to fence zombies by generation — for a membership that
librdkafka does not run itself.

>>> s = Subscription(["orders"], "p1", "10.0.0.7:7070", None, {TaskId(0, 1)}, set(), {})
>>> Subscription.decode(s.encode()) == s
True
>>> group_metadata("app", 3, "m-1")
b'CGMDv2:\\x03\\x00\\x00\\x00app\\x00m-1\\x00\\x01'
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any

from sluice.streams.errors import StreamsError
from sluice.streams.task import TaskId

__all__ = ["PROTOCOL_NAME", "PROTOCOL_TYPE", "Assignment", "Subscription", "group_metadata"]

PROTOCOL_TYPE = "consumer"
PROTOCOL_NAME = "stream"
_VERSION = 0
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _task(text: str) -> TaskId:
    sub, _, partition = text.partition("_")
    return TaskId(int(sub), int(partition))


def _tasks(items: Any) -> set[TaskId]:
    return {_task(t) for t in items}


def _names(tasks: set[TaskId]) -> list[str]:
    return sorted(str(t) for t in tasks)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, layout: struct.Struct) -> int:
        (value,) = layout.unpack_from(self.data, self.at)
        self.at += layout.size
        return int(value)

    def string(self) -> str:
        size = self.take(_I16)
        text = self.data[self.at : self.at + size].decode()
        self.at += size
        return text

    def blob(self) -> bytes:
        size = self.take(_I32)
        if size < 0:
            return b""
        blob = self.data[self.at : self.at + size]
        self.at += size
        return blob


def _string(text: str) -> bytes:
    raw = text.encode()
    return _I16.pack(len(raw)) + raw


def _blob(data: bytes) -> bytes:
    return _I32.pack(len(data)) + data


def _user_data(blob: bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(blob)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise StreamsError(
            f"a member's {what} is not a Sluice Streams one (another kind of client in the group?)"
        )
    return data


@dataclass
class Subscription:
    """What a member tells the leader (see the module docstring)."""

    topics: list[str]
    process_id: str
    endpoint: str | None
    rack: str | None
    active: set[TaskId]
    standby: set[TaskId]
    offset_sums: dict[TaskId, int]

    def encode(self) -> bytes:
        """``ConsumerProtocolSubscription`` v0 with the user data."""
        user = {
            "process": self.process_id,
            "endpoint": self.endpoint,
            "rack": self.rack,
            "active": _names(self.active),
            "standby": _names(self.standby),
            "offsets": {str(t): o for t, o in sorted(self.offset_sums.items())},
        }
        topics = b"".join(_string(t) for t in self.topics)
        body = json.dumps(user, separators=(",", ":")).encode()
        return _I16.pack(_VERSION) + _I32.pack(len(self.topics)) + topics + _blob(body)

    @classmethod
    def decode(cls, data: bytes) -> Subscription:
        """The subscription in ``data``; :class:`StreamsError` if it is not one of ours."""
        try:
            reader = _Reader(data)
            reader.take(_I16)
            topics = [reader.string() for _ in range(reader.take(_I32))]
            user = _user_data(reader.blob(), "subscription")
            return cls(
                topics,
                str(user["process"]),
                user.get("endpoint"),
                user.get("rack"),
                _tasks(user.get("active", ())),
                _tasks(user.get("standby", ())),
                {_task(t): int(o) for t, o in user.get("offsets", {}).items()},
            )
        except (struct.error, KeyError, ValueError, UnicodeDecodeError) as error:
            raise StreamsError(f"unreadable subscription of a member: {error}") from None


@dataclass
class Assignment:
    """What the leader tells a member (see the module docstring)."""

    partitions: list[tuple[str, int]]
    active: set[TaskId] = field(default_factory=set)
    standby: set[TaskId] = field(default_factory=set)
    warmup: set[TaskId] = field(default_factory=set)
    probe_after_ms: int | None = None
    hosts: dict[str, dict[str, list[tuple[str, int]]]] = field(default_factory=dict)
    """``application_server`` → ``{"active": partitions, "standby": partitions}``."""

    def encode(self) -> bytes:
        """``ConsumerProtocolAssignment`` v0 with the user data."""
        by_topic: dict[str, list[int]] = {}
        for topic, number in sorted(self.partitions):
            by_topic.setdefault(topic, []).append(number)
        parts = [_I16.pack(_VERSION), _I32.pack(len(by_topic))]
        for topic, numbers in by_topic.items():
            parts.append(_string(topic) + _I32.pack(len(numbers)))
            parts.extend(_I32.pack(n) for n in numbers)
        user = {
            "active": _names(self.active),
            "standby": _names(self.standby),
            "warmup": _names(self.warmup),
            "probe_after_ms": self.probe_after_ms,
            "hosts": {
                host: {kind: sorted([list(tp) for tp in tps]) for kind, tps in held.items()}
                for host, held in sorted(self.hosts.items())
            },
        }
        parts.append(_blob(json.dumps(user, separators=(",", ":")).encode()))
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> Assignment:
        """The assignment in ``data``; :class:`StreamsError` if it is not one of ours."""
        try:
            reader = _Reader(data)
            reader.take(_I16)
            partitions: list[tuple[str, int]] = []
            for _ in range(reader.take(_I32)):
                topic = reader.string()
                partitions.extend((topic, reader.take(_I32)) for _ in range(reader.take(_I32)))
            user = _user_data(reader.blob(), "assignment")
            hosts = {
                host: {kind: [(str(t), int(p)) for t, p in tps] for kind, tps in held.items()}
                for host, held in user.get("hosts", {}).items()
            }
            return cls(
                partitions,
                _tasks(user.get("active", ())),
                _tasks(user.get("standby", ())),
                _tasks(user.get("warmup", ())),
                user.get("probe_after_ms"),
                hosts,
            )
        except (struct.error, KeyError, ValueError, TypeError, UnicodeDecodeError) as error:
            raise StreamsError(f"unreadable assignment: {error}") from None


def group_metadata(
    group_id: str, generation: int, member_id: str, instance_id: str | None = None
) -> bytes:
    """librdkafka's serialized consumer group metadata (``rd_kafka_consumer_group_metadata_write``):
    ``CGMDv2:``, the generation (4 bytes, little-endian), the group and member ids NUL-ended,
    then 1 when there is no ``group.instance.id`` (else 0 and the id NUL-ended)."""
    tail = b"\x01" if instance_id is None else b"\x00" + instance_id.encode() + b"\x00"
    return (
        b"CGMDv2:"
        + struct.pack("=i", generation)  # librdkafka copies the int as it is in memory
        + group_id.encode()
        + b"\x00"
        + member_id.encode()
        + b"\x00"
        + tail
    )
