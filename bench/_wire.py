"""A producer that sends one pre-encoded record batch over and over: the broker's ingest ceiling.

No real client does this, but it takes the client out of the figure: encoding happens once, and
each Produce request then costs the generator one ``sendall`` of ~1 MB, so what is timed is the
broker (and loopback). Requests are Produce v3 (the oldest version our profile and tansu share),
pipelined up to ``in_flight`` deep on one connection, like librdkafka's default of 5.

Layouts written here (big-endian; Kafka protocol guide, "Record Batch"):

    request   = size:int32 api_key:int16 api_version:int16 correlation_id:int32 client_id:string
                transactional_id:nullable_string acks:int16 timeout_ms:int32
                [topic:string [partition:int32 records:bytes]]
    batch     = base_offset:int64 batch_length:int32 partition_leader_epoch:int32 magic:int8(=2)
                crc:uint32 (CRC-32C of everything after it) attributes:int16
                last_offset_delta:int32 base_timestamp:int64 max_timestamp:int64
                producer_id:int64(-1) producer_epoch:int16(-1) base_sequence:int32(-1)
                [record] (int32 count)
    record    = length:varint attributes:int8 timestamp_delta:varlong offset_delta:varint
                key:varint-bytes(-1 = null) value:varint-bytes headers:varint(0)
    response  = size:int32 correlation_id:int32 [topic:string [partition:int32 error_code:int16
                base_offset:int64 log_append_time:int64]] throttle_time_ms:int32
"""

from __future__ import annotations

import socket
import struct
import time

import crc32c
from _clients import Run, Window, Workload

_PRODUCE, _VERSION = 0, 3
_MAX_BATCH = 960_000  # under the 1 MiB default message.max.bytes with room for the request


def _varint(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def record_batch(value: bytes, count: int, timestamp_ms: int) -> bytes:
    """A magic-2 batch of ``count`` records with no key and ``value``, uncompressed."""
    records = bytearray()
    for i in range(count):
        body = (
            b"\x00"
            + _varint(0)
            + _varint(i)
            + _varint(-1)
            + _varint(len(value))
            + value
            + _varint(0)
        )
        records += _varint(len(body)) + body
    after_crc = struct.pack(
        ">hiqqqhii", 0, count - 1, timestamp_ms, timestamp_ms, -1, -1, -1, count
    ) + bytes(records)
    head = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c.crc32c(after_crc))
    return struct.pack(">qi", 0, len(head) + len(after_crc)) + head + after_crc


def _string(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def produce_request(correlation_id: int, topic: str, batch: bytes, acks: int) -> bytes:
    """A complete, size-prefixed Produce v3 request carrying ``batch`` to partition 0."""
    body = (
        struct.pack(">hhi", _PRODUCE, _VERSION, correlation_id)
        + _string("bench-wire")
        + struct.pack(">hhi", -1, acks, 30_000)
        + struct.pack(">i", 1)
        + _string(topic)
        + struct.pack(">iii", 1, 0, len(batch))
        + batch
    )
    return struct.pack(">i", len(body)) + body


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if not k:
            raise ConnectionError("broker closed the connection")
        got += k
    return bytes(buf)


def read_frame(sock: socket.socket) -> bytes:
    """One response frame's payload (after its 4-byte size)."""
    return _read_exact(sock, struct.unpack(">i", _read_exact(sock, 4))[0])


def _error_code(response: bytes, topic: str) -> int:
    # correlation_id, topics count, topic name, partitions count, partition, error_code
    offset = 4 + 4 + 2 + len(topic.encode()) + 4 + 4
    return int(struct.unpack_from(">h", response, offset)[0])


def wire_produce_run(load: Workload, in_flight: int = 5) -> Run:
    """Send one batch over and over until ``load.records`` are acked or ``load.seconds`` pass."""
    per_batch = max(1, min(100_000, _MAX_BATCH // (load.value_bytes + 12)))
    batch = record_batch(b"x" * load.value_bytes, per_batch, int(time.time() * 1000))
    acks = -1 if load.acks == "all" else int(load.acks)
    host, port = load.bootstrap.rsplit(":", 1)
    # Requests differ only in their correlation id (bytes 8..12): build one, patch that field.
    request = bytearray(produce_request(0, load.topic, batch, acks))
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = acked = pending = 0
        window = Window(load.broker_pid)
        deadline = time.monotonic() + load.seconds
        while acked < load.records:
            while pending < in_flight and sent < load.records and time.monotonic() < deadline:
                struct.pack_into(">i", request, 8, sent // per_batch)
                sock.sendall(request)
                sent += per_batch
                pending += 1
            if not pending:
                break
            size = struct.unpack(">i", _read_exact(sock, 4))[0]
            code = _error_code(_read_exact(sock, size), load.topic)
            if code:
                raise RuntimeError(f"produce error code {code}")
            pending -= 1
            acked += per_batch
        return window.run(acked, load.value_bytes)
