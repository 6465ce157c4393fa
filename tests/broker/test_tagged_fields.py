"""Unknown tagged fields in flexible requests are skipped at every depth, as Kafka does.

kio's readers refuse a tag they do not know; the broker then reads the request again with its
own walk (``decode_request``'s tolerant fallback), which skips such fields in every array of
messages. A newer client adding a tagged field must not be disconnected.
"""

from __future__ import annotations

import datetime

from kio.schema.fetch.v12 import request as fetch
from kio.schema.produce.v9 import request as produce

from sluice.broker.protocol.codec import decode_request, read_prefix
from tests.broker.conftest import encode_request, make_batch

UNKNOWN = b"\x01\x07\x03abc"  # one tagged field: tag 7, 3 bytes


def _with_unknown_field_at(frame: bytes, position: int) -> bytearray:
    """``frame`` whose empty tagged-field section at ``position`` gets one unknown field."""
    patched = bytearray(frame)
    assert patched[position] == 0, "not an empty tagged-field section"
    patched[position : position + 1] = UNKNOWN
    return patched


def test_in_a_small_produce_request_partition() -> None:
    records = make_batch([b"small"])
    request = produce.ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=datetime.timedelta(seconds=1),
        topic_data=(
            produce.TopicProduceData(
                name="t",
                partition_data=(produce.PartitionProduceData(index=0, records=records),),
            ),
        ),
    )
    frame = encode_request(request, 1)[4:]
    # after the records: the partition's, the topic's and the request's sections
    patched = _with_unknown_field_at(frame, len(frame) - 3)

    _, body = decode_request(patched, read_prefix(patched))
    assert body == request


def test_in_a_fetch_request_partition() -> None:
    request = fetch.FetchRequest(
        cluster_id=None,
        replica_id=-1,
        max_wait=datetime.timedelta(milliseconds=500),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=(
            fetch.FetchTopic(
                topic="t",
                partitions=(
                    fetch.FetchPartition(
                        partition=0,
                        current_leader_epoch=-1,
                        fetch_offset=42,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 20,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    frame = encode_request(request, 1)[4:]
    # the partition's section ends it; then the topic's, the forgotten topics (an empty compact
    # array: 1 byte), the rack id (1 byte) and the request's own section
    patched = _with_unknown_field_at(frame, len(frame) - 5)

    _, body = decode_request(patched, read_prefix(patched))
    assert body == request
