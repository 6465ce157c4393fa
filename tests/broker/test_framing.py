"""Framing over TCP: requests however the bytes are cut, one connection's requests in order.

The broker receives each frame straight into a buffer of its size (``sluice.broker.framing``) and
reuses a connection's buffer for its big frames; these tests cut and join the bytes in the ways
TCP may deliver them, against a real broker process, and check what the log holds afterwards.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
import time
from typing import Any

import psutil
import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.create_topics.v5.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v9 import request as metadata_v9
from kio.schema.produce.v3 import request as produce_v3
from kio.schema.produce.v9 import request as produce_v9

from sluice.broker import framing
from sluice.broker.framing import unshared
from tests.broker.conftest import Wire, decode_response, encode_request, make_batch, read_partition

pytestmark = pytest.mark.timeout(120)

PRODUCE = 0


def produce(topic: str, batch: bytes, *, version: int = 9, acks: int = -1) -> Any:
    mod = produce_v9 if version == 9 else produce_v3
    return mod.ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(
            mod.TopicProduceData(
                name=topic, partition_data=(mod.PartitionProduceData(index=0, records=batch),)
            ),
        ),
    )


def api_versions() -> ApiVersionsRequest:
    return ApiVersionsRequest(client_software_name="t", client_software_version="1")


def make_topic(conn: Wire, name: str, **configs: str) -> None:
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=name,
                num_partitions=1,
                replication_factor=1,
                assignments=(),
                configs=tuple(CreatableTopicConfig(name=k, value=v) for k, v in configs.items()),
            ),
        ),
        timeout=datetime.timedelta(seconds=5),
        validate_only=False,
    )
    (result,) = conn.request(request).topics
    assert result.error_code == ErrorCode.none, result


def produced(conn: Wire, correlation_id: int, version: int = 9) -> tuple[ErrorCode, int]:
    """(error, base offset) of the next response, which must answer ``correlation_id``."""
    payload = conn.read_frame()
    assert payload is not None, "the broker closed the connection instead of answering"
    correlation, response = decode_response(PRODUCE, version, payload)
    assert correlation == correlation_id, f"answer to {correlation}, expected {correlation_id}"
    (topic,) = response.responses
    (part,) = topic.partition_responses
    return part.error_code, part.base_offset


def values_of(bootstrap: str, topic: str) -> list[bytes | None]:
    return [r.value for r in read_partition(bootstrap, topic)]


def assert_serves(bootstrap: str) -> None:
    with Wire(bootstrap) as conn:
        assert conn.request(api_versions()).error_code == ErrorCode.none


def nodelay(conn: Wire) -> Wire:
    """Each ``send`` leaves as its own TCP segment."""
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


# --- how the bytes arrive ------------------------------------------------------------------


def test_a_request_sent_one_byte_at_a_time(broker: Any) -> None:
    with nodelay(Wire(broker.bootstrap)) as conn:
        make_topic(conn, "bytewise")
        frame = encode_request(produce("bytewise", make_batch([b"a", b"b"])), 7)
        for i in range(len(frame)):
            conn.send(frame[i : i + 1])
            if i % 16 == 0:
                time.sleep(0.001)  # let the broker read what came so far
        assert produced(conn, 7) == (ErrorCode.none, 0)
        # and the connection goes on with whole requests
        conn.send(encode_request(produce("bytewise", make_batch([b"c"])), 8))
        assert produced(conn, 8) == (ErrorCode.none, 2)
    assert values_of(broker.bootstrap, "bytewise") == [b"a", b"b", b"c"]


def test_the_size_prefix_split_across_reads(broker: Any) -> None:
    with nodelay(Wire(broker.bootstrap)) as conn:
        make_topic(conn, "split")
        frame = encode_request(produce("split", make_batch([b"x" * 100])), 3)
        for cut in (frame[:1], frame[1:3], frame[3:5], frame[5:]):
            conn.send(cut)
            time.sleep(0.05)
        assert produced(conn, 3) == (ErrorCode.none, 0)
    assert values_of(broker.bootstrap, "split") == [b"x" * 100]


def test_pipelined_requests_in_one_segment_are_answered_in_order(broker: Any) -> None:
    with Wire(broker.bootstrap) as conn:
        make_topic(conn, "pipelined")
        frames = [
            encode_request(produce("pipelined", make_batch([f"v{i}".encode()])), 100 + i)
            for i in range(20)
        ]
        # mixed with other APIs: each answer must come in the order of the requests
        frames.insert(5, encode_request(api_versions(), 99))
        conn.send(b"".join(frames))
        for i in range(20):
            if i == 5:
                payload = conn.read_frame()
                assert payload is not None
                assert struct.unpack_from(">i", payload)[0] == 99
            assert produced(conn, 100 + i) == (ErrorCode.none, i)
    assert values_of(broker.bootstrap, "pipelined") == [f"v{i}".encode() for i in range(20)]


def test_big_frames_reuse_no_bytes_of_the_previous_request(broker: Any) -> None:
    """Big frames share the connection's buffer: every batch must reach the log as sent, when
    frames grow, shrink, pipeline, and come with small ones between them."""
    sizes = [300_000, 200_000, 160_000, 310_000, 70_000, 1_000, 300_000, 150_001, 299_999]
    batches = [
        make_batch([bytes([65 + i % 26]) * size]) for i, size in enumerate(sizes)
    ]  # one record each, a different byte each
    with Wire(broker.bootstrap, timeout=30) as conn:
        make_topic(conn, "big")
        for i, batch in enumerate(batches[:4]):  # one at a time
            conn.send(encode_request(produce("big", batch, version=3), i))
            assert produced(conn, i, version=3) == (ErrorCode.none, i)
        conn.send(  # the rest pipelined, with a small request between
            b"".join(
                encode_request(produce("big", batch, version=3), i)
                for i, batch in enumerate(batches[4:], start=4)
            )
        )
        for i in range(4, len(batches)):
            assert produced(conn, i, version=3) == (ErrorCode.none, i)
    read = values_of(broker.bootstrap, "big")
    assert [len(v or b"") for v in read] == sizes
    for i, value in enumerate(read):
        assert value == bytes([65 + i % 26]) * sizes[i], f"record {i} was damaged"


def test_a_frame_above_1_mib_arrives_whole(broker: Any) -> None:
    """Such a frame's buffer grows as its bytes arrive (from 1 MiB, doubling)."""
    value = bytes(range(256)) * (5 * 2**20 // 256)  # 5 MiB in one record
    with nodelay(Wire(broker.bootstrap, timeout=60)) as conn:
        make_topic(conn, "huge", **{"max.message.bytes": str(8 * 2**20)})
        frame = encode_request(produce("huge", make_batch([value])), 1)
        for start in range(0, len(frame), 700_000):  # in pieces that straddle each step
            conn.send(frame[start : start + 700_000])
            time.sleep(0.02)
        assert produced(conn, 1) == (ErrorCode.none, 0)
        conn.send(encode_request(produce("huge", make_batch([b"small"])), 2))
        assert produced(conn, 2) == (ErrorCode.none, 1)
    assert values_of(broker.bootstrap, "huge") == [value, b"small"]


def test_announcing_a_big_frame_does_not_take_its_memory(broker: Any) -> None:
    """A size prefix alone costs the broker at most 1 MiB, not what it announces."""
    process = psutil.Process(broker.pid)
    assert_serves(broker.bootstrap)
    before = process.memory_info().rss
    conns = [Wire(broker.bootstrap) for _ in range(20)]
    try:
        for conn in conns:
            conn.send(struct.pack(">i", 90 * 2**20) + b"\x00\x00\x00\x03")
        assert_serves(broker.bootstrap)  # the prefixes are in
        growth = (process.memory_info().rss - before) / 2**20
        assert growth < 200, f"RSS grew by {growth:.0f} MiB for 20 announced 90 MiB frames"
    finally:
        for conn in conns:
            conn.close()
    assert_serves(broker.bootstrap)


def test_acks_0_gets_no_answer_and_the_next_request_does(broker: Any) -> None:
    with Wire(broker.bootstrap) as conn:
        make_topic(conn, "fire")
        conn.send(
            encode_request(produce("fire", make_batch([b"a"]), acks=0), 1)
            + encode_request(produce("fire", make_batch([b"b"]), acks=0), 2)
            + encode_request(produce("fire", make_batch([b"c"])), 3)
        )
        assert produced(conn, 3) == (ErrorCode.none, 2)
    assert values_of(broker.bootstrap, "fire") == [b"a", b"b", b"c"]


# --- bad sizes and clients that go away ----------------------------------------------------


@pytest.mark.parametrize("size", [-1, -(2**31), 0, 7, 100 * 2**20 + 1])
def test_a_size_out_of_bounds_closes_only_that_connection(broker: Any, size: int) -> None:
    with Wire(broker.bootstrap) as other:
        assert other.request(api_versions()).error_code == ErrorCode.none
        with Wire(broker.bootstrap) as bad:
            bad.send(struct.pack(">i", size) + b"\x00" * 16)
            assert bad.closed_by_peer(), f"size {size} should close the connection"
        # the connection open beside it is still served, and new ones are
        assert other.request(api_versions()).error_code == ErrorCode.none
    assert_serves(broker.bootstrap)
    assert "request size" in broker.log_text()


@pytest.mark.parametrize("sent", [1, 3, 4, 10, 200_000])
def test_a_client_that_disconnects_mid_frame(broker: Any, sent: int) -> None:
    with Wire(broker.bootstrap) as conn:
        make_topic(conn, "cut")
    frame = encode_request(produce("cut", make_batch([b"z" * 300_000])), 1)
    with Wire(broker.bootstrap) as conn:
        conn.send(frame[:sent])
        time.sleep(0.1)
    with Wire(broker.bootstrap) as conn:  # reset in the middle, this time
        conn.send(frame[:sent])
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    assert broker.proc.poll() is None, broker.log_text()[-3000:]
    assert_serves(broker.bootstrap)
    assert values_of(broker.bootstrap, "cut") == []
    assert "Traceback" not in broker.log_text()


def test_a_request_then_eof_is_answered(broker: Any) -> None:
    """A client may half-close after its last request: the answer still comes, then the end."""
    with Wire(broker.bootstrap) as conn:
        conn.send(
            encode_request(
                metadata_v9.MetadataRequest(
                    topics=(),
                    allow_auto_topic_creation=False,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False,
                ),
                5,
            )
        )
        conn.sock.shutdown(socket.SHUT_WR)
        assert conn.read_frame() is not None
        assert conn.read_frame() is None


def test_unshared_sees_any_live_view_of_a_buffer() -> None:
    buffer = bytearray(b"0123456789")
    assert unshared(buffer) and buffer == b"0123456789"
    frame = memoryview(buffer)[:8]
    records = frame[2:6]  # what a request keeps: a slice of the frame
    frame.release()
    assert not unshared(buffer), "a slice outliving its frame must keep the buffer from reuse"
    records.release()
    assert unshared(buffer) and buffer == b"0123456789"


def test_an_idle_connection_lets_its_spare_buffer_go(monkeypatch: pytest.MonkeyPatch) -> None:
    """The buffer kept for the next big frame is dropped when no frame comes for a while."""
    monkeypatch.setattr(framing, "SPARE_IDLE_S", 0.2)
    big, small = b"b" * (framing.REUSE_MIN + 10), b"s" * 20

    async def scenario() -> tuple[int, int, int]:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        _, proto = await loop.connect_accepted_socket(
            lambda: framing.FrameProtocol(1 << 30, lambda _: None), ours
        )
        try:
            for frame in (big, big):  # the second reuses the first's buffer
                await loop.sock_sendall(theirs, struct.pack(">i", len(frame)) + frame)
                proto.done_with(await proto.next_frame())
            kept = proto.spare_bytes
            waiting = asyncio.ensure_future(proto.next_frame())
            await asyncio.sleep(0.05)
            soon = proto.spare_bytes  # a producer's next request comes well within the idle time
            await asyncio.sleep(0.4)
            later = proto.spare_bytes
            await loop.sock_sendall(theirs, struct.pack(">i", len(small)) + small)
            assert bytes(await waiting) == small
            return kept, soon, later
        finally:
            proto.close()
            theirs.close()

    kept, soon, later = asyncio.run(scenario())
    assert kept == soon == len(big)
    assert later == 0
