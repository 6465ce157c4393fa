"""The codecs of sluice.broker.records.compression: round trips, and the framings Kafka's clients
write and read (checked against the reference libraries where they are installed)."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import struct
import warnings

import cramjam
import lz4.frame as lz4_frame
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from sluice.broker.records.compression import (
    GZIP,
    LZ4,
    NONE,
    SNAPPY,
    ZSTD,
    CompressionError,
    DecompressionError,
    UnsupportedCompressionError,
    compress,
    decompress,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # kafka-python 3.0 uses read_text()
    from kafka import codec as kafka_codec

CODECS = [NONE, GZIP, SNAPPY, LZ4, ZSTD]
COMPRESSED = [GZIP, SNAPPY, LZ4, ZSTD]
TEXT = b"".join(b"record %d of a compressible batch; " % i for i in range(5000))  # ~180 KB
RANDOM = os.urandom(200_000)  # incompressible, so LZ4 stores blocks as they are


@given(data=st.binary(max_size=100_000), codec=st.sampled_from(CODECS), kind=st.integers(0, 2))
def test_round_trip(data: bytes, codec: int, kind: int) -> None:
    source = (data, bytearray(data), memoryview(data))[kind]
    packed = compress(codec, source)
    assert isinstance(packed, bytes)
    back = decompress(codec, memoryview(packed))
    assert back == data, f"codec {codec}: {len(data)} bytes in, {len(back)} out"


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize(
    "payload", [b"", TEXT, RANDOM, TEXT + RANDOM], ids=["empty", "text", "random", "mixed"]
)
def test_round_trip_sizes(codec: int, payload: bytes) -> None:
    assert decompress(codec, compress(codec, payload)) == payload


@pytest.mark.parametrize(
    ("codec", "level"), [(GZIP, 1), (GZIP, 9), (LZ4, 9), (ZSTD, 1), (ZSTD, 19)]
)
def test_levels(codec: int, level: int) -> None:
    assert decompress(codec, compress(codec, TEXT, level=level)) == TEXT


@pytest.mark.parametrize("codec", [5, 6, 7, -1, 8])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(UnsupportedCompressionError, match=f"unsupported compression codec {codec}"):
        compress(codec, b"x")
    with pytest.raises(UnsupportedCompressionError) as info:
        decompress(codec, b"x")
    assert isinstance(info.value, ValueError)
    assert info.value.codec == codec


@given(data=st.binary(max_size=300), codec=st.sampled_from(COMPRESSED))
def test_garbage_raises_decompression_error_only(data: bytes, codec: int) -> None:
    with contextlib.suppress(DecompressionError):  # anything else fails the test
        decompress(codec, data)


@given(codec=st.sampled_from(COMPRESSED), cut=st.floats(0.0, 0.999))
def test_truncated_stream_is_an_error(codec: int, cut: float) -> None:
    packed = compress(codec, TEXT)
    try:
        out = decompress(codec, packed[: int(len(packed) * cut)])
    except DecompressionError as error:
        assert "invalid" in str(error)
        return
    # xerial snappy frames blocks with no total length: a cut between two blocks is a valid,
    # shorter stream (the record batch's count catches it); never anything but a prefix
    assert codec == SNAPPY and len(out) < len(TEXT) and TEXT.startswith(out), (codec, len(out))


def test_error_tree() -> None:
    assert issubclass(UnsupportedCompressionError, CompressionError)
    assert issubclass(DecompressionError, CompressionError)
    assert issubclass(CompressionError, ValueError)


# --- gzip --------------------------------------------------------------------------------------


def test_gzip_is_a_gzip_stream() -> None:
    packed = compress(GZIP, TEXT)
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == TEXT


def test_gzip_reads_concatenated_members() -> None:
    assert decompress(GZIP, gzip.compress(TEXT[:1000]) + gzip.compress(TEXT[1000:])) == TEXT


# --- snappy ------------------------------------------------------------------------------------


def _xerial_blocks(packed: bytes) -> list[int]:
    """Lengths of the blocks of a xerial stream, checking its framing."""
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    sizes, position = [], 16
    while position < len(packed):
        (length,) = struct.unpack_from(">i", packed, position)
        block = packed[position + 4 : position + 4 + length]
        sizes.append(len(cramjam.snappy.decompress_raw(block)))
        position += 4 + length
    assert position == len(packed)
    return sizes


def test_snappy_writes_xerial_framing_in_32k_blocks() -> None:
    sizes = _xerial_blocks(compress(SNAPPY, TEXT))
    assert sizes == [32768] * (len(TEXT) // 32768) + [len(TEXT) % 32768]


def test_snappy_empty_input_still_has_a_block() -> None:
    # librdkafka reads a stream of just the 16-byte header as raw snappy and fails.
    assert _xerial_blocks(compress(SNAPPY, b"")) == [0]
    assert decompress(SNAPPY, b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)) == b""


def test_snappy_reads_raw_blocks_as_librdkafka_writes_them() -> None:
    assert decompress(SNAPPY, bytes(cramjam.snappy.compress_raw(TEXT))) == TEXT


def test_snappy_ignores_xerial_version_fields() -> None:
    # Some producers (redpanda's, per kafka-python#2414) write version and compat little-endian.
    body = compress(SNAPPY, TEXT)[16:]
    little_endian = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1) + body
    assert decompress(SNAPPY, little_endian) == TEXT


@pytest.mark.parametrize(
    "tail",
    [b"\x00\x00", b"\x00\x00\x00\x00", b"\xff\xff\xff\xff", b"\x00\x00\x00\x09abc"],
    ids=["short-length", "zero-length", "negative-length", "block-past-end"],
)
def test_snappy_bad_xerial_blocks(tail: bytes) -> None:
    packed = compress(SNAPPY, b"abc") + tail
    with pytest.raises(DecompressionError, match="snappy"):
        decompress(SNAPPY, packed)


def test_snappy_against_kafka_python() -> None:
    assert kafka_codec.snappy_decode(compress(SNAPPY, TEXT)) == TEXT
    assert decompress(SNAPPY, kafka_codec.snappy_encode(TEXT)) == TEXT
    assert decompress(SNAPPY, kafka_codec.snappy_encode(TEXT, xerial_compatible=False)) == TEXT


# --- lz4 ---------------------------------------------------------------------------------------

JAVA_LZ4_HEADER = bytes.fromhex("04224d18604082")  # what Java's KafkaLZ4BlockOutputStream writes


@pytest.mark.parametrize("payload", [b"", TEXT, RANDOM], ids=["empty", "text", "random"])
def test_lz4_frame_is_the_java_producers(payload: bytes) -> None:
    packed = compress(LZ4, payload)
    assert packed[:7] == JAVA_LZ4_HEADER
    assert packed[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum after it
    # Independent blocks of at most 64 KiB each (Java's reader rejects anything else).
    position, blocks = 7, 0
    while (word := int.from_bytes(packed[position : position + 4], "little")) != 0:
        length = word & 0x7FFFFFFF
        assert length <= 65536
        block = packed[position + 4 : position + 4 + length]
        if not word & 0x80000000:
            assert len(cramjam.lz4.decompress_block(block, output_len=65536)) <= 65536
        position += 4 + length
        blocks += 1
    assert position + 4 == len(packed)
    assert blocks == -(-len(payload) // 65536)


def test_lz4_against_lz4_frame() -> None:
    info = lz4_frame.get_frame_info(compress(LZ4, TEXT))
    assert info["block_linked"] is False
    assert info["block_checksum"] is False
    assert info["content_checksum"] is False
    assert info["block_size"] == 65536
    assert lz4_frame.decompress(compress(LZ4, TEXT + RANDOM)) == TEXT + RANDOM
    # Frames with every option are read: content size (kafka-python's), checksums, linked blocks.
    for options in (
        {"store_size": True},
        {"content_checksum": True, "block_checksum": True},
        {"block_linked": True, "block_size": lz4_frame.BLOCKSIZE_MAX4MB},
    ):
        assert decompress(LZ4, lz4_frame.compress(TEXT, **options)) == TEXT, options


def test_lz4_against_kafka_python() -> None:
    assert kafka_codec.lz4_decode(compress(LZ4, TEXT)) == TEXT
    assert decompress(LZ4, kafka_codec.lz4_encode(TEXT)) == TEXT


# --- zstd --------------------------------------------------------------------------------------


def test_zstd_reads_frames_without_content_size() -> None:
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(TEXT)
    assert zstandard.get_frame_parameters(no_size).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(ZSTD, no_size) == TEXT
    # As Java's ZstdOutputStream writes: a streamed frame.
    out = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(out, closefd=False) as writer:
        for start in range(0, len(TEXT), 10_000):
            writer.write(TEXT[start : start + 10_000])
    assert decompress(ZSTD, out.getvalue()) == TEXT
    assert zstandard.ZstdDecompressor().decompress(compress(ZSTD, TEXT)) == TEXT


def test_zstd_reads_concatenated_frames() -> None:
    assert decompress(ZSTD, compress(ZSTD, TEXT[:777]) + compress(ZSTD, TEXT[777:])) == TEXT


def test_zstd_against_kafka_python() -> None:
    assert kafka_codec.zstd_decode(compress(ZSTD, TEXT)) == TEXT
    assert decompress(ZSTD, kafka_codec.zstd_encode(TEXT)) == TEXT
