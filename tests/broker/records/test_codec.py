"""sluice.broker.records.codec: round trips under every codec, recompression, batch fields, and
malformed input (which must raise InvalidBatchError, never anything else)."""

from __future__ import annotations

import dataclasses
import doctest

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sluice.broker.records import batch, codec, compression
from sluice.broker.records.batch import BatchHeader, InvalidBatchError
from sluice.broker.records.codec import Record, decode_records, encode_batch, recompress

CODECS = [0, 1, 2, 3, 4]
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
SMALL_OR_BIG = st.one_of(st.integers(-200, 200), INT32)

header_values = st.none() | st.binary(max_size=40)
records_strategy = st.builds(
    Record,
    offset_delta=SMALL_OR_BIG,
    timestamp_delta=st.one_of(st.integers(-20_000, 20_000), INT64),
    key=st.none() | st.binary(max_size=200),
    value=st.none() | st.binary(max_size=400),
    headers=st.lists(st.tuples(st.text(max_size=12), header_values), max_size=4).map(tuple),
    attributes=st.integers(-128, 127),
)
batch_fields = st.fixed_dictionaries(
    {
        "base_offset": INT64,
        "base_timestamp": INT64,
        "max_timestamp": INT64,
        "producer_id": INT64,
        "producer_epoch": st.integers(-(2**15), 2**15 - 1),
        "base_sequence": INT32,
        "partition_leader_epoch": INT32,
        "is_transactional": st.booleans(),
        "is_control": st.booleans(),
        "log_append_time": st.booleans(),
        "delete_horizon": st.booleans(),
    }
)


def read(raw: bytes, position: int = 0) -> BatchHeader:
    header = batch.read_header(raw, position)
    batch.validate(raw, header)
    return header


# ------------------------------------------------------------------------------- round trips


@given(
    records=st.lists(records_strategy, min_size=1, max_size=25),
    fields=batch_fields,
    codec=st.sampled_from(CODECS),
)
def test_round_trip(records: list[Record], fields: dict[str, int | bool], codec: int) -> None:
    raw = encode_batch(records=records, compression=codec, **fields)  # type: ignore[arg-type]
    header = read(raw)
    assert header.size == len(raw)
    assert header.compression == codec
    assert header.record_count == len(records)
    assert header.last_offset_delta == records[-1].offset_delta
    for name in (
        "base_offset",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "partition_leader_epoch",
        "is_transactional",
        "is_control",
        "log_append_time",
    ):
        assert getattr(header, name) == fields[name], name
    assert bool(header.attributes & batch.DELETE_HORIZON_BIT) == fields["delete_horizon"]
    decoded = decode_records(raw, header)
    assert decoded == records
    assert all(type(record) is Record for record in decoded)


@given(
    records=st.lists(records_strategy, min_size=1, max_size=10),
    source=st.sampled_from(CODECS),
    target=st.sampled_from(CODECS),
    fields=batch_fields,
)
def test_recompress_round_trip(
    records: list[Record], source: int, target: int, fields: dict[str, int | bool]
) -> None:
    raw = encode_batch(records=records, compression=source, **fields)  # type: ignore[arg-type]
    header = read(raw)
    again = recompress(raw, header, target)
    new = read(again)
    assert new.compression == target
    same = (
        "base_offset",
        "partition_leader_epoch",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
    )
    assert {f: getattr(new, f) for f in same} == {f: getattr(header, f) for f in same}
    assert new.attributes & ~batch.COMPRESSION_MASK == header.attributes & ~batch.COMPRESSION_MASK
    assert decode_records(again, new) == records
    # ... and back again to the very same bytes (the compressors are deterministic)
    assert recompress(again, new, source) == raw


@given(
    records=st.lists(records_strategy, min_size=1, max_size=5),
    codec=st.sampled_from(CODECS),
    prefix=st.binary(max_size=100),
    suffix=st.binary(max_size=100),
)
def test_batch_inside_a_larger_buffer(
    records: list[Record], codec: int, prefix: bytes, suffix: bytes
) -> None:
    raw = encode_batch(
        base_offset=7, records=records, compression=codec, base_timestamp=0, max_timestamp=0
    )
    for buffer in (
        prefix + raw + suffix,
        bytearray(prefix + raw + suffix),
        memoryview(prefix + raw + suffix),
    ):
        header = read(buffer, len(prefix))  # type: ignore[arg-type]
        assert decode_records(buffer, header) == records
        moved = recompress(buffer, header, 4 - codec)
        assert decode_records(moved, read(moved)) == records


