"""Confluent's wire format: how a registry-encoded key or value starts.

Byte layout (all serializers of Confluent's clients write it)::

    offset 0   magic byte 0
    offset 1   schema id, 4 bytes big-endian
    offset 5   PROTOBUF only: the message indexes — a zig-zag varint count N, then N zig-zag
               varints, each a position among the messages of the file (then among the nested
               messages of the one before); the single byte 0 stands for [0], the first message
    then       the payload (Avro binary, JSON text, or the Protobuf message)

The serializers themselves come from confluent-kafka (:mod:`sluice.schemas.serdes`); this module
reads the header where the schema must be learnt from the record (``sluice consume`` decoding by
schema id).

>>> read_header(b"\\x00\\x00\\x00\\x00\\x07{}")
(7, 5)
>>> read_message_indexes(b"\\x00", 0), read_message_indexes(b"\\x04\\x02\\x00", 0)
(([0], 1), ([1, 0], 3))
>>> read_header(b"{}")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sluice.schemas.wire_format.WireFormatError: not in Confluent's wire format: the first byte is...
"""

from __future__ import annotations

from sluice.serde import SerdeError

__all__ = ["MAGIC_BYTE", "WireFormatError", "read_header", "read_message_indexes"]

MAGIC_BYTE = 0


class WireFormatError(SerdeError):
    """The bytes do not start with Confluent's header."""


def read_header(data: bytes) -> tuple[int, int]:
    """``(schema id, offset of what follows)`` of *data*."""
    if not data:
        raise WireFormatError("not in Confluent's wire format: empty")
    if data[0] != MAGIC_BYTE:
        raise WireFormatError(
            f"not in Confluent's wire format: the first byte is {data[0]:#04x}, "
            f"not the magic byte {MAGIC_BYTE}"
        )
    if len(data) < 5:
        raise WireFormatError(f"not in Confluent's wire format: {len(data)} bytes, no schema id")
    return int.from_bytes(data[1:5], "big"), 5


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if offset >= len(data) or shift > 63:
            raise WireFormatError("truncated Protobuf message indexes")
        byte = data[offset]
        offset += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), offset  # zig-zag
        shift += 7


def read_message_indexes(data: bytes, offset: int) -> tuple[list[int], int]:
    """``(message indexes, offset of the message)`` at *offset* (after the schema id)."""
    count, offset = _varint(data, offset)
    if count == 0:
        return [0], offset
    if count < 0 or count > len(data):
        raise WireFormatError(f"bad Protobuf message index count {count}")
    indexes = []
    for _ in range(count):
        index, offset = _varint(data, offset)
        indexes.append(index)
    return indexes, offset
