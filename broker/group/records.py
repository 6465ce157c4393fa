"""The records of ``__consumer_offsets``: Kafka's own key and value formats.

Every record's key starts with an int16 version that says what it is (big-endian throughout;
``string`` is an int16 length and UTF-8 bytes, ``nullable`` uses length -1 for null, ``bytes`` an
int32 length)::

    offset commit    key   version=1 | group string | topic string | partition int32
                     value version=3 | offset int64 | leader_epoch int32 | metadata string
                                     | commit_timestamp int64
    group metadata   key   version=2 | group string
                     value version=3 | protocol_type string | generation int32
                                     | protocol nullable | leader nullable
                                     | current_state_timestamp int64
                                     | members int32-count, each (member_id string
                                       | group_instance_id nullable | client_id string
                                       | client_host string | rebalance_timeout int32
                                       | session_timeout int32 | subscription bytes
                                       | assignment bytes)

A null value (tombstone) deletes the key: an offset that was deleted or expired, a group that
was deleted. The topic is compacted, so the latest record per key is the state.

>>> key = offset_key("g", "orders", 3)
>>> decode_key(key)
OffsetKey(group='g', topic='orders', partition=3)
>>> decode_offset_value(offset_value(OffsetValue(42, -1, "", 1700000000000)))
OffsetValue(offset=42, leader_epoch=-1, metadata='', commit_timestamp=1700000000000)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_Q = struct.Struct(">q")


class RecordFormatError(ValueError):
    """A key or value of ``__consumer_offsets`` that cannot be read."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: tuple[MemberValue, ...]


# -- writing --------------------------------------------------------------------------------


def _string(value: str | None) -> bytes:
    if value is None:
        return _H.pack(-1)
    data = value.encode()
    return _H.pack(len(data)) + data


def _bytes(value: bytes) -> bytes:
    return _I.pack(len(value)) + value


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _H.pack(OFFSET_KEY_VERSION) + _string(group) + _string(topic) + _I.pack(partition)


def group_key(group: str) -> bytes:
    return _H.pack(GROUP_KEY_VERSION) + _string(group)


def offset_value(value: OffsetValue) -> bytes:
    return (
        _H.pack(OFFSET_VALUE_VERSION)
        + _Q.pack(value.offset)
        + _I.pack(value.leader_epoch)
        + _string(value.metadata)
        + _Q.pack(value.commit_timestamp)
    )


def group_value(value: GroupValue) -> bytes:
    parts = [
        _H.pack(GROUP_VALUE_VERSION),
        _string(value.protocol_type),
        _I.pack(value.generation),
        _string(value.protocol),
        _string(value.leader),
        _Q.pack(value.state_timestamp),
        _I.pack(len(value.members)),
    ]
    for m in value.members:
        parts += [
            _string(m.member_id),
            _string(m.group_instance_id),
            _string(m.client_id),
            _string(m.client_host),
            _I.pack(m.rebalance_timeout),
            _I.pack(m.session_timeout),
            _bytes(m.subscription),
            _bytes(m.assignment),
        ]
    return b"".join(parts)


# -- reading --------------------------------------------------------------------------------


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise RecordFormatError("truncated record")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return int(value)

    def int16(self) -> int:
        return self._take(_H)

    def int32(self) -> int:
        return self._take(_I)

    def int64(self) -> int:
        return self._take(_Q)

    def string(self) -> str | None:
        length = self.int16()
        if length < 0:
            return None
        if self.pos + length > len(self.data):
            raise RecordFormatError("truncated string")
        value = self.data[self.pos : self.pos + length].decode(errors="replace")
        self.pos += length
        return value

    def text(self) -> str:
        return self.string() or ""

    def bytes_(self) -> bytes:
        length = self.int32()
        if length < 0:
            return b""
        value = self.data[self.pos : self.pos + length]
        self.pos += length
        return bytes(value)


def decode_key(data: bytes) -> OffsetKey | GroupKey:
    reader = _Reader(data)
    version = reader.int16()
    if version in (0, 1):
        return OffsetKey(reader.text(), reader.text(), reader.int32())
    if version == GROUP_KEY_VERSION:
        return GroupKey(reader.text())
    raise RecordFormatError(f"unknown key version {version}")


def decode_offset_value(data: bytes) -> OffsetValue:
    reader = _Reader(data)
    version = reader.int16()
    offset = reader.int64()
    epoch = reader.int32() if version >= 3 else -1
    metadata = reader.text()
    timestamp = reader.int64()
    return OffsetValue(offset, epoch, metadata, timestamp)


def decode_group_value(data: bytes) -> GroupValue:
    reader = _Reader(data)
    version = reader.int16()
    protocol_type = reader.text()
    generation = reader.int32()
    protocol = reader.string()
    leader = reader.string()
    timestamp = reader.int64() if version >= 2 else -1
    members = []
    for _ in range(reader.int32()):
        member_id = reader.text()
        instance = reader.string() if version >= 3 else None
        client_id, client_host = reader.text(), reader.text()
        rebalance = reader.int32() if version >= 1 else 0
        session = reader.int32()
        members.append(
            MemberValue(
                member_id,
                instance,
                client_id,
                client_host,
                rebalance,
                session,
                reader.bytes_(),
                reader.bytes_(),
            )
        )
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, tuple(members))
