"""Encoding v2 batches: a whole batch from its records, and a batch recompressed with another codec.

A batch is written as the 61-byte header of :mod:`.batch` (the layout is there) followed by the
records in the layout that :mod:`.codec` reads and describes, compressed as one blob with the codec
that the attributes name (see :mod:`.compression`); the header's CRC-32C covers bytes 21..end.
:func:`encode_batch` and :func:`recompress` are also importable from :mod:`.codec`.

>>> from sluice.broker.records.codec import Record
>>> raw = encode_batch(
...     base_offset=0,
...     records=[Record(0, 0, None, b"v")],
...     compression=0,
...     base_timestamp=0,
...     max_timestamp=0,
... )
>>> len(raw)  # the header, then one record of 8 bytes with its length
69
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from crc32c import crc32c

from sluice.broker.records import compression as _compression
from sluice.broker.records.batch import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    CRC_START,
    DELETE_HORIZON_BIT,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    InvalidBatchError,
)

if TYPE_CHECKING:
    from sluice.broker.records.codec import Record

__all__ = ["encode_batch", "recompress"]

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_BYTE: Final = [bytes((i,)) for i in range(256)]
_NULL: Final = b"\x01"  # zigzag varint of -1
_CRC: Final = struct.Struct(">I")
_CRC_POSITION: Final = 17


def _zigzag(value: int) -> bytes:
    """The zigzag varint of a signed 64-bit ``value``."""
    raw = (value << 1) ^ (value >> 63)
    if raw < 0x80:
        return _BYTE[raw]
    if raw < 0x4000:
        return bytes(((raw & 0x7F) | 0x80, raw >> 7))
    out = bytearray()
    while raw > 0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _encode_records(records: Sequence[Record]) -> bytearray:
    out = bytearray()
    zigzag = _zigzag
    byte = _BYTE
    for record in records:
        start = len(out)
        offset_delta = record.offset_delta
        timestamp_delta = record.timestamp_delta
        if not _INT32_MIN <= offset_delta <= _INT32_MAX:
            raise ValueError(f"offset_delta {offset_delta} does not fit in 32 bits")
        if not _INT64_MIN <= timestamp_delta <= _INT64_MAX:
            raise ValueError(f"timestamp_delta {timestamp_delta} does not fit in 64 bits")
        out += byte[record.attributes & 0xFF]
        out += zigzag(timestamp_delta)
        out += zigzag(offset_delta)
        # Lengths are never negative: their zigzag form is n << 1, one byte below 64.
        key = record.key
        if key is None:
            out += _NULL
        else:
            n = len(key)
            out += byte[n << 1] if n < 64 else zigzag(n)
            out += key
        value = record.value
        if value is None:
            out += _NULL
        else:
            n = len(value)
            out += byte[n << 1] if n < 64 else zigzag(n)
            out += value
        headers = record.headers
        out += byte[len(headers) << 1] if len(headers) < 64 else zigzag(len(headers))
        for header_key, header_value in headers:
            raw_key = header_key.encode("utf-8", "surrogateescape")
            out += zigzag(len(raw_key))
            out += raw_key
            if header_value is None:
                out += _NULL
            else:
                out += zigzag(len(header_value))
                out += header_value
        # The length prefix goes before the body just written: moves this record's bytes only.
        out[start:start] = zigzag(len(out) - start)
    return out


def encode_batch(
    *,
    base_offset: int,
    records: Sequence[Record],
    compression: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
    log_append_time: bool = False,
    delete_horizon: bool = False,
) -> bytes:
    """Encode a complete v2 batch: header, records compressed with ``compression``, CRC-32C.

    ``last_offset_delta`` defaults to the last record's ``offset_delta``; pass the original one
    to keep a batch's offset range when records were removed (compaction), and for a batch
    without records, which Kafka keeps to retain a producer's state. With ``delete_horizon``,
    ``base_timestamp`` is the delete horizon (KIP-534). Raises :class:`ValueError` for a field
    out of its range and :class:`~.compression.UnsupportedCompressionError` for an unknown codec.
    """
    if last_offset_delta is None:
        if not records:
            raise ValueError("last_offset_delta is required for a batch without records")
        last_offset_delta = records[-1].offset_delta
    if compression & ~COMPRESSION_MASK:
        raise _compression.UnsupportedCompressionError(compression)
    attributes = compression
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    if delete_horizon:
        attributes |= DELETE_HORIZON_BIT
    payload = _encode_records(records)
    body = (
        payload if compression == _compression.NONE else _compression.compress(compression, payload)
    )
    return _assemble(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        record_count=len(records),
        body=body,
    )


def recompress(
    buf: bytes | bytearray | memoryview,
    header: BatchHeader,
    compression: int,
    *,
    level: int | None = None,
) -> bytes:
    """The batch that ``header`` describes, its records compressed with ``compression`` instead.

    Offsets, timestamps, producer fields and the other attribute bits stay as they are; the
    length and CRC are recomputed; ``level`` is the codec's level (None: its default). The
    records are decompressed but not parsed: use :func:`decode_records` to check them. Raises
    :class:`~.batch.InvalidBatchError` when the records cannot be decompressed and
    :class:`~.compression.UnsupportedCompressionError` for an unknown target codec.
    """
    if compression & ~COMPRESSION_MASK:
        raise _compression.UnsupportedCompressionError(compression)
    start = header.position + HEADER_SIZE
    end = header.position + header.size
    if end > len(buf):
        raise InvalidBatchError("batch extends past the end of the data", corrupt=True)
    view = memoryview(buf)
    if compression == header.compression:
        return bytes(view[header.position : end])
    try:
        payload = _compression.decompress(header.compression, view[start:end])
    except _compression.UnsupportedCompressionError as exc:
        raise InvalidBatchError(str(exc)) from exc
    except _compression.DecompressionError as exc:
        raise InvalidBatchError(str(exc), corrupt=True) from exc
    body = (
        payload
        if compression == _compression.NONE
        else _compression.compress(compression, payload, level=level)
    )
    return _assemble(
        base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        attributes=(header.attributes & ~COMPRESSION_MASK) | compression,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        record_count=header.record_count,
        body=body,
    )


def _assemble(
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
    body: bytes | bytearray,
) -> bytes:
    head = bytearray(HEADER_SIZE)
    try:
        HEADER.pack_into(
            head,
            0,
            base_offset,
            HEADER_SIZE - LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            record_count,
        )
    except struct.error as exc:
        raise ValueError(f"batch header field out of range: {exc}") from None
    crc = crc32c(body, crc32c(memoryview(head)[CRC_START:]))
    _CRC.pack_into(head, _CRC_POSITION, crc)
    return b"".join((head, body))  # the one copy of the body
