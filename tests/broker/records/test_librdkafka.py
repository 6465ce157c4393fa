"""librdkafka (confluent-kafka) against our codec, through the tansu reference broker, which stores
produced batches verbatim: batches we encode are produced raw and consumed by librdkafka (with CRC
checks on), and batches librdkafka produces are fetched raw and decoded by us."""

from __future__ import annotations

import datetime
import io
import socket
import struct
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.fetch.v4.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.fetch.v4.response import FetchResponse
from kio.schema.produce.v3.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.produce.v3.response import ProduceResponse
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i32Timedelta, i64

from sluice.broker.records import batch
from sluice.broker.records.codec import Record, decode_records, encode_batch

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
BASE_TIMESTAMP = 1_700_000_000_000
QUIET = {"log.connection.close": False, "log_level": 2}


def call(bootstrap: str, request: Any, response_type: Any) -> Any:
    """Send one request to the broker and read its response: the bytes stay ours."""
    host, port = bootstrap.rsplit(":", 1)
    out = io.BytesIO()
    entity_writer(RequestHeader)(
        out,
        RequestHeader(
            request_api_key=request.__api_key__,
            request_api_version=request.__version__,
            correlation_id=i32(1),
            client_id="sluice-test",
        ),
    )
    entity_writer(type(request))(out, request)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(struct.pack(">i", len(out.getvalue())) + out.getvalue())
        stream = sock.makefile("rb")
        (size,) = struct.unpack(">i", stream.read(4))
        data = stream.read(size)
    _, position = entity_reader(ResponseHeader)(data, 0)
    return entity_reader(response_type)(data, position)[0]


def produce_raw(bootstrap: str, topic: str, records: bytes) -> None:
    request = ProduceRequest(
        acks=i16(1),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(PartitionProduceData(index=i32(0), records=records),),
            ),
        ),
    )
    response = call(bootstrap, request, ProduceResponse)
    assert response.responses[0].partition_responses[0].error_code.value == 0, response


def fetch_raw(bootstrap: str, topic: str) -> bytes:
    request = FetchRequest(
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=100)),
        min_bytes=i32(1),
        topics=(
            FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    FetchPartition(
                        partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20)
                    ),
                ),
            ),
        ),
    )
    partition = call(bootstrap, request, FetchResponse).responses[0].partitions[0]
    assert partition.error_code.value == 0, partition
    return bytes(partition.records or b"")


def create_topics(bootstrap: str, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    for future in admin.create_topics([NewTopic(name, 1, 1) for name in names]).values():
        future.result(15)


RECORDS = [
    Record(0, 0, b"key", b"value " * 50, (("trace-id", b"abc"), ("ünïcödé", None), ("empty", b""))),
    Record(1, -5, None, b"null key " * 30),
    Record(2, 3, b"tombstone", None),
    Record(3, 2**33, b"", b"", (("dup", b"1"), ("dup", b"2"))),
    Record(4, 1, b"big", bytes(range(256)) * 400),  # > snappy's 32 KiB and lz4's 64 KiB blocks
]


def test_librdkafka_reads_our_batches(tansu: str) -> None:
    create_topics(tansu, [f"ours-{name}" for name in CODECS])
    max_timestamp = BASE_TIMESTAMP + max(r.timestamp_delta for r in RECORDS)
    for name, codec in CODECS.items():
        raw = encode_batch(
            base_offset=0,
            records=RECORDS,
            compression=codec,
            base_timestamp=BASE_TIMESTAMP,
            max_timestamp=max_timestamp,
        )
        produce_raw(tansu, f"ours-{name}", raw)
        stored = fetch_raw(tansu, f"ours-{name}")
        assert stored[16:] == raw[16:], "tansu changed the batch: the test would prove nothing"

    consumer = Consumer(
        {
            "bootstrap.servers": tansu,
            "group.id": "codec-test",
            "check.crcs": True,
            "enable.auto.commit": False,
            **QUIET,
        }
    )
    try:
        for name in CODECS:
            consumer.assign([TopicPartition(f"ours-{name}", 0, 0)])
            messages = consumer.consume(len(RECORDS), timeout=15)
            got = []
            for message in messages:
                assert message.error() is None, f"{name}: {message.error()}"
                got.append(
                    (
                        message.offset(),
                        message.timestamp()[1],
                        message.key(),
                        message.value(),
                        message.headers(),
                    )
                )
            want = [
                (
                    r.offset_delta,
                    BASE_TIMESTAMP + r.timestamp_delta,
                    r.key,
                    r.value,
                    [(k, v) for k, v in r.headers] or None,
                )
                for r in RECORDS
            ]
            assert got == want, name
    finally:
        consumer.close()


@pytest.mark.parametrize("name", CODECS)
def test_we_read_librdkafkas_batches(tansu: str, name: str) -> None:
    topic = f"theirs-{name}"
    create_topics(tansu, [topic])
    producer = Producer(
        {"bootstrap.servers": tansu, "compression.codec": name, "linger.ms": 200, **QUIET}
    )
    sent = []
    for i in range(30):
        key = None if i % 7 == 3 else b"key-%d" % i
        value = None if i % 11 == 5 else b"value %d is long enough to compress " % i * 8
        headers = [("i", str(i).encode()), ("ñ", None)] if i % 2 else None
        producer.produce(
            topic, key=key, value=value, headers=headers, timestamp=BASE_TIMESTAMP + i * (-1) ** i
        )
        sent.append((i, key, value, tuple(headers or ()), BASE_TIMESTAMP + i * (-1) ** i))
    assert producer.flush(15) == 0

    data = fetch_raw(tansu, topic)
    got = []
    for header in batch.iter_headers(data):
        batch.validate(data, header)
        assert header.compression == CODECS[name]
        for r in decode_records(data, header):
            got.append(
                (
                    header.base_offset + r.offset_delta,
                    r.key,
                    r.value,
                    r.headers,
                    header.base_timestamp + r.timestamp_delta,
                )
            )
    assert got == sent
