"""The record batch header (magic v2): read, validate, and patch in place.

Byte layout of one batch (big-endian), as Kafka defines it::

    offset  size  field
         0     8  base_offset            \\  outside the CRC: the broker assigns
         8     4  batch_length           |  the base offset by patching these bytes
        12     4  partition_leader_epoch /
        16     1  magic (= 2)
        17     4  crc (CRC-32C of bytes 21..end)
        21     2  attributes   bits 0-2 compression, 3 timestamp type, 4 transactional,
                               5 control, 6 delete horizon set
        23     4  last_offset_delta
        27     8  base_timestamp
        35     8  max_timestamp
        43     8  producer_id
        51     2  producer_epoch
        53     4  base_sequence
        57     4  record_count
        61     …  records (possibly compressed)

``batch_length`` counts the bytes after itself, so a batch occupies ``12 + batch_length`` bytes.

This is a hot path: the broker handles each produced batch with one ``struct`` unpack and one
CRC over the payload, never per record.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # base_offset + batch_length
CRC_START = 21
MAGIC_V2 = 2

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

_BASE_OFFSET = struct.Struct(">q")
_MAX_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")
_LEADER_EPOCH = struct.Struct(">i")


class InvalidBatchError(ValueError):
    """A batch that is not well formed: its ``reason`` says how."""

    def __init__(self, reason: str, *, corrupt: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.corrupt = corrupt
        """True when the bytes are damaged (CRC or length), False when merely unsupported."""


@dataclass(frozen=True, slots=True)
class BatchHeader:
    """The fixed 61-byte header of one batch, plus where it sits in its buffer."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int
    position: int = 0
    """Byte position of the batch in the buffer it was read from."""

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % 2**31


def read_header(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Read the header of the batch at ``position``.

    Raises :class:`InvalidBatchError` if fewer than the header's bytes remain or the magic is not 2.
    """
    if len(buf) - position < HEADER_SIZE:
        raise InvalidBatchError("truncated batch header", corrupt=True)
    (
        base_offset,
        batch_length,
        epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    ) = HEADER.unpack_from(buf, position)
    header = BatchHeader(
        base_offset,
        batch_length,
        epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
        position,
    )
    if header.magic != MAGIC_V2:
        raise InvalidBatchError(f"unsupported record batch magic {header.magic}")
    if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatchError(f"batch length {header.batch_length} is too small", corrupt=True)
    return header


def iter_headers(
    buf: bytes | bytearray | memoryview, start: int = 0, end: int | None = None
) -> Iterator[BatchHeader]:
    """Yield the header of every complete batch in ``buf[start:end]``.

    Stops (without error) at a trailing partial batch; callers that need to know compare the
    last header's end with ``end``.
    """
    end = len(buf) if end is None else end
    position = start
    while end - position >= HEADER_SIZE:
        header = read_header(buf, position)
        if position + header.size > end:
            return
        yield header
        position += header.size


def validate(buf: bytes | bytearray | memoryview, header: BatchHeader) -> None:
    """Check the batch's CRC-32C (the bytes from ``attributes`` to its end)."""
    start = header.position + CRC_START
    end = header.position + header.size
    if end > len(buf):
        raise InvalidBatchError("batch extends past the end of the data", corrupt=True)
    if crc32c(memoryview(buf)[start:end]) != header.crc:
        raise InvalidBatchError("CRC-32C mismatch", corrupt=True)


def set_base_offset(buf: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Patch the base offset of the batch at ``position`` (outside the CRC: no recompute)."""
    _BASE_OFFSET.pack_into(buf, position, base_offset)


def set_leader_epoch(buf: bytearray | memoryview, position: int, epoch: int) -> None:
    """Patch the partition leader epoch (outside the CRC)."""
    _LEADER_EPOCH.pack_into(buf, position + 12, epoch)


def set_log_append_time(buf: bytearray | memoryview, position: int, timestamp: int) -> None:
    """Mark a batch LogAppendTime with ``timestamp`` as its max timestamp; recomputes the CRC."""
    attributes = struct.unpack_from(">h", buf, position + CRC_START)[0]
    struct.pack_into(">h", buf, position + CRC_START, attributes | TIMESTAMP_TYPE_BIT)
    _MAX_TIMESTAMP.pack_into(buf, position + 35, timestamp)
    length = _LEADER_EPOCH.unpack_from(buf, position + 8)[0]
    crc = crc32c(memoryview(buf)[position + CRC_START : position + LOG_OVERHEAD + length])
    _CRC.pack_into(buf, position + 17, crc)
