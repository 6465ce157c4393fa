"""A pure decoder of PostgreSQL's ``pgoutput`` logical replication messages, protocol version 1.

Every message is one ``XLogData`` payload; its first byte says what it is. Integers are
big-endian, strings are NUL-terminated UTF-8, LSNs are Int64, timestamps Int64 microseconds
since 2000-01-01 UTC::

    B  Begin     Int64 final (commit) LSN, Int64 commit time, Int32 xid
    C  Commit    Int8 flags (0), Int64 commit LSN, Int64 end LSN, Int64 commit time
    O  Origin    Int64 commit LSN on the origin, String origin name
    R  Relation  Int32 relation OID, String namespace ("" = pg_catalog), String name,
                 Int8 replica identity (d default, n nothing, f full, i index), Int16 columns,
                 per column: Int8 flags (1 = part of the key), String name, Int32 type OID,
                 Int32 type modifier
    Y  Type      Int32 type OID, String namespace, String name
    I  Insert    Int32 relation OID, 'N', TupleData
    U  Update    Int32 relation OID, ['K' TupleData (old key) | 'O' TupleData (old row)], 'N',
                 TupleData
    D  Delete    Int32 relation OID, 'K' or 'O', TupleData
    T  Truncate  Int32 relation count, Int8 options (1 cascade, 2 restart identity),
                 Int32 relation OID per relation
    M  Message   Int8 flags (1 transactional), Int64 LSN, String prefix, Int32 length, bytes

    TupleData    Int16 columns, per column: 'n' (null) | 'u' (unchanged TOASTed value, not sent)
                 | 't' Int32 length, text bytes | 'b' Int32 length, binary bytes

Text values stay text here (:data:`UNCHANGED` marks a ``'u'`` column); :mod:`.types` parses
them. The decoder keeps no state and does no I/O.

>>> lsn, time, xid = (0x16B3748).to_bytes(8, "big"), bytes(8), (742).to_bytes(4, "big")
>>> decode(b"B" + lsn + time + xid)
Begin(final_lsn=23803720, commit_time=946684800000000, xid=742)
>>> tuple_ = b"\\x00\\x03n" + b"u" + b"t\\x00\\x00\\x00\\x02hi"
>>> decode(b"I\\x00\\x00\\x40\\x00N" + tuple_)
Insert(relation=16384, new=(None, UNCHANGED, 'hi'))
>>> format_lsn(23803720), parse_lsn("0/16B3748")
('0/16B3748', 23803720)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = [
    "PG_EPOCH_US",
    "UNCHANGED",
    "Begin",
    "Column",
    "Commit",
    "DecodeError",
    "Delete",
    "Insert",
    "LogicalMessage",
    "Message",
    "Origin",
    "Relation",
    "Truncate",
    "TupleValue",
    "Type",
    "Update",
    "decode",
    "format_lsn",
    "parse_lsn",
]

PG_EPOCH_US = 946_684_800_000_000
"""2000-01-01 UTC in microseconds since the Unix epoch (PostgreSQL's timestamps count from it)."""


class _Unchanged:
    """An unchanged TOASTed value: PostgreSQL did not send it (``'u'`` in TupleData)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged()
"""The value of a ``'u'`` column."""

TupleValue = str | bytes | _Unchanged | None
"""One column of TupleData: text, binary, :data:`UNCHANGED` or None (SQL NULL)."""


class DecodeError(ValueError):
    """The bytes are not a pgoutput v1 message."""


@dataclass(frozen=True, slots=True)
class Begin:
    """A transaction starts; its changes follow, then :class:`Commit`."""

    final_lsn: int
    commit_time: int  # microseconds since the Unix epoch
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    """The transaction whose :class:`Begin` came last is complete."""

    flags: int
    commit_lsn: int
    end_lsn: int
    commit_time: int  # microseconds since the Unix epoch


@dataclass(frozen=True, slots=True)
class Origin:
    """The transaction came from another server (replication origin)."""

    commit_lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class Column:
    """A column of a :class:`Relation`."""

    name: str
    type_oid: int
    type_modifier: int
    key: bool  # part of the replica identity


@dataclass(frozen=True, slots=True)
class Relation:
    """A table's shape; sent before its first change in a session and after it changes."""

    oid: int
    namespace: str
    name: str
    replica_identity: str  # d, n, f or i
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class Type:
    """A user-defined type's name (sent before a relation that uses it)."""

    oid: int
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Insert:
    """A row was inserted."""

    relation: int
    new: tuple[TupleValue, ...]


@dataclass(frozen=True, slots=True)
class Update:
    """A row was updated; ``old`` is the old key (``'K'``), the old row (``'O'``) or None."""

    relation: int
    old_kind: str | None
    old: tuple[TupleValue, ...] | None
    new: tuple[TupleValue, ...]


@dataclass(frozen=True, slots=True)
class Delete:
    """A row was deleted; ``old`` is its key (``'K'``) or, with REPLICA IDENTITY FULL, the row."""

    relation: int
    old_kind: str
    old: tuple[TupleValue, ...]


@dataclass(frozen=True, slots=True)
class Truncate:
    """Tables were truncated."""

    options: int  # 1: CASCADE, 2: RESTART IDENTITY
    relations: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogicalMessage:
    """A message written with ``pg_logical_emit_message``."""

    transactional: bool
    lsn: int
    prefix: str
    content: bytes


Message = (
    Begin | Commit | Origin | Relation | Type | Insert | Update | Delete | Truncate | LogicalMessage
)
"""Any decoded message."""


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT64 = struct.Struct(">q")
_UINT64 = struct.Struct(">Q")


def _truncated(position: int, size: int) -> DecodeError:
    return DecodeError(f"message truncated at byte {position} (needs {size} more)")


def _tuple_data(data: bytes, position: int) -> tuple[tuple[TupleValue, ...], int]:
    """The TupleData at ``position`` of ``data``, and the position after it."""
    size = len(data)
    if position + 2 > size:
        raise _truncated(position, 2)
    count: int = _INT16.unpack_from(data, position)[0]
    position += 2
    values: list[TupleValue] = []
    append = values.append
    for _ in range(count):
        if position >= size:
            raise _truncated(position, 1)
        kind = data[position]
        position += 1
        if kind in (0x74, 0x62):  # 't' text, 'b' binary: Int32 length, bytes
            if position + 4 > size:
                raise _truncated(position, 4)
            length: int = _INT32.unpack_from(data, position)[0]
            position += 4
            end = position + length
            if end > size:
                raise _truncated(position, length)
            chunk = data[position:end]
            append(chunk.decode("utf-8") if kind == 0x74 else chunk)
            position = end
        elif kind == 0x6E:  # 'n'
            append(None)
        elif kind == 0x75:  # 'u'
            append(UNCHANGED)
        else:
            raise DecodeError(f"unknown TupleData column kind {chr(kind)!r}")
    return tuple(values), position


def _insert(data: bytes) -> Insert:
    """An Insert (``I``, Int32 relation OID, ``N``, TupleData): the most frequent message,
    read without a :class:`_Reader`."""
    if len(data) < 6:
        raise _truncated(1, 4) if len(data) < 5 else _truncated(5, 1)
    if data[5] != 0x4E:  # 'N'
        raise DecodeError(f"expected 'N', found {chr(data[5])!r} at byte 5")
    values, end = _tuple_data(data, 6)
    if end != len(data):
        raise DecodeError(f"{len(data) - end} bytes left after a 'I'")
    relation: int = _UINT32.unpack_from(data, 1)[0]
    return Insert(relation, values)


class _Reader:
    """Reads a message from its start; hot path (every change), so ``unpack_from`` in place."""

    __slots__ = ("data", "position")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.position = 0

    def _need(self, size: int) -> int:
        """Take ``size`` bytes: their start."""
        position = self.position
        end = position + size
        if end > len(self.data):
            raise _truncated(position, size)
        self.position = end
        return position

    def _take(self, size: int) -> bytes:
        position = self._need(size)
        return self.data[position : position + size]

    def int8(self) -> int:
        return self.data[self._need(1)]

    def byte(self) -> str:
        return chr(self.data[self._need(1)])

    def int16(self) -> int:
        value: int = _INT16.unpack_from(self.data, self._need(2))[0]
        return value

    def int32(self) -> int:
        value: int = _INT32.unpack_from(self.data, self._need(4))[0]
        return value

    def uint32(self) -> int:
        value: int = _UINT32.unpack_from(self.data, self._need(4))[0]
        return value

    def int64(self) -> int:
        value: int = _INT64.unpack_from(self.data, self._need(8))[0]
        return value

    def lsn(self) -> int:
        value: int = _UINT64.unpack_from(self.data, self._need(8))[0]
        return value

    def timestamp(self) -> int:
        return self.int64() + PG_EPOCH_US

    def string(self) -> str:
        end = self.data.find(b"\0", self.position)
        if end < 0:
            raise DecodeError(f"unterminated string at byte {self.position}")
        text = self.data[self.position : end].decode("utf-8")
        self.position = end + 1
        return text

    def tuple_data(self) -> tuple[TupleValue, ...]:
        values, self.position = _tuple_data(self.data, self.position)
        return values

    def expect(self, wanted: str) -> None:
        found = self.byte()
        if found != wanted:
            raise DecodeError(f"expected {wanted!r}, found {found!r} at byte {self.position - 1}")


def _relation(reader: _Reader) -> Relation:
    oid = reader.uint32()
    namespace = reader.string() or "pg_catalog"
    name = reader.string()
    identity = reader.byte()
    columns = []
    for _ in range(reader.int16()):
        flags = reader.int8()
        column = reader.string()
        columns.append(Column(column, reader.uint32(), reader.int32(), bool(flags & 1)))
    return Relation(oid, namespace, name, identity, tuple(columns))


def _update(reader: _Reader) -> Update:
    relation = reader.uint32()
    kind = reader.byte()
    old_kind: str | None = None
    old = None
    if kind in ("K", "O"):
        old_kind, old = kind, reader.tuple_data()
        kind = reader.byte()
    if kind != "N":
        raise DecodeError(f"expected 'N' in an Update, found {kind!r}")
    return Update(relation, old_kind, old, reader.tuple_data())


def _delete(reader: _Reader) -> Delete:
    relation = reader.uint32()
    kind = reader.byte()
    if kind not in ("K", "O"):
        raise DecodeError(f"expected 'K' or 'O' in a Delete, found {kind!r}")
    return Delete(relation, kind, reader.tuple_data())


def _logical_message(reader: _Reader) -> LogicalMessage:
    flags = reader.int8()
    lsn = reader.lsn()
    prefix = reader.string()
    return LogicalMessage(bool(flags & 1), lsn, prefix, reader._take(reader.int32()))


def decode(payload: bytes) -> Message:
    """The message in one pgoutput v1 payload; :class:`DecodeError` if it is not one."""
    if not payload:
        raise DecodeError("empty message")
    if payload[0] == 0x49:  # 'I'
        return _insert(bytes(payload))
    reader = _Reader(bytes(payload))
    kind = reader.byte()
    message: Message
    if kind == "U":
        message = _update(reader)
    elif kind == "D":
        message = _delete(reader)
    elif kind == "B":
        message = Begin(reader.lsn(), reader.timestamp(), reader.uint32())
    elif kind == "C":
        message = Commit(reader.int8(), reader.lsn(), reader.lsn(), reader.timestamp())
    elif kind == "O":
        message = Origin(reader.lsn(), reader.string())
    elif kind == "R":
        message = _relation(reader)
    elif kind == "Y":
        message = Type(reader.uint32(), reader.string() or "pg_catalog", reader.string())
    elif kind == "T":
        count = reader.int32()
        options = reader.int8()
        message = Truncate(options, tuple(reader.uint32() for _ in range(count)))
    elif kind == "M":
        message = _logical_message(reader)
    else:
        raise DecodeError(f"unknown pgoutput message type {kind!r}")
    if reader.position != len(reader.data):
        raise DecodeError(f"{len(reader.data) - reader.position} bytes left after a {kind!r}")
    return message


def format_lsn(lsn: int) -> str:
    """PostgreSQL's text form of an LSN: ``0/16B3748``."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """The number of an LSN written as ``0/16B3748``."""
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)
