"""The records inside a v2 batch: their byte layout, :class:`Record`, and decoding them.

Encoding a whole batch and recompressing one are :mod:`.encoder`'s; :func:`encode_batch` and
:func:`recompress` are re-exported here, beside :func:`decode_records`.

Byte layout of one record (Kafka's ``DefaultRecord``). A batch holds ``record_count`` records back
to back after its 61-byte header (see :mod:`.batch`); when the batch attributes name a codec, that
whole sequence is compressed as one blob (see :mod:`.compression`)::

    field                   type      meaning
    length                  varint    bytes of the record after this field
    attributes              int8      unused by Kafka (0)
    timestamp_delta         varlong   timestamp - the batch's base_timestamp
    offset_delta            varint    offset - the batch's base_offset
    key_length              varint    -1 for a null key
    key                     bytes
    value_length            varint    -1 for a null value
    value                   bytes
    header_count            varint
    header_count times:
      header_key_length     varint    never negative: header keys are not nullable
      header_key            UTF-8
      header_value_length   varint    -1 for a null value
      header_value          bytes

``varint`` and ``varlong`` are zigzag-encoded base-128 integers, least significant group first
(protobuf's ``sint32``/``sint64``): at most 5 and 10 bytes.

Header keys are decoded with ``surrogateescape``, so a key that is not valid UTF-8 (librdkafka
accepts any bytes) survives decode → encode byte for byte, as compaction needs.

>>> from sluice.broker.records import batch
>>> raw = encode_batch(
...     base_offset=42,
...     records=[Record(0, 0, b"k", b"v", (("trace", b"1"),)), Record(1, 5, None, None)],
...     compression=1,
...     base_timestamp=1_700_000_000_000,
...     max_timestamp=1_700_000_000_005,
... )
>>> header = batch.read_header(raw)
>>> batch.validate(raw, header)
>>> header.base_offset, header.record_count, header.compression, header.last_offset_delta
(42, 2, 1, 1)
>>> decode_records(raw, header)[1]
Record(offset_delta=1, timestamp_delta=5, key=None, value=None, headers=(), attributes=0)
>>> zstd = recompress(raw, header, 4)
>>> decode_records(zstd, batch.read_header(zstd)) == decode_records(raw, header)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from sluice.broker.records import compression as _compression
from sluice.broker.records.batch import HEADER_SIZE, BatchHeader, InvalidBatchError
from sluice.broker.records.encoder import encode_batch, recompress

__all__ = ["Record", "decode_records", "encode_batch", "recompress"]


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a batch, its offset and timestamp relative to the batch's base."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0


@dataclass(slots=True)
class _RecordBuilder:
    """Record's twin without ``frozen``: the decoder builds one and makes it a :class:`Record`.

    A frozen dataclass sets each field through ``object.__setattr__``, which makes creating one
    about three times slower than this; decoding is dominated by that cost. With the same slots
    in the same order, ``instance.__class__ = Record`` is allowed and leaves a true, frozen Record.
    """

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    attributes: int


assert _RecordBuilder.__slots__ == Record.__slots__

_MIN_RECORD_SIZE: Final = 7  # one byte for each field of an empty record


class _CorruptError(Exception):
    """Raised inside the decoder; turned into InvalidBatchError at its boundary."""


# ---------------------------------------------------------------------------------- decoding


def decode_records(buf: bytes | bytearray | memoryview, header: BatchHeader) -> list[Record]:
    """Decode the records of the batch that ``header`` describes (read from ``buf``).

    Decompresses per ``header.compression``. Raises :class:`~.batch.InvalidBatchError` with
    ``corrupt=True`` when the bytes are malformed (truncated, lengths that do not add up, a
    record count that does not match, bytes left over) and ``corrupt=False`` for an unknown
    codec. The CRC is not checked here: that is :func:`~.batch.validate`'s job.
    """
    start = header.position + HEADER_SIZE
    end = header.position + header.size
    if end > len(buf):
        raise InvalidBatchError("batch extends past the end of the data", corrupt=True)
    if header.record_count < 0:
        raise InvalidBatchError(f"negative record count {header.record_count}", corrupt=True)
    codec = header.compression
    if codec == _compression.NONE:
        if isinstance(buf, bytes):
            data, position = buf, start  # no copy: decode in place
        else:
            data, position, end = bytes(memoryview(buf)[start:end]), 0, end - start
    else:
        try:
            data = _compression.decompress(codec, memoryview(buf)[start:end])
        except _compression.UnsupportedCompressionError as exc:
            raise InvalidBatchError(str(exc)) from exc
        except _compression.DecompressionError as exc:
            raise InvalidBatchError(str(exc), corrupt=True) from exc
        position, end = 0, len(data)
    try:
        return _decode(data, position, end, header.record_count)
    except _CorruptError as exc:
        raise InvalidBatchError(f"malformed record: {exc}", corrupt=True) from None
    except IndexError:  # a varint or fixed field ran past the end of the data
        raise InvalidBatchError("malformed record: truncated", corrupt=True) from None


def _varint(data: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    """A zigzag varint of up to ``max_bytes`` bytes at ``pos``: (value, position after it)."""
    raw = data[pos]
    if raw < 0x80:
        return (raw >> 1) ^ -(raw & 1), pos + 1
    second = data[pos + 1]
    if second < 0x80:  # the common case the caller's inline path does not take
        raw = (raw & 0x7F) | (second << 7)
        return (raw >> 1) ^ -(raw & 1), pos + 2
    raw = 0
    shift = 0
    for _ in range(max_bytes):
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            if raw >> (32 if max_bytes == 5 else 64):
                raise _CorruptError("varint out of range")
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
    raise _CorruptError("varint too long")


def _decode(data: bytes, pos: int, end: int, count: int) -> list[Record]:
    # Every varint takes the inline path when it is one byte long; _varint does the rest.
    if count > (end - pos) // _MIN_RECORD_SIZE:
        raise _CorruptError(f"{count} records cannot fit in {end - pos} bytes")
    records: list[Record] = []
    append = records.append
    varint = _varint
    for _ in range(count):
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            length, pos = varint(data, pos, 5)
        if length < 0 or pos + length > end:
            raise _CorruptError(f"record length {length} with {end - pos} bytes left")
        record_end = pos + length

        attributes = data[pos]
        if attributes > 127:
            attributes -= 256
        b = data[pos + 1]
        if b < 0x80:
            timestamp_delta = (b >> 1) ^ -(b & 1)
            pos += 2
        else:
            timestamp_delta, pos = varint(data, pos + 1, 10)
        b = data[pos]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            offset_delta, pos = varint(data, pos, 5)

        b = data[pos]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n, pos = varint(data, pos, 5)
        if n >= 0:
            if pos + n > record_end:
                raise _CorruptError(f"key length {n} past the record's end")
            key: bytes | None = data[pos : pos + n]
            pos += n
        elif n == -1:
            key = None
        else:
            raise _CorruptError(f"key length {n}")

        b = data[pos]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n, pos = varint(data, pos, 5)
        if n >= 0:
            if pos + n > record_end:
                raise _CorruptError(f"value length {n} past the record's end")
            value: bytes | None = data[pos : pos + n]
            pos += n
        elif n == -1:
            value = None
        else:
            raise _CorruptError(f"value length {n}")

        b = data[pos]
        if b < 0x80:
            header_count = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            header_count, pos = varint(data, pos, 5)
        if header_count:
            headers = _decode_headers(data, pos, record_end, header_count)
            pos = record_end
        else:
            headers = ()
            if pos != record_end:
                raise _CorruptError(f"record length {length} does not match its fields")
        record = _RecordBuilder(offset_delta, timestamp_delta, key, value, headers, attributes)
        record.__class__ = Record  # type: ignore[assignment]
        append(record)  # type: ignore[arg-type]
    if pos != end:
        raise _CorruptError(f"{end - pos} bytes after the last of {count} records")
    return records


def _decode_headers(
    data: bytes, pos: int, end: int, count: int
) -> tuple[tuple[str, bytes | None], ...]:
    if count < 0 or count > (end - pos) // 2:
        raise _CorruptError(f"header count {count} with {end - pos} bytes left")
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        n, pos = _varint(data, pos, 5)
        if n < 0 or pos + n > end:
            raise _CorruptError(f"header key length {n}")
        key = data[pos : pos + n].decode("utf-8", "surrogateescape")
        pos += n
        n, pos = _varint(data, pos, 5)
        if n >= 0:
            if pos + n > end:
                raise _CorruptError(f"header value length {n} past the record's end")
            value: bytes | None = data[pos : pos + n]
            pos += n
        elif n == -1:
            value = None
        else:
            raise _CorruptError(f"header value length {n}")
        headers.append((key, value))
    if pos != end:
        raise _CorruptError("record length does not match its fields")
    return tuple(headers)
