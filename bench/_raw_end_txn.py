"""EndTxn round trips measured with raw requests (kio) over one socket: a transaction adds a
partition, produces one record and commits, and only the EndTxn is timed.
"""

from __future__ import annotations

import datetime
import io
import itertools
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

import crc32c
from _clients import Run, Window
from _wire import _varint, read_frame

VALUE_BYTES = 100
TXN_TIMEOUT_MS = 60_000


@dataclass(frozen=True)
class RawLoad:
    """Up to ``transactions`` AddPartitionsToTxn → Produce → EndTxn cycles, for ≤ ``seconds``."""

    bootstrap: str
    topic: str
    transactional_id: str
    transactions: int
    seconds: float
    broker_pid: int


@dataclass(frozen=True)
class RawRun:
    """The seconds of each EndTxn round trip, and the window over all cycles."""

    run: Run
    end_txn: list[float]


class _Wire:
    """Requests built with kio, one at a time over one socket, answers decoded and returned."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.correlation = sock, itertools.count(1)

    def encode(self, body: Any) -> bytes:
        from kio.serial import entity_writer
        from kio.static.primitive import i32

        header_cls = body.__header_schema__
        header = header_cls(
            request_api_key=body.__api_key__,
            request_api_version=body.__version__,
            correlation_id=i32(next(self.correlation)),
            client_id="bench-txn",
        )
        buf = io.BytesIO()
        entity_writer(header_cls)(buf, header)
        entity_writer(type(body))(buf, body)
        payload = buf.getvalue()
        return struct.pack(">i", len(payload)) + payload

    def call(self, body: Any) -> tuple[Any, float]:
        """The decoded answer and the seconds from ``sendall`` until it was read."""
        from kio.index import load_response_schema
        from kio.serial import entity_reader

        frame = self.encode(body)
        start = time.perf_counter()
        self.sock.sendall(frame)
        payload = read_frame(self.sock)
        elapsed = time.perf_counter() - start
        schema = load_response_schema(body.__api_key__, body.__version__)
        _header, offset = entity_reader(schema.__header_schema__)(payload, 0)
        return entity_reader(schema)(payload, offset)[0], elapsed


def _txn_batch(value: bytes, producer_id: int, epoch: int, sequence: int) -> bytes:
    """A magic-2 batch of one record, marked transactional (attributes bit 4), of
    ``producer_id``/``epoch`` at ``sequence``; layout as in ``_wire.record_batch``."""
    # attributes, timestamp delta, offset delta, no key, the value, no headers
    body = b"\x00" + _varint(0) + _varint(0) + _varint(-1)
    body += _varint(len(value)) + value + _varint(0)
    record = _varint(len(body)) + body
    now = int(time.time() * 1000)
    after_crc = (
        struct.pack(">hiqqqhii", 0x10, 0, now, now, producer_id, epoch, sequence, 1) + record
    )
    head = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c.crc32c(after_crc))
    return struct.pack(">qi", 0, len(head) + len(after_crc)) + head + after_crc


def raw_end_txn_run(load: RawLoad) -> RawRun:
    """InitProducerId, then AddPartitionsToTxn → Produce (one record) → EndTxn(commit) cycles;
    every EndTxn timed."""
    from kio.schema.add_partitions_to_txn.v3 import request as apt
    from kio.schema.end_txn.v3 import request as et
    from kio.schema.errors import ErrorCode
    from kio.schema.init_producer_id.v4 import request as ipi
    from kio.schema.produce.v3 import request as pr
    from kio.static.primitive import Records, i16, i32, i32Timedelta, i64

    host, port = load.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        wire = _Wire(sock)
        retry_until = time.monotonic() + 20
        while True:  # the coordinator may still be loading: retried, bounded in time
            init, _ = wire.call(
                ipi.InitProducerIdRequest(
                    transactional_id=load.transactional_id,
                    transaction_timeout=i32Timedelta.parse(
                        datetime.timedelta(milliseconds=TXN_TIMEOUT_MS)
                    ),
                    producer_id=i64(-1),
                    producer_epoch=i16(-1),
                )
            )
            if init.error_code == ErrorCode.none:
                break
            if time.monotonic() > retry_until:
                raise RuntimeError(f"InitProducerId: {init.error_code.name}")
            time.sleep(0.05)
        add = apt.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=load.transactional_id,
            v3_and_below_producer_id=init.producer_id,
            v3_and_below_producer_epoch=init.producer_epoch,
            v3_and_below_topics=(
                apt.AddPartitionsToTxnTopic(name=load.topic, partitions=(i32(0),)),
            ),
        )
        end = et.EndTxnRequest(
            transactional_id=load.transactional_id,
            producer_id=init.producer_id,
            producer_epoch=init.producer_epoch,
            committed=True,
        )
        value = b"x" * VALUE_BYTES
        times: list[float] = []
        window = Window(load.broker_pid)
        deadline = time.monotonic() + load.seconds
        retries = 0
        while len(times) < load.transactions and time.monotonic() < deadline:
            answer, _ = wire.call(add)
            codes = [
                p.partition_error_code
                for t in answer.results_by_topic_v3_and_below
                for p in t.results_by_partition
            ]
            if codes == [ErrorCode.concurrent_transactions] and retries < 1_000:
                retries += 1  # the previous transaction is still completing (markers): again
                time.sleep(0.001)
                continue
            if any(code != ErrorCode.none for code in codes):
                raise RuntimeError(f"AddPartitionsToTxn: {[c.name for c in codes]}")
            batch = _txn_batch(value, init.producer_id, init.producer_epoch, len(times))
            produce = pr.ProduceRequest(
                transactional_id=load.transactional_id,
                acks=i16(-1),
                timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
                topic_data=(
                    pr.TopicProduceData(
                        name=load.topic,
                        partition_data=(
                            pr.PartitionProduceData(index=i32(0), records=Records(batch)),
                        ),
                    ),
                ),
            )
            answer, _ = wire.call(produce)
            codes = [p.error_code for t in answer.responses for p in t.partition_responses]
            if any(code != ErrorCode.none for code in codes):
                raise RuntimeError(f"Produce: {[c.name for c in codes]}")
            answer, elapsed = wire.call(end)
            if answer.error_code != ErrorCode.none:
                raise RuntimeError(f"EndTxn: {answer.error_code.name}")
            times.append(elapsed)
        return RawRun(window.run(len(times), 0), times)


# --- running everything --------------------------------------------------------------------------
