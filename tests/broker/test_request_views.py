"""Produce requests read with their records as views of the frame (``decode_request``).

The broker reads big Produce requests with its own walk over kio's message classes, so that the
records are slices of the received buffer rather than copies (small ones, and arrays of small
batches, are read by kio itself). The walk must read exactly what kio's native reader reads,
for every Produce version served, refuse exactly the frames kio refuses, and give views that
write through to the frame (the base offset is patched there). ``walk_everything`` makes the
walk read every request, however small, so that Hypothesis can try many shapes cheaply.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_reader

from sluice.broker.protocol import codec
from sluice.broker.protocol.codec import MalformedRequestError, decode_request, read_prefix
from tests.broker.conftest import encode_request, make_batch

VERSIONS = range(3, 10)


def _module(version: int) -> Any:
    return importlib.import_module(f"kio.schema.produce.v{version}.request")


def produce_request(version: int, topics: list[tuple[str, list[tuple[int, bytes | None]]]]) -> Any:
    mod = _module(version)
    return mod.ProduceRequest(
        transactional_id="txn",
        acks=-1,
        timeout=datetime.timedelta(milliseconds=1500),
        topic_data=tuple(
            mod.TopicProduceData(
                name=name,
                partition_data=tuple(
                    mod.PartitionProduceData(index=index, records=records)
                    for index, records in partitions
                ),
            )
            for name, partitions in topics
        ),
    )


def materialized(value: Any) -> Any:
    """``value`` with every memoryview turned into bytes, for comparing with kio's result."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, tuple):
        return tuple(materialized(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: materialized(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value


@contextmanager
def walk_everything() -> Iterator[None]:
    """Records as views whatever their size (the walk, never kio's reader, for bodies)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(codec, "VIEWS_FROM", 0)
        yield


def records_of(body: Any) -> list[Any]:
    return [p.records for t in body.topic_data or () for p in t.partition_data or ()]


def native(frame: bytes) -> Any:
    """What kio's own reader makes of a Produce frame (without its size prefix)."""
    prefix = read_prefix(frame)
    schema = load_request_schema(prefix.api_key, prefix.api_version)
    _, offset = entity_reader(schema.__header_schema__)(frame, 0)
    return entity_reader(schema)(frame, offset)[0]


topics_strategy = st.lists(
    st.tuples(
        st.text(alphabet="abcxyz-._", min_size=1, max_size=12),
        st.lists(
            st.tuples(
                st.integers(0, 2**31 - 1),
                st.one_of(st.none(), st.binary(max_size=300)),
            ),
            max_size=4,
        ),
    ),
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(version=st.sampled_from(VERSIONS), topics=topics_strategy)
def test_reads_what_kio_reads(version: int, topics: Any) -> None:
    frame = encode_request(produce_request(version, topics), 42)[4:]
    expected = native(frame)
    with walk_everything():
        header, body = decode_request(bytearray(frame), read_prefix(frame))
    assert header.correlation_id == 42
    assert materialized(body) == expected
    for records in records_of(body):
        assert records is None or (isinstance(records, memoryview) and not records.readonly)
    # and as the broker reads it, which depends on the sizes
    assert materialized(decode_request(bytearray(frame), read_prefix(frame))[1]) == expected


def test_big_batches_are_views_and_many_small_ones_copies() -> None:
    big = make_batch([b"b" * 200_000])
    small = make_batch([b"s" * 100])
    request = produce_request(9, [("big", [(0, big)]), ("small", [(i, small) for i in range(50)])])
    frame = encode_request(request, 1)[4:]
    _, body = decode_request(bytearray(frame), read_prefix(frame))
    assert materialized(body) == native(frame)
    first, *rest = records_of(body)
    assert isinstance(first, memoryview) and not first.readonly
    assert all(type(r) is bytes for r in rest)  # 50 small batches: kio reads them faster
    tiny = encode_request(produce_request(9, [("t", [(0, small)])]), 1)[4:]
    assert type(records_of(decode_request(bytearray(tiny), read_prefix(tiny))[1])[0]) is bytes


@pytest.mark.parametrize("version", VERSIONS)
def test_refuses_every_truncation_kio_refuses(version: int) -> None:
    request = produce_request(version, [("t", [(0, make_batch([b"v" * 40])), (1, None)])])
    frame = encode_request(request, 1)[4:]
    with walk_everything():
        for end in range(8, len(frame)):
            cut = frame[:end]
            try:
                native(cut)
            except Exception:
                with pytest.raises(MalformedRequestError):
                    decode_request(bytearray(cut), read_prefix(cut))
            else:  # kio reads it (a cut in nothing it needs): so do we, alike
                decoded = decode_request(bytearray(cut), read_prefix(cut))[1]
                assert materialized(decoded) == native(cut)


BIG = make_batch([b"a" * 40_000, b"b"])


@pytest.mark.parametrize("version", VERSIONS)
def test_records_are_views_that_write_through_to_the_frame(version: int) -> None:
    frame = bytearray(encode_request(produce_request(version, [("t", [(0, BIG)])]), 1)[4:])
    _, body = decode_request(frame, read_prefix(frame))
    (records,) = records_of(body)
    assert isinstance(records, memoryview) and bytes(records) == BIG
    records[:8] = (1234).to_bytes(8, "big")
    assert frame.find((1234).to_bytes(8, "big") + BIG[8:]) > 0
    records.release()


def test_read_only_frames_give_read_only_views() -> None:
    frame = encode_request(produce_request(9, [("t", [(0, BIG)])]), 1)[4:]
    _, body = decode_request(frame, read_prefix(frame))
    (records,) = records_of(body)
    assert isinstance(records, memoryview) and records.readonly and bytes(records) == BIG


def test_a_record_length_past_the_frame_is_malformed() -> None:
    frame = bytearray(encode_request(produce_request(3, [("t", [(0, b"x" * 50_000)])]), 1)[4:])
    del frame[-10:]  # the records' length field now claims 10 bytes more than follow
    with pytest.raises(MalformedRequestError, match="past the end"):
        decode_request(frame, read_prefix(frame))


def test_unknown_tagged_fields_are_skipped_at_every_level() -> None:
    """Flexible versions (v9): a tagged field kio does not know, in a partition's data."""
    frame = bytearray(encode_request(produce_request(9, [("t", [(0, BIG)])]), 1)[4:])
    # the partition's tagged-field section is the byte after its records: 0 fields -> 1 field
    # (tag 7, 3 bytes); the topic's and request's sections follow (2 bytes of 0)
    position = len(frame) - 3
    assert frame[position:] == b"\x00\x00\x00"
    frame[position : position + 1] = b"\x01\x07\x03abc"
    _, body = decode_request(frame, read_prefix(frame))
    (records,) = records_of(body)
    assert isinstance(records, memoryview) and bytes(records) == BIG
