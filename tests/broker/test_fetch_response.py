"""The hand-written Fetch response (:mod:`sluice.broker.protocol.fetch_response`) against kio.

For every version the broker serves, the bytes written around the records must be exactly those
kio's generated writer produces for the same response, records coming from a file region or from
``bytes`` alike, and with a ``diverging_epoch`` (a tagged field, v12+) or without, and a
``preferred_read_replica`` (v11+, KIP-392) or none.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from sluice.broker.log.region import FileRegion
from sluice.broker.protocol.api_keys import FETCH
from sluice.broker.protocol.codec import encode_response, make, nested
from sluice.broker.protocol.fetch_response import (
    OutgoingFrame,
    PartitionAnswer,
    TopicAnswer,
    encode_fetch_response,
)
from sluice.broker.protocol.response_schema import response_schema

VERSIONS = range(4, 17)

_int64 = st.integers(-1, 2**62)
_partition = st.builds(
    PartitionAnswer,
    partition_index=st.integers(0, 2**31 - 1),
    error_code=st.sampled_from([0, 1, 3, 100]),
    high_watermark=_int64,
    last_stable_offset=_int64,
    log_start_offset=_int64,
    aborted_transactions=st.none() | st.lists(st.tuples(_int64, _int64), max_size=3),
    records=st.binary(max_size=300),
    diverging_epoch=st.just((-1, -1)) | st.tuples(st.integers(-1, 2**31 - 1), _int64),
    preferred_read_replica=st.just(-1) | st.integers(0, 2**31 - 1),
)
_topic = st.builds(
    TopicAnswer,
    name=st.text(min_size=1, max_size=20),
    topic_id=st.uuids(),
    partitions=st.lists(_partition, max_size=4),
)


def _kio_bytes(version: int, correlation_id: int, topics: list[TopicAnswer], **top: int) -> bytes:
    schema = response_schema(FETCH, version)
    topic_cls = nested(schema, "responses")
    partition_cls = nested(schema, "responses", "partitions")
    aborted_cls = nested(schema, "responses", "partitions", "aborted_transactions")
    diverging_cls = nested(schema, "responses", "partitions", "diverging_epoch")

    def partition(p: PartitionAnswer) -> object:
        records = p.records.read() if isinstance(p.records, FileRegion) else p.records
        aborted = p.aborted_transactions
        return make(
            partition_cls,
            partition_index=p.partition_index,
            error_code=ErrorCode(p.error_code),
            high_watermark=p.high_watermark,
            last_stable_offset=p.last_stable_offset,
            log_start_offset=p.log_start_offset,
            aborted_transactions=None
            if aborted is None
            else tuple(make(aborted_cls, producer_id=a, first_offset=b) for a, b in aborted),
            preferred_read_replica=p.preferred_read_replica,
            records=records,
            diverging_epoch=None
            if diverging_cls is type(None)  # before v12: no such field (make drops it)
            else make(diverging_cls, epoch=p.diverging_epoch[0], end_offset=p.diverging_epoch[1]),
        )

    body = make(
        schema,
        throttle_time=top.get("throttle_time_ms", 0),
        error_code=ErrorCode(top.get("error_code", 0)),
        session_id=top.get("session_id", 0),
        responses=tuple(
            make(
                topic_cls,
                topic=t.name,
                topic_id=t.topic_id,
                partitions=tuple(partition(p) for p in t.partitions),
            )
            for t in topics
        ),
    )
    return encode_response(FETCH, version, correlation_id, body)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=25, deadline=None)
@given(
    topics=st.lists(_topic, max_size=3),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    session_id=st.integers(0, 2**31 - 1),
)
def test_same_bytes_as_kio(
    version: int, topics: list[TopicAnswer], correlation_id: int, session_id: int
) -> None:
    ours = encode_fetch_response(version, correlation_id, topics, session_id=session_id)
    expected = _kio_bytes(version, correlation_id, topics, session_id=session_id)
    assert ours.to_bytes() == expected, f"v{version}: expected {expected!r}, got {ours.parts!r}"


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_records_from_a_file_region_are_a_part_of_their_own(version: int, tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(b"0123456789" * 10)
    fd = os.open(path, os.O_RDONLY)
    try:
        region = FileRegion.of(fd, 10, 25)
    finally:
        os.close(fd)  # the region keeps its own descriptor
    topics = [
        TopicAnswer("t", uuid.uuid4(), [PartitionAnswer(0, high_watermark=9, records=region)])
    ]
    frame: OutgoingFrame = encode_fetch_response(version, 7, topics)
    try:
        assert frame.regions == (region,), f"expected the region as a part, got {frame.parts}"
        copy = [PartitionAnswer(0, high_watermark=9, records=b"0123456789" * 2 + b"01234")]
        expected = _kio_bytes(version, 7, [TopicAnswer("t", topics[0].topic_id, copy)])
        assert frame.to_bytes() == expected
        size = sum(len(p) for p in frame.parts)
        assert int.from_bytes(frame.to_bytes()[:4], "big") == size - 4
    finally:
        frame.close()
    assert region.fd == -1, "closing the frame closes its regions"
    frame.close()  # a second close does nothing