@pytest.mark.parametrize("codec", CODECS)
def test_big_records_cross_codec_blocks(codec: int) -> None:
    # Values past snappy's 32 KiB and LZ4's 64 KiB blocks, and varints of 3+ bytes.
    records = [
        Record(0, 0, b"k" * 70_000, bytes(range(256)) * 600, (("h" * 300, b"v" * 20_000),)),
        Record(1, 2**40, None, b"x" * 150_000),
        Record(2**31 - 1, -(2**63), b"", b""),
    ]
    raw = encode_batch(
        base_offset=0, records=records, compression=codec, base_timestamp=1, max_timestamp=1
    )
    assert decode_records(raw, read(raw)) == records


@given(text=st.text(max_size=30))
def test_header_keys_are_utf8(text: str) -> None:
    raw = encode_batch(
        base_offset=0,
        records=[Record(0, 0, None, None, ((text, None),))],
        compression=0,
        base_timestamp=0,
        max_timestamp=0,
    )
    assert text.encode() in raw
    assert decode_records(raw, read(raw))[0].headers == ((text, None),)


def test_header_keys_that_are_not_utf8_survive_byte_for_byte() -> None:
    # librdkafka accepts any bytes as a header name; compaction must not change them.
    records = [Record(0, 0, None, None, (("\udcffb", b"v"),))]
    raw = encode_batch(
        base_offset=0, records=records, compression=0, base_timestamp=0, max_timestamp=0
    )
    assert b"\x04\xffb\x02v" in raw  # key length 2, key ff 62, value length 1, value
    decoded = decode_records(raw, read(raw))
    assert decoded == records
    assert (
        encode_batch(
            base_offset=0, records=decoded, compression=0, base_timestamp=0, max_timestamp=0
        )
        == raw
    )


