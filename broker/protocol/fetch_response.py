"""The Fetch response, written around its records instead of through them.

Layout (Kafka's ``FetchResponse.json``, versions 4 to 16; big-endian). In the flexible versions
(12+) arrays, strings and bytes are *compact* (unsigned varint of length + 1, 0 for null) and
the header and every struct end with their tagged fields (none here: one 0 byte)::

    frame       = size:int32 correlation_id:int32 [header tags: 12+]
                  throttle_time_ms:int32 [error_code:int16 session_id:int32: 7+]
                  topics:array(topic) [tags: 12+]
    topic       = name:string (4-12) | topic_id:uuid (13+)   partitions:array(partition) [tags]
    partition   = partition_index:int32 error_code:int16 high_watermark:int64
                  last_stable_offset:int64 [log_start_offset:int64: 5+]
                  aborted_transactions:nullable array(producer_id:int64 first_offset:int64 [tags])
                  [preferred_read_replica:int32 (-1: none): 11+]
                  records:nullable bytes [tags: 12+]
    tags        = count:uvarint (tag:uvarint size:uvarint value)*
                  the partition's tag 0 is diverging_epoch = epoch:int32 end_offset:int64 [tags]

Why not kio: its writer goes through a ``BytesIO``, so every fetched byte was copied into it and
out of it again as ``bytes``, besides the read from the segment. Here a response is an
:class:`OutgoingFrame`: the framing bytes, and between them each partition's records as they
are — a :class:`~sluice.broker.log.region.FileRegion` of the segment file (which the connection
sends with ``os.sendfile`` where it can) or ``bytes``. Only the framing is built in memory.

Of the tagged fields, only a partition's ``diverging_epoch`` (v12+, answering a follower whose
log diverged from the leader's) is written, when it is not its default ``(-1, -1)``; the others
(``current_leader``, ``snapshot_id``, ``node_endpoints``) are left out, as kio leaves out their
defaults: the bytes are those kio writes for the same response, which
``tests/broker/test_fetch_response.py`` checks for every version.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from sluice.broker.log.region import FileRegion
from sluice.broker.protocol.api_keys import FETCH

__all__ = [
    "NO_DIVERGING_EPOCH",
    "FetchAnswer",
    "OutgoingFrame",
    "PartitionAnswer",
    "TopicAnswer",
    "encode_fetch_response",
]

VERSIONS = range(4, 17)
"""The versions written here."""
FLEXIBLE_FROM = 12
TOPIC_IDS_FROM = 13

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEADER_V7 = struct.Struct(">ihi")  # throttle_time_ms, error_code, session_id
_PARTITION_V5 = struct.Struct(">ihqqq")  # index, error, high watermark, LSO, log start offset
_PARTITION_V4 = struct.Struct(">ihqq")
_ABORTED = struct.Struct(">qq")
_DIVERGING = struct.Struct(">BBBiqB")  # 1 tag, tag 0, 13 bytes: epoch, end offset, no tags
NO_DIVERGING_EPOCH = (-1, -1)


@dataclass(slots=True)
class PartitionAnswer:
    """One partition of a Fetch response (-1: unknown, as Kafka writes it)."""

    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: list[tuple[int, int]] | None = None
    """``(producer_id, first_offset)`` pairs; None (null) unless read_committed."""
    records: FileRegion | bytes = b""
    diverging_epoch: tuple[int, int] = NO_DIVERGING_EPOCH
    """``(epoch, end_offset)`` past which a follower's log diverges from the leader's (v12+);
    ``(-1, -1)``: none."""
    preferred_read_replica: int = -1
    """The broker a consumer should fetch this partition from instead (KIP-392, v11+): set by
    a leader with a ``replica.selector.class``, with no records; -1: none."""


@dataclass(slots=True)
class TopicAnswer:
    """One topic of a Fetch response: by name (v4-v12) or by id (v13+)."""

    name: str | None
    topic_id: uuid.UUID | None
    partitions: list[PartitionAnswer] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OutgoingFrame:
    """A response frame in parts, size prefix included, sent in order: ``bytes`` as they are,
    each :class:`FileRegion` from its file. The frame owns its regions (:meth:`close`)."""

    parts: tuple[bytes | bytearray | FileRegion, ...]

    @property
    def regions(self) -> tuple[FileRegion, ...]:
        return tuple(p for p in self.parts if isinstance(p, FileRegion))

    @property
    def region_bytes(self) -> int:
        """How many bytes the regions hold together."""
        return sum(p.size for p in self.parts if isinstance(p, FileRegion))

    def to_bytes(self) -> bytes:
        """The whole frame in one ``bytes`` (reads the regions; for tests and tools)."""
        return b"".join(p.read() if isinstance(p, FileRegion) else p for p in self.parts)

    def close(self) -> None:
        """Close every region (once sent, or when the frame will not be sent)."""
        for region in self.regions:
            region.close()


@dataclass(slots=True)
class FetchAnswer:
    """What the Fetch handler answers: the response of ``version`` but for the frame's header,
    which the server adds (:meth:`frame`). It owns its partitions' regions until framed."""

    api_key: ClassVar[int] = FETCH
    versions: ClassVar[range] = VERSIONS

    version: int
    topics: list[TopicAnswer]
    error_code: int = 0
    session_id: int = 0
    throttle_time_ms: int = 0
    waited_s: float = 0.0
    """Seconds the handler waited for records (``min_bytes``): not handling time (quotas)."""

    def frame(self, correlation_id: int) -> OutgoingFrame:
        """The response frame (which then owns the regions)."""
        try:
            return encode_fetch_response(
                self.version,
                correlation_id,
                self.topics,
                error_code=self.error_code,
                session_id=self.session_id,
                throttle_time_ms=self.throttle_time_ms,
            )
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the regions of a response that will not be sent."""
        for topic in self.topics:
            for partition in topic.partitions:
                if isinstance(partition.records, FileRegion):
                    partition.records.close()


def _uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def encode_fetch_response(
    version: int,
    correlation_id: int,
    topics: list[TopicAnswer],
    *,
    error_code: int = 0,
    session_id: int = 0,
    throttle_time_ms: int = 0,
) -> OutgoingFrame:
    """The whole Fetch response frame of ``version`` (4-16) around its partitions' records."""
    if version not in VERSIONS:
        raise ValueError(f"Fetch response version {version} is not written (only {VERSIONS})")
    flexible = version >= FLEXIBLE_FROM
    parts: list[bytes | bytearray | FileRegion] = []
    out = head = bytearray(4)  # the size, patched in at the end
    out += _I32.pack(correlation_id)
    if flexible:
        out.append(0)
    if version >= 7:
        out += _HEADER_V7.pack(throttle_time_ms, error_code, session_id)
    else:
        out += _I32.pack(throttle_time_ms)
    _array_length(out, len(topics), flexible)
    size = 0
    for topic in topics:
        if version >= TOPIC_IDS_FROM:
            out += (topic.topic_id or uuid.UUID(int=0)).bytes
        else:
            name = (topic.name or "").encode()
            if flexible:
                _uvarint(out, len(name) + 1)
            else:
                out += _I16.pack(len(name))
            out += name
        _array_length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            if version >= 5:
                out += _PARTITION_V5.pack(
                    p.partition_index,
                    p.error_code,
                    p.high_watermark,
                    p.last_stable_offset,
                    p.log_start_offset,
                )
            else:
                out += _PARTITION_V4.pack(
                    p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset
                )
            aborted = p.aborted_transactions
            if aborted is None:
                out += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                _array_length(out, len(aborted), flexible)
                for producer_id, first_offset in aborted:
                    out += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        out.append(0)
            if version >= 11:
                out += _I32.pack(p.preferred_read_replica)
            records = p.records
            if flexible:
                _uvarint(out, len(records) + 1)
            else:
                out += _I32.pack(len(records))
            if records:  # a part of its own, not copied
                size += len(out) + len(records)
                parts += (out, records)
                out = bytearray()
            if flexible:
                if p.diverging_epoch == NO_DIVERGING_EPOCH:
                    out.append(0)
                else:
                    out += _DIVERGING.pack(1, 0, 13, *p.diverging_epoch, 0)
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)
    size += len(out)
    parts.append(out)
    _I32.pack_into(head, 0, size - 4)
    return OutgoingFrame(tuple(parts))


def _array_length(out: bytearray, length: int, flexible: bool) -> None:
    if flexible:
        _uvarint(out, length + 1)
    else:
        out += _I32.pack(length)
