"""Produce ``record_errors``: a batch refused because of some of its records names each of them.

Kafka's ``LogValidator`` refuses the whole batch but lists each bad record's index and message
(v8+), so that a client fails exactly those records and reports the others as failed because of
a neighbour (librdkafka's ``_INVALID_DIFFERENT_RECORD``) rather than for a reason of their own.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from kio.schema.errors import ErrorCode
from kio.schema.produce.v7 import request as produce_v7
from kio.schema.produce.v9 import request as produce_v9

from tests.broker.conftest import Wire, create_topic, make_batch, read_partition, watermarks
from tests.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)


def produce(topic: str, batch: bytes, version: int = 9) -> Any:
    module = produce_v9 if version == 9 else produce_v7
    request = module.ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(
            module.TopicProduceData(
                name=topic, partition_data=(module.PartitionProduceData(index=0, records=batch),)
            ),
        ),
    )
    return request


def only_partition(response: Any) -> Any:
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition


@pytest.fixture
def compacted(shared_broker: BrokerProcess) -> str:
    name = f"compacted-{uuid.uuid4().hex[:8]}"
    create_topic(shared_broker.bootstrap, name, config={"cleanup.policy": "compact"})
    return name


@pytest.mark.parametrize("compression", [0, 1, 4])
def test_keyless_records_on_a_compacted_topic_are_each_named(
    shared_broker: BrokerProcess, compacted: str, compression: int
) -> None:
    keys = [b"k0", None, b"k2", None, None, b"k5"]
    batch = make_batch([b"v%d" % i for i in range(6)], keys=keys, compression=compression)
    with Wire(shared_broker.bootstrap) as conn:
        result = only_partition(conn.request(produce(compacted, batch)))
    expected = (
        f"Compacted topic cannot accept message without key in topic partition {compacted}-0."
    )
    assert result.error_code == ErrorCode.invalid_record, result
    assert [(e.batch_index, e.batch_index_error_message) for e in result.record_errors] == [
        (1, expected),
        (3, expected),
        (4, expected),
    ], result.record_errors
    # Kafka's summary: the count, and at most the first three errors
    assert result.error_message == (
        "One or more records have been rejected due to 3 record errors in total, and only "
        "showing the first three errors at most: ["
        f"RecordError(batchIndex=1, message='{expected}'), "
        f"RecordError(batchIndex=3, message='{expected}'), "
        f"RecordError(batchIndex=4, message='{expected}')]"
    ), result.error_message
    assert (result.base_offset, result.log_start_offset) == (-1, 0), result
    assert watermarks(shared_broker.bootstrap, compacted) == (0, 0), "part of the batch was kept"


def test_versions_without_record_errors_still_refuse_the_batch(
    shared_broker: BrokerProcess, compacted: str
) -> None:
    batch = make_batch([b"a", b"b"], keys=[None, b"k"])
    with Wire(shared_broker.bootstrap) as conn:
        old = only_partition(conn.request(produce(compacted, batch, version=7)))
        assert old.error_code == ErrorCode.invalid_record, old
        keyed = only_partition(conn.request(produce(compacted, make_batch([b"c"], keys=[b"k"]))))
        assert (keyed.error_code, keyed.base_offset, keyed.record_errors) == (
            ErrorCode.none,
            0,
            (),
        ), keyed


def test_librdkafka_fails_the_keyless_records_for_themselves_and_the_rest_for_them(
    shared_broker: BrokerProcess, compacted: str
) -> None:
    reports: list[tuple[bytes | None, Any]] = []
    producer = Producer(
        {"bootstrap.servers": shared_broker.bootstrap, "linger.ms": 200, "acks": "all"}
    )
    for i, key in enumerate([b"k0", None, b"k2", None]):
        producer.produce(
            compacted,
            b"v%d" % i,
            key,
            on_delivery=lambda err, msg: reports.append((msg.key(), err)),
        )
    assert producer.flush(15) == 0, "messages still queued after 15 s"
    codes = [(key, err.code() if err is not None else None) for key, err in reports]
    assert sorted(codes, key=repr) == sorted(
        [
            (b"k0", KafkaError._INVALID_DIFFERENT_RECORD),
            (None, KafkaError.INVALID_RECORD),
            (b"k2", KafkaError._INVALID_DIFFERENT_RECORD),
            (None, KafkaError.INVALID_RECORD),
        ],
        key=repr,
    ), codes
    # the keyed records can be sent again on their own, and only they are in the log
    producer.produce(compacted, b"v0", b"k0")
    producer.produce(compacted, b"v2", b"k2")
    assert producer.flush(15) == 0
    records = read_partition(shared_broker.bootstrap, compacted)
    assert [(r.key, r.value) for r in records] == [(b"k0", b"v0"), (b"k2", b"v2")]