def test_record_is_frozen_and_hashable() -> None:
    raw = encode_batch(
        base_offset=0,
        records=[Record(0, 0, b"k", b"v")],
        compression=3,
        base_timestamp=0,
        max_timestamp=0,
    )
    record = decode_records(raw, read(raw))[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.key = b"other"  # type: ignore[misc]
    assert hash(record) == hash(Record(0, 0, b"k", b"v"))
    assert dataclasses.replace(record, value=None) == Record(0, 0, b"k", None)


# -------------------------------------------------------------------------------- batch fields


def test_last_offset_delta_can_be_kept() -> None:
    # Compaction removed records 1..8 of a batch of 10: the batch keeps its offset range.
    raw = encode_batch(
        base_offset=100,
        records=[Record(0, 0, b"a", b"1"), Record(9, 0, b"b", b"2")],
        compression=2,
        base_timestamp=5,
        max_timestamp=5,
        last_offset_delta=9,
    )
    header = read(raw)
    assert (header.last_offset, header.next_offset, header.record_count) == (109, 110, 2)


def test_empty_batch_keeps_producer_state() -> None:
    raw = encode_batch(
        base_offset=50,
        records=[],
        compression=0,
        base_timestamp=-1,
        max_timestamp=-1,
        producer_id=9,
        producer_epoch=2,
        base_sequence=40,
        last_offset_delta=4,
        is_transactional=True,
    )
    header = read(raw)
    assert header.size == batch.HEADER_SIZE
    assert (header.record_count, header.last_offset, header.last_sequence) == (0, 54, 44)
    assert decode_records(raw, header) == []
    with pytest.raises(ValueError, match="last_offset_delta is required"):
        encode_batch(base_offset=0, records=[], compression=0, base_timestamp=0, max_timestamp=0)


def test_attribute_bits() -> None:
    raw = encode_batch(
        base_offset=0,
        records=[Record(0, 0, None, b"")],
        compression=4,
        base_timestamp=0,
        max_timestamp=0,
        is_transactional=True,
        is_control=True,
        log_append_time=True,
        delete_horizon=True,
    )
    assert read(raw).attributes == 4 | 0x08 | 0x10 | 0x20 | 0x40


@pytest.mark.parametrize(
    ("record", "fields", "message"),
    [
        (Record(2**31, 0, None, None), {}, "offset_delta"),
        (Record(-(2**31) - 1, 0, None, None), {}, "offset_delta"),
        (Record(0, 2**63, None, None), {}, "timestamp_delta"),
        (Record(0, 0, None, None), {"producer_epoch": 2**15}, "out of range"),
        (Record(0, 0, None, None), {"base_offset": 2**63}, "out of range"),
    ],
)
def test_fields_out_of_range(record: Record, fields: dict[str, int], message: str) -> None:
    kwargs: dict[str, int] = {"base_offset": 0, "base_timestamp": 0, "max_timestamp": 0, **fields}
    with pytest.raises(ValueError, match=message):
        encode_batch(records=[record], compression=0, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("codec", [5, 8, -1])
def test_unknown_codec_on_encode(codec: int) -> None:
    with pytest.raises(compression.UnsupportedCompressionError):
        encode_batch(
            base_offset=0,
            records=[Record(0, 0, None, None)],
            compression=codec,
            base_timestamp=0,
            max_timestamp=0,
        )
    raw = encode_batch(
        base_offset=0,
        records=[Record(0, 0, None, None)],
        compression=0,
        base_timestamp=0,
        max_timestamp=0,
    )
    with pytest.raises(compression.UnsupportedCompressionError):
        recompress(raw, read(raw), codec)


def test_unknown_codec_on_decode_is_unsupported_not_corrupt() -> None:
    raw = encode_batch(
        base_offset=0,
        records=[Record(0, 0, None, None)],
        compression=0,
        base_timestamp=0,
        max_timestamp=0,
    )
    header = dataclasses.replace(read(raw), attributes=5)
    for call in (lambda: decode_records(raw, header), lambda: recompress(raw, header, 1)):
        with pytest.raises(InvalidBatchError, match="unsupported compression codec 5") as info:
            call()
        assert info.value.corrupt is False


# ---------------------------------------------------------------------------- malformed input


def with_payload(
    header: BatchHeader, payload: bytes, codec: int, record_count: int | None = None
) -> bytes:
    """A batch with ``payload`` as its (uncompressed) record bytes, compressed with ``codec``."""
    body = compression.compress(codec, payload)
    count = header.record_count if record_count is None else record_count
    head = batch.HEADER.pack(
        header.base_offset,
        batch.HEADER_SIZE - batch.LOG_OVERHEAD + len(body),
        -1,
        2,
        0,
        codec,
        header.last_offset_delta,
        0,
        0,
        -1,
        -1,
        -1,
        count,
    )
    return head + body


def decode_or_invalid(raw: bytes | bytearray | memoryview, header: BatchHeader) -> None:
    """Decoding either succeeds or raises InvalidBatchError(corrupt=True): nothing else."""
    try:
        records = decode_records(raw, header)
    except InvalidBatchError as exc:
        assert exc.corrupt, exc
    else:
        assert all(type(record) is Record for record in records)


mutation = st.tuples(
    st.sampled_from(["flip", "insert", "delete"]), st.integers(0, 10**6), st.integers(0, 255)
)


def mutate(data: bytes, mutations: list[tuple[str, int, int]]) -> bytes:
    out = bytearray(data)
    for kind, where, byte in mutations:
        at = where % (len(out) + 1)
        if kind == "insert":
            out.insert(at, byte)
        elif out and kind == "flip":
            out[at % len(out)] ^= byte or 1
        elif out:
            del out[at % len(out)]
    return bytes(out)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    records=st.lists(records_strategy, min_size=1, max_size=8),
    codec=st.sampled_from(CODECS),
    mutations=st.lists(mutation, min_size=1, max_size=4),
)
def test_mutated_records(
    records: list[Record], codec: int, mutations: list[tuple[str, int, int]]
) -> None:
    raw = encode_batch(
        base_offset=0, records=records, compression=0, base_timestamp=0, max_timestamp=0
    )
    header = read(raw)
    damaged = mutate(raw[batch.HEADER_SIZE :], mutations)
    assume(damaged != raw[batch.HEADER_SIZE :])
    bad = with_payload(header, damaged, codec)
    decode_or_invalid(bad, batch.read_header(bad))


@given(
    records=st.lists(records_strategy, min_size=1, max_size=8),
    codec=st.sampled_from(CODECS[1:]),
    mutations=st.lists(mutation, min_size=1, max_size=4),
)
def test_mutated_compressed_stream(
    records: list[Record], codec: int, mutations: list[tuple[str, int, int]]
) -> None:
    raw = encode_batch(
        base_offset=0, records=records, compression=codec, base_timestamp=0, max_timestamp=0
    )
    header = read(raw)
    body = mutate(raw[batch.HEADER_SIZE :], mutations)
    bad = raw[: batch.HEADER_SIZE] + body
    bad_header = dataclasses.replace(header, batch_length=len(bad) - batch.LOG_OVERHEAD)
    decode_or_invalid(bad, bad_header)
    try:
        recompress(bad, bad_header, 0)
    except InvalidBatchError as exc:
        assert exc.corrupt


@given(
    records=st.lists(records_strategy, min_size=1, max_size=8),
    codec=st.sampled_from(CODECS),
    cut=st.integers(1, 10**6),
    declared=st.booleans(),
)
def test_truncated(records: list[Record], codec: int, cut: int, declared: bool) -> None:
    raw = encode_batch(
        base_offset=0, records=records, compression=codec, base_timestamp=0, max_timestamp=0
    )
    header = read(raw)
    keep = batch.HEADER_SIZE + cut % (len(raw) - batch.HEADER_SIZE)
    if declared:  # the header says the batch is shorter (a torn write with a consistent length)
        short = dataclasses.replace(header, batch_length=keep - batch.LOG_OVERHEAD)
        with pytest.raises(InvalidBatchError) as info:
            decode_records(raw, short)
    else:  # the buffer ends before the batch does
        with pytest.raises(InvalidBatchError) as info:
            decode_records(raw[:keep], header)
    assert info.value.corrupt


@given(
    records=st.lists(records_strategy, min_size=1, max_size=8),
    codec=st.sampled_from(CODECS),
    count=st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-3, 12)),
)
def test_wrong_record_count(records: list[Record], codec: int, count: int) -> None:
    assume(count != len(records))
    raw = encode_batch(
        base_offset=0, records=records, compression=codec, base_timestamp=0, max_timestamp=0
    )
    header = dataclasses.replace(read(raw), record_count=count)
    with pytest.raises(InvalidBatchError) as info:
        decode_records(raw, header)
    assert info.value.corrupt


