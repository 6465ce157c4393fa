"""OffsetCommit throughput: synchronous and asynchronous commits through confluent-kafka, and
raw OffsetCommit v8 requests pipelined over one socket (the client taken out of the figure).
"""

from __future__ import annotations

import io
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from _clients import Run, Window
from _wire import read_frame

PARTITIONS = 6
IN_FLIGHT = 64  # outstanding commits of the asynchronous and pipelined runs


@dataclass(frozen=True)
class CommitLoad:
    """Up to ``commits`` commits (partition ``i % partitions``, offset ``i + 1``) for at most
    ``seconds``, to ``group`` (no members: generation -1, as a consumer that only assigns)."""

    bootstrap: str
    topic: str
    group: str
    commits: int
    seconds: float
    broker_pid: int
    partitions: int = PARTITIONS
    in_flight: int = IN_FLIGHT


def _committer(load: CommitLoad, **extra: Any) -> Any:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": load.bootstrap,
            "group.id": load.group,
            "enable.auto.commit": False,
            "log_level": 0,
            **extra,
        }
    )
    # The coordinator found and connected to before the timing starts.
    for tp in consumer.commit(offsets=[TopicPartition(load.topic, 0, 0)], asynchronous=False):
        if tp.error is not None:
            raise RuntimeError(f"first commit: {tp.error}")
    return consumer


def commit_sync_run(load: CommitLoad) -> Run:
    """``commit(offsets=[one partition], asynchronous=False)`` in a loop."""
    from confluent_kafka import TopicPartition

    consumer = _committer(load)
    try:
        window = Window(load.broker_pid)
        deadline = time.monotonic() + load.seconds
        done = 0
        while done < load.commits and time.monotonic() < deadline:
            offsets = [TopicPartition(load.topic, done % load.partitions, done + 1)]
            for tp in consumer.commit(offsets=offsets, asynchronous=False):
                if tp.error is not None:
                    raise RuntimeError(f"commit {done}: {tp.error}")
            done += 1
        return window.run(done, 0)
    finally:
        consumer.close()


def commit_async_run(load: CommitLoad) -> Run:
    """``commit(offsets=[one partition], asynchronous=True)`` with at most ``in_flight``
    outstanding; the run ends when ``on_commit`` has reported every commit sent."""
    from confluent_kafka import TopicPartition

    done = [0]
    failed: list[str] = []

    def on_commit(err: Any, partitions: list[Any]) -> None:
        done[0] += 1
        if err is not None or any(tp.error is not None for tp in partitions):
            failed.append(str(err or [tp.error for tp in partitions if tp.error]))

    consumer = _committer(load, on_commit=on_commit)
    try:
        consumer.poll(0.1)  # the warm-up commit's callback
        done[0] = 0
        failed.clear()
        window = Window(load.broker_pid)
        deadline = time.monotonic() + load.seconds
        sent = 0
        while sent < load.commits and time.monotonic() < deadline:
            if sent - done[0] >= load.in_flight:
                consumer.poll(0.001)
                continue
            offsets = [TopicPartition(load.topic, sent % load.partitions, sent + 1)]
            consumer.commit(offsets=offsets, asynchronous=True)
            sent += 1
        drain_until = time.monotonic() + 10
        while done[0] < sent and time.monotonic() < drain_until:
            consumer.poll(0.001)
        run = window.run(done[0], 0)
        if failed or done[0] < sent:
            raise RuntimeError(
                f"{sent - done[0]} commits unanswered, {len(failed)} failed: {failed[:3]}"
            )
        return run
    finally:
        consumer.close()


_SENTINEL = 0x0123_4567_89AB_CDEF  # the committed offset in the template, found and patched


def _offset_commit_frame(load: CommitLoad) -> tuple[bytearray, int]:
    """An OffsetCommit v8 request frame (size prefix included) and where its offset lies."""
    from kio.schema.offset_commit.v8 import request as oc
    from kio.serial import entity_writer
    from kio.static.primitive import i32, i64

    body = oc.OffsetCommitRequest(
        group_id=load.group,
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=(
            oc.OffsetCommitRequestTopic(
                name=load.topic,
                partitions=(
                    oc.OffsetCommitRequestPartition(
                        partition_index=i32(0),
                        committed_offset=i64(_SENTINEL),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="",
                    ),
                ),
            ),
        ),
    )
    header_cls = body.__header_schema__
    header = header_cls(
        request_api_key=body.__api_key__,
        request_api_version=body.__version__,
        correlation_id=i32(0),
        client_id="bench-commit",
    )
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header)
    entity_writer(type(body))(buf, body)
    payload = buf.getvalue()
    frame = bytearray(struct.pack(">i", len(payload)) + payload)
    return frame, frame.index(struct.pack(">q", _SENTINEL))


def _decoded(payload: bytes) -> Any:
    from kio.index import load_response_schema
    from kio.serial import entity_reader

    schema = load_response_schema(8, 8)
    _header, offset = entity_reader(schema.__header_schema__)(payload, 0)
    return entity_reader(schema)(payload, offset)[0]


def commit_raw_run(load: CommitLoad) -> Run:
    """OffsetCommit v8 frames over one socket, ``in_flight`` outstanding. The first answer is
    decoded with kio and must carry no error; every later one must equal it byte for byte after
    the correlation id (the same request gets the same answer), or it is decoded and reported."""
    frame, at = _offset_commit_frame(load)
    host, port = load.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(frame)
        first = read_frame(sock)
        codes = [p.error_code for t in _decoded(first).topics for p in t.partitions]
        if any(codes):
            raise RuntimeError(f"OffsetCommit error codes {codes}")
        expected = first[4:]
        window = Window(load.broker_pid)
        deadline = time.monotonic() + load.seconds
        sent = acked = 0
        while acked < load.commits:
            batch = bytearray()
            while sent - acked < load.in_flight and sent < load.commits:
                if time.monotonic() >= deadline:
                    break
                sent += 1
                struct.pack_into(">i", frame, 8, sent)
                struct.pack_into(">q", frame, at, sent + 1)
                batch += frame
            if batch:
                sock.sendall(batch)
            if sent == acked:
                break
            answer = read_frame(sock)
            if answer[4:] != expected:
                codes = [p.error_code for t in _decoded(answer).topics for p in t.partitions]
                raise RuntimeError(f"OffsetCommit {acked + 1}: error codes {codes}")
            acked += 1
        return window.run(acked, 0)


# --- running everything --------------------------------------------------------------------------
