"""Cross-checks against real clients' record encoders: golden batches captured from librdkafka
(confluent-kafka 2.16.1, fetched back verbatim from tansu) and kafka-python 3.0.12, CRC pins of our
own encodings, and Hypothesis round trips through kafka-python's DefaultRecordBatch builder and
reader in both directions."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.broker.records import batch
from sluice.broker.records.codec import Record, decode_records, encode_batch, recompress

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # kafka-python 3.0 uses read_text()
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TIMESTAMP = 1_700_000_000_000

# The same three records everywhere: a key with headers (one null, one key not ASCII), a null key,
# a tombstone whose timestamp is before the batch's base timestamp.
EXPECTED = [
    Record(0, 0, b"sluice", b"the quick brown fox " * 4, (("café", b"\x00\x01"), ("null", None))),
    Record(1, 7, None, b"jumps over the lazy dog " * 3),
    Record(2, -10, b"tombstone", None),
]

# Produced with confluent-kafka 2.16.1 (librdkafka), compression.codec=<name>, linger.ms=100,
# fetched back from tansu. Snappy is raw (no xerial framing); zstd frames carry no content size;
# the lz4 frame header is 04224d18 60 40 82, as Java's.
LIBRDKAFKA = {
    "none": "00000000000000000000010000000000027a8b89e00000000000020000018bcfe568000000018bcfe56807"
    "ffffffffffffffffffffffffffff00000003d8010000000c736c75696365a00174686520717569636b2062726f"
    "776e20666f782074686520717569636b2062726f776e20666f782074686520717569636b2062726f776e20666f"
    "782074686520717569636b2062726f776e20666f7820040a636166c3a9040001086e756c6c019e01000e020190"
    "016a756d7073206f76657220746865206c617a7920646f67206a756d7073206f76657220746865206c617a7920"
    "646f67206a756d7073206f76657220746865206c617a7920646f6720001e00130412746f6d6273746f6e650100",
    "gzip": "0000000000000000000000a90000000002a153fc430001000000020000018bcfe568000000018bcfe56807"
    "ffffffffffffffffffffffffffff000000031f8b0800000000000003bbc1c8c0c0c0539c539a999cba80b12423"
    "55a110c8cc56482aca2fcf5348cbaf50a0448c852b3931edf04a1606468ebcd29c1cc6798c0c7c4c8c1318b34a"
    "730b8a15f2cb528bc0da7212ab2a1552f2d31548156790631066112ac9cf4d2a2ec9cf4b65640000525e250ccf"
    "000000",
    "snappy": "00000000000000000000009f00000000026be817780002000000020000018bcfe568000000018bcfe568"
    "07ffffffffffffffffffffffffffff00000003cf0188d8010000000c736c75696365a00174686520717569636b"
    "2062726f776e20666f782074ea140088040a636166c3a9040001086e756c6c019e01000e020190016a756d7073"
    "206f766572200173206c617a7920646f6720be180040001e00130412746f6d6273746f6e650100",
    "lz4": "0000000000000000000000ad0000000002976448cd0003000000020000018bcfe568000000018bcfe56807"
    "ffffffffffffffffffffffffffff0000000304224d186040826d000000ff13d8010000000c736c75696365a00174"
    "686520717569636b2062726f776e20666f7820140029f113040a636166c3a9040001086e756c6c019e01000e02"
    "0190016a756d7073206f7665725f009f6c617a7920646f672018001df002001e00130412746f6d6273746f6e65"
    "010000000000",
    "zstd": "0000000000000000000000a500000000024e3e3c2b0004000000020000018bcfe568000000018bcfe56807"
    "ffffffffffffffffffffffffffff0000000328b52ffd00585d0300e405d8010000000c736c75696365a0017468"
    "6520717569636b2062726f776e20666f7820040a636166c3a9040001086e756c6c019e01000e020190016a756d"
    "7073206f7665726c617a7920646f6720001e00130412746f6d6273746f6e6501000300edc49188dba79c349f",
}

# Built with kafka-python 3.0.12's DefaultRecordBatchBuilder (producer id 4242, epoch 3, base
# sequence 17). Snappy is xerial-framed, as the Java producer writes it; its lz4 and zstd frames
# carry the content size.
KAFKA_PYTHON = {
    "gzip": "0000000000000000000000a900000000025c3c54da0001000000020000018bcfe568000000018bcfe56807"
    "0000000000001092000300000011000000031f8b080029e1016b02ffbbc1c8c0c0c0539c539a999cba80b12423"
    "55a110c8cc56482aca2fcf5348cbaf50a0448c852b3931edf04a1606468ebcd29c1cc6798c0c7c4c8c1318b34a"
    "730b8a15f2cb528bc0da7212ab2a1552f2d31548156790631066112ac9cf4d2a2ec9cf4b65640000525e250ccf"
    "000000",
    "snappy": "0000000000000000000000b30000000002c07348850002000000020000018bcfe568000000018bcfe568"
    "0700000000000010920003000000110000000382534e415050590000000001000000010000006ecf0188d80100"
    "00000c736c75696365a00174686520717569636b2062726f776e20666f782074ea140088040a636166c3a90400"
    "01086e756c6c019e01000e020190016a756d7073206f766572200173206c617a7920646f6720be180040001e00"
    "130412746f6d6273746f6e650100",
    "lz4": "0000000000000000000000b500000000029f8c1cb40003000000020000018bcfe568000000018bcfe56807"
    "00000000000010920003000000110000000304224d186840cf00000000000000816d000000ff13d8010000000c73"
    "6c75696365a00174686520717569636b2062726f776e20666f7820140029f113040a636166c3a9040001086e75"
    "6c6c019e01000e020190016a756d7073206f7665725f009f6c617a7920646f672018001df002001e0013041274"
    "6f6d6273746f6e65010000000000",
    "zstd": "0000000000000000000000a50000000002aed8b7050004000000020000018bcfe568000000018bcfe56807"
    "00000000000010920003000000110000000328b52ffd20cf5d0300e405d8010000000c736c75696365a001746865"
    "20717569636b2062726f776e20666f7820040a636166c3a9040001086e756c6c019e01000e020190016a756d70"
    "73206f7665726c617a7920646f6720001e00130412746f6d6273746f6e6501000300edc49188dba79c349f",
}

# CRC-32C of our own encoding of EXPECTED (aiokafka's style of pin): a change of framing, codec
# settings or record layout shows up here. none and lz4 are byte-identical to librdkafka's.
OUR_CRCS = {
    "none": 0x7A8B89E0,
    "gzip": 0xA5EF6624,
    "snappy": 0xA2B30C69,
    "lz4": 0x976448CD,
    "zstd": 0x7E0E085D,
}


def encode_expected(codec: int, **fields: Any) -> bytes:
    return encode_batch(
        base_offset=0,
        records=EXPECTED,
        compression=codec,
        base_timestamp=BASE_TIMESTAMP,
        max_timestamp=BASE_TIMESTAMP + 7,
        partition_leader_epoch=0,
        **fields,
    )


def read(raw: bytes) -> batch.BatchHeader:
    header = batch.read_header(raw)
    batch.validate(raw, header)
    assert header.size == len(raw)
    return header


GOLDEN = [("librdkafka", name, hex_) for name, hex_ in LIBRDKAFKA.items()] + [
    ("kafka-python", name, hex_) for name, hex_ in KAFKA_PYTHON.items()
]


@pytest.mark.parametrize(("client", "name", "hex_"), GOLDEN, ids=[f"{c}-{n}" for c, n, _ in GOLDEN])
def test_golden_batches_decode(client: str, name: str, hex_: str) -> None:
    raw = bytes.fromhex(hex_)
    header = read(raw)
    assert header.compression == CODECS[name]
    assert (header.base_timestamp, header.max_timestamp) == (BASE_TIMESTAMP, BASE_TIMESTAMP + 7)
    assert decode_records(raw, header) == EXPECTED
    for target in CODECS.values():
        moved = recompress(raw, header, target)
        assert decode_records(moved, read(moved)) == EXPECTED, f"{client} {name} -> {target}"


def test_golden_framings_are_what_the_clients_write() -> None:
    payload = {name: bytes.fromhex(hex_)[61:] for name, hex_ in LIBRDKAFKA.items()}
    assert payload["snappy"][:8] != b"\x82SNAPPY\x00"  # librdkafka: raw snappy
    assert payload["lz4"][:7] == bytes.fromhex("04224d18604082")
    assert payload["zstd"][4] & 0xC0 == 0  # frame header descriptor: no content size field
    assert bytes.fromhex(KAFKA_PYTHON["snappy"])[61:69] == b"\x82SNAPPY\x00"


@pytest.mark.parametrize("name", CODECS)
def test_our_encoding_crc_pins(name: str) -> None:
    raw = encode_expected(CODECS[name])
    header = read(raw)
    assert header.crc == OUR_CRCS[name], (
        f"{name}: expected {OUR_CRCS[name]:#x}, got {header.crc:#x}"
    )
    assert decode_records(raw, header) == EXPECTED


@pytest.mark.parametrize("name", ["none", "lz4"])
def test_our_encoding_is_byte_identical_to_librdkafkas(name: str) -> None:
    assert encode_expected(CODECS[name]).hex() == LIBRDKAFKA[name]


def test_our_snappy_encoding_is_byte_identical_to_kafka_pythons() -> None:
    ours = encode_expected(2, producer_id=4242, producer_epoch=3, base_sequence=17)
    assert ours.hex() == KAFKA_PYTHON["snappy"]


# ------------------------------------------------------------------ kafka-python, both directions

CODEC_LIBRARY = {0: None, 1: None, 2: "snappy", 3: "lz4", 4: "zstandard"}


def need_codec(codec: int) -> None:
    """kafka-python compresses with python-snappy, lz4 and zstandard (test dependencies)."""
    module = CODEC_LIBRARY[codec]
    assert module is None or importlib.util.find_spec(module) is not None, (
        f"kafka-python needs the {module} package for codec {codec}: pip install -e .[test]"
    )


kp_records = st.lists(
    st.tuples(
        st.integers(-(2**40), 2**40),  # timestamp delta from the first record
        st.none() | st.binary(max_size=100),
        st.none() | st.binary(max_size=300),
        st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=20)), max_size=3),
    ),
    min_size=1,
    max_size=15,
)


def kafka_python_batch(codec: int, rows: list[Any], first_timestamp: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=77,
        producer_epoch=1,
        base_sequence=5,
        batch_size=10**7,
    )
    for offset, (delta, key, value, headers) in enumerate(rows):
        timestamp = first_timestamp + delta if offset else first_timestamp
        assert builder.append(offset, timestamp, key, value, headers) is not None
    return bytes(builder.build())


def as_records(rows: list[Any]) -> list[Record]:
    return [
        Record(offset, delta if offset else 0, key, value, tuple(headers))
        for offset, (delta, key, value, headers) in enumerate(rows)
    ]


@pytest.mark.parametrize("codec", CODECS.values())
@settings(max_examples=50)
@given(rows=kp_records, first_timestamp=st.integers(0, 2**50))
def test_we_decode_kafka_python(codec: int, rows: list[Any], first_timestamp: int) -> None:
    need_codec(codec)
    raw = kafka_python_batch(codec, rows, first_timestamp)
    header = read(raw)
    # kafka-python sends a batch uncompressed when compression does not make it smaller.
    assert header.compression in (0, codec)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 1, 5)
    assert decode_records(raw, header) == as_records(rows)


@pytest.mark.parametrize("codec", CODECS.values())
@settings(max_examples=50)
@given(rows=kp_records, first_timestamp=st.integers(0, 2**50))
def test_kafka_python_decodes_ours(codec: int, rows: list[Any], first_timestamp: int) -> None:
    need_codec(codec)
    records = as_records(rows)
    max_timestamp = first_timestamp + max(r.timestamp_delta for r in records)
    raw = encode_batch(
        base_offset=1000,
        records=records,
        compression=codec,
        base_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
    )
    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    assert (theirs.base_offset, theirs.first_timestamp, theirs.max_timestamp) == (
        1000,
        first_timestamp,
        max_timestamp,
    )
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in theirs]
    want = [
        (
            1000 + r.offset_delta,
            first_timestamp + r.timestamp_delta,
            r.key,
            r.value,
            list(r.headers),
        )
        for r in records
    ]
    assert got == want


@settings(max_examples=50)
@given(rows=kp_records, first_timestamp=st.integers(0, 2**50))
def test_uncompressed_is_byte_identical_to_kafka_python(
    rows: list[Any], first_timestamp: int
) -> None:
    records = as_records(rows)
    ours = encode_batch(
        base_offset=0,
        records=records,
        compression=0,
        base_timestamp=first_timestamp,
        max_timestamp=first_timestamp + max(0, *(r.timestamp_delta for r in records)),
        producer_id=77,
        producer_epoch=1,
        base_sequence=5,
        partition_leader_epoch=0,
    )
    assert ours == kafka_python_batch(0, rows, first_timestamp)


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_kafka_python_compresses_when_it_pays(codec: int) -> None:
    need_codec(codec)
    rows = [(i, b"key-%d" % i, b"a compressible value " * 20, [("h", b"v")]) for i in range(50)]
    raw = kafka_python_batch(codec, rows, BASE_TIMESTAMP)
    header = read(raw)
    assert header.compression == codec
    assert decode_records(raw, header) == as_records(rows)
    theirs = list(
        DefaultRecordBatch(
            encode_batch(
                base_offset=0,
                records=as_records(rows),
                compression=codec,
                base_timestamp=BASE_TIMESTAMP,
                max_timestamp=BASE_TIMESTAMP + 49,
            )
        )
    )
    assert [r.value for r in theirs] == [b"a compressible value " * 20] * 50