def test_missing_record_does_not_read_into_the_next_batch() -> None:
    first = encode_batch(
        base_offset=0,
        records=[Record(0, 0, b"a", b"1" * 20)],
        compression=0,
        base_timestamp=0,
        max_timestamp=0,
    )
    second = encode_batch(
        base_offset=1,
        records=[Record(0, 0, b"b", b"2")],
        compression=0,
        base_timestamp=0,
        max_timestamp=0,
    )
    segment = first + second
    header = dataclasses.replace(read(segment), record_count=2)
    with pytest.raises(InvalidBatchError, match="record length 0 with -1 bytes left"):
        decode_records(segment, header)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"\x0e\x00\x00\x00\x01\x01\xff\xff\xff\xff\x1f", "varint out of range"),  # headers > int32
        (b"\x10\x00\x00\x00\xff\xff\xff\xff\xff\x01\x01\x00", "varint too long"),
        (b"\x0c\x00\x00\x00\x03\x01\x00", "key length -2"),
        (b"\x0c\x00\x00\x00\x01\x05\x00", "value length -3"),
        (b"\x0c\x00\x00\x00\x01\x01\x01", "header count -1"),
        (b"\x10\x00\x00\x00\x01\x01\x02\x01\x00", "header key length -1"),
        (b"\x0e\x00\x00\x00\x01\x01\x00\x00", "does not match"),
        (b"\x0c\x00\x00\x00\x01\x01\x00\x00", "bytes after the last"),
        (b"\x01" + bytes(6), "record length -1"),
    ],
)
def test_malformed_messages(payload: bytes, message: str) -> None:
    header = BatchHeader(0, 0, 0, 2, 0, 0, 0, 0, 0, -1, -1, -1, 1)
    raw = with_payload(header, payload, 0)
    with pytest.raises(InvalidBatchError, match=message) as info:
        decode_records(raw, batch.read_header(raw))
    assert info.value.corrupt


def test_docstring_examples_run() -> None:
    for module in (codec, compression):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0, module.__name__
        assert result.failed == 0, module.__name__
