"""The compression codecs of a record batch, with the framings Kafka's clients use.

A v2 batch compresses its records as one blob; bits 0-2 of the batch attributes name the codec:

====  ======  ===================================================================================
 id   codec   framing of the compressed records
====  ======  ===================================================================================
  0   none    the records as they are
  1   gzip    a gzip stream (RFC 1952); several concatenated members are read as one stream
  2   snappy  written in the xerial block framing, as the Java producer does::

                  magic 82 'SNAPPY' 00 | version int32 BE | compat int32 BE     (16 bytes)
                  { block length int32 BE | raw snappy block of <= 32 KiB input }...

              read in that framing or as one raw snappy block (what librdkafka writes); both
              Java's and librdkafka's readers accept either. The version and compat fields
              are not checked: some producers write them little-endian.
  3   lz4     an LZ4 frame: written as the Java producer writes it (independent 64 KiB blocks,
              no checksums, no content size); read with any frame option. Java's reader
              rejects linked blocks, so the frame must not be written with them.
  4   zstd    a zstd frame (read with or without the content size, as the Java producer
              streams frames without it); concatenated frames are read as one stream
====  ======  ===================================================================================

Exceptions (all :class:`ValueError`)::

    CompressionError
     ├── UnsupportedCompressionError   a codec id other than 0-4
     └── DecompressionError            bytes that the codec cannot decompress

>>> packed = compress(SNAPPY, b"sluice " * 100)
>>> packed[:8]
b'\\x82SNAPPY\\x00'
>>> decompress(SNAPPY, packed) == b"sluice " * 100
True
>>> compress(7, b"")  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
...
UnsupportedCompressionError: unsupported compression codec 7 (Kafka's are 0 none, 1 gzip, ...)
"""

from __future__ import annotations

import struct
from typing import Final

import cramjam

__all__ = [
    "CODEC_NAMES",
    "GZIP",
    "LZ4",
    "NONE",
    "SNAPPY",
    "ZSTD",
    "CompressionError",
    "DecompressionError",
    "UnsupportedCompressionError",
    "compress",
    "decompress",
]

NONE: Final = 0
GZIP: Final = 1
SNAPPY: Final = 2
LZ4: Final = 3
ZSTD: Final = 4

CODEC_NAMES: Final[dict[int, str]] = {
    NONE: "none",
    GZIP: "gzip",
    SNAPPY: "snappy",
    LZ4: "lz4",
    ZSTD: "zstd",
}
"""Codec id → the name Kafka's ``compression.type`` uses."""


class CompressionError(ValueError):
    """Base of this module's errors."""


class UnsupportedCompressionError(CompressionError):
    """A codec id that is not one of Kafka's (0-4)."""

    def __init__(self, codec: int) -> None:
        super().__init__(
            f"unsupported compression codec {codec} "
            "(Kafka's are 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)"
        )
        self.codec = codec


class DecompressionError(CompressionError):
    """Bytes that are not a valid stream of the codec (damaged or truncated)."""


# Snappy, xerial framing (what Java's SnappyOutputStream writes; 32 KiB is its block size).
_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE: Final = len(_XERIAL_HEADER)  # 16
_XERIAL_BLOCK: Final = 32 * 1024
_BE_INT32: Final = struct.Struct(">i")

# LZ4 frame header as Java's KafkaLZ4BlockOutputStream writes it: magic 184D2204 (LE), FLG 0x60
# (version 1, independent blocks, no block/content checksum, no content size), BD 0x40 (64 KiB
# blocks), HC 0x82 (second byte of xxh32 over FLG BD).
_LZ4_HEADER: Final = b"\x04\x22\x4d\x18\x60\x40\x82"
_LZ4_BLOCK: Final = 64 * 1024
_LZ4_UNCOMPRESSED: Final = 0x80000000
_LZ4_END_MARK: Final = b"\x00\x00\x00\x00"


def compress(
    codec: int, data: bytes | bytearray | memoryview, *, level: int | None = None
) -> bytes:
    """Compress ``data`` with ``codec`` (0-4) in the framing Kafka's clients read.

    ``level`` is the codec's own level (Kafka's ``compression.<codec>.level``); ``None`` is the
    library default. Snappy has no levels; for LZ4 it selects the high-compression mode.
    """
    if codec == NONE:
        return bytes(data)
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(data, level=level))
    if codec == SNAPPY:
        return _xerial_compress(data)
    if codec == LZ4:
        return _lz4_compress(data, level)
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    raise UnsupportedCompressionError(codec)


def decompress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Decompress a batch's records compressed with ``codec`` (0-4).

    Raises :class:`DecompressionError` when ``data`` is not a valid stream of the codec and
    :class:`UnsupportedCompressionError` for an unknown codec.
    """
    if codec == NONE:
        return bytes(data)
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == SNAPPY:
            return _snappy_decompress(data)
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as exc:
        raise DecompressionError(f"invalid {CODEC_NAMES[codec]} data: {exc}") from exc
    raise UnsupportedCompressionError(codec)


def _xerial_compress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    parts: list[bytes | cramjam.Buffer] = [_XERIAL_HEADER]
    # At least one block: librdkafka reads a bare 16-byte header as raw snappy, and fails.
    for start in range(0, max(len(view), 1), _XERIAL_BLOCK):
        block = cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK])
        parts.append(_BE_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: bytes | bytearray | memoryview) -> bytes:
    view = memoryview(data)
    if len(view) < _XERIAL_HEADER_SIZE or view[:8].tobytes() != _XERIAL_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(view))
    parts: list[cramjam.Buffer] = []
    position = _XERIAL_HEADER_SIZE
    end = len(view)
    while position < end:
        if end - position < 4:
            raise DecompressionError("invalid snappy data: truncated xerial block length")
        (length,) = _BE_INT32.unpack_from(view, position)
        position += 4
        if length <= 0 or length > end - position:
            raise DecompressionError(f"invalid snappy data: xerial block length {length}")
        parts.append(cramjam.snappy.decompress_raw(view[position : position + length]))
        position += length
    return bytes(parts[0]) if len(parts) == 1 else b"".join(parts)


def _lz4_compress(data: bytes | bytearray | memoryview, level: int | None) -> bytes:
    view = memoryview(data)
    parts: list[bytes | memoryview | cramjam.Buffer] = [_LZ4_HEADER]
    for start in range(0, len(view), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        if level is None:
            block = cramjam.lz4.compress_block(chunk, store_size=False)
        else:
            block = cramjam.lz4.compress_block(
                chunk, store_size=False, mode="high_compression", compression=level
            )
        if len(block) < len(chunk):
            parts.append(len(block).to_bytes(4, "little"))
            parts.append(block)
        else:  # incompressible: stored as is, flagged by the high bit of the length
            parts.append((len(chunk) | _LZ4_UNCOMPRESSED).to_bytes(4, "little"))
            parts.append(chunk)
    parts.append(_LZ4_END_MARK)
    return b"".join(parts)
