"""Produce through the proxy (v3 one record, v3 streams, v2), then read the records back with a
real confluent-kafka consumer and check their bytes."""

from __future__ import annotations

import base64
import http.client
import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, TopicPartition

from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.rest_proxy.fixtures import Proxy, cluster_id


def read_all(bootstrap: str, topic: str, count: int, partitions: int = 1) -> list[Message]:
    """``count`` records of ``topic`` from the start, by a plain consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        found: list[Message] = []
        while len(found) < count:
            batch = consumer.consume(count - len(found), timeout=CLIENT_TIMEOUT)
            assert batch, f"only {len(found)} of {count} records came"
            for message in batch:
                assert message.error() is None, message.error()
                found.append(message)
        return found
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ({"type": "BINARY", "data": base64.b64encode(b"\x00\xffraw").decode()}, b"\x00\xffraw"),
        (
            {"type": "JSON", "data": {"n": 1, "s": "é"}},
            json.dumps({"n": 1, "s": "é"}, separators=(",", ":"), ensure_ascii=False).encode(),
        ),
        ({"type": "STRING", "data": "plain text"}, b"plain text"),
        ({"data": base64.b64encode(b"untyped").decode()}, b"untyped"),
    ],
)
def test_one_record_of_each_plain_format(
    broker: BrokerProcess, proxy: Proxy, part: dict[str, Any], expected: bytes
) -> None:
    topic = create_topic(broker.bootstrap)
    cid = cluster_id(proxy)
    answer = proxy.post(
        f"/v3/clusters/{cid}/topics/{topic}/records",
        {
            "key": {"type": "STRING", "data": "k1"},
            "value": part,
            "headers": [{"name": "trace", "value": base64.b64encode(b"t-1").decode()}],
            "timestamp": "2024-05-06T07:08:09.010Z",
        },
    )
    assert answer.status == 200, answer.body
    result = answer.json()
    assert result["error_code"] == 200 and result["cluster_id"] == cid
    assert result["topic_name"] == topic and result["partition_id"] == 0 and result["offset"] == 0
    assert result["timestamp"] == "2024-05-06T07:08:09.010Z"
    assert result["key"] == {"type": "STRING", "size": 2}
    assert result["value"] == {"type": part.get("type", "BINARY"), "size": len(expected)}
    (message,) = read_all(broker.bootstrap, topic, 1)
    assert message.key() == b"k1" and message.value() == expected
    assert message.headers() == [("trace", b"t-1")]
    assert message.timestamp()[1] == 1714979289010


def test_a_stream_of_records_is_answered_record_by_record(
    broker: BrokerProcess, proxy: Proxy
) -> None:
    topic = create_topic(broker.bootstrap, partitions=3)
    cid = cluster_id(proxy)
    records = [
        {"partition_id": i % 3, "value": {"type": "JSON", "data": {"i": i}}} for i in range(30)
    ]
    records.insert(7, {"value": {"type": "BINARY", "data": "not base64!"}})
    body = "\n".join(json.dumps(r) for r in records).encode()
    answer = proxy.post(f"/v3/clusters/{cid}/topics/{topic}/records", raw=body)
    assert answer.status == 200, answer.body
    results = answer.stream()
    assert len(results) == 31
    assert results[7]["error_code"] == 42206, results[7]
    good = results[:7] + results[8:]
    assert all(r["error_code"] == 200 for r in good), good
    assert [r["partition_id"] for r in good] == [i % 3 for i in range(30)]
    messages = read_all(broker.bootstrap, topic, 30, partitions=3)
    assert sorted(json.loads(m.value() or b"")["i"] for m in messages) == list(range(30))


def test_a_chunked_stream_is_answered_as_it_goes(broker: BrokerProcess, proxy: Proxy) -> None:
    topic = create_topic(broker.bootstrap)
    cid = cluster_id(proxy)
    connection = http.client.HTTPConnection(proxy.url.removeprefix("http://"), timeout=30)
    try:
        connection.putrequest("POST", f"/v3/clusters/{cid}/topics/{topic}/records")
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Transfer-Encoding", "chunked")
        connection.endheaders()
        for i in range(5):
            chunk = json.dumps({"value": {"type": "STRING", "data": f"s{i}"}}).encode()
            # one record cut in two chunks
            for piece in (chunk[:5], chunk[5:]):
                connection.send(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        connection.send(b"0\r\n\r\n")
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    assert response.status == 200
    decoder, text, position, results = json.JSONDecoder(), body.decode(), 0, []
    while text[position:].strip():
        while text[position].isspace():
            position += 1
        value, position = decoder.raw_decode(text, position)
        results.append(value)
    assert [r["offset"] for r in results] == [0, 1, 2, 3, 4]
    assert [m.value() for m in read_all(broker.bootstrap, topic, 5)] == [
        f"s{i}".encode() for i in range(5)
    ]


def test_v2_produce_json_and_binary(broker: BrokerProcess, proxy: Proxy) -> None:
    topic = create_topic(broker.bootstrap, partitions=2)
    answer = proxy.post(
        f"/topics/{topic}",
        {
            "records": [
                {"key": "k", "value": {"a": [1, 2]}},
                {"value": 5, "partition": 1},
            ]
        },
        content_type="application/vnd.kafka.json.v2+json",
    )
    assert answer.status == 200, answer.body
    assert answer.headers["content-type"] == "application/vnd.kafka.v2+json"
    body = answer.json()
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    assert [(o["partition"], o["error_code"]) for o in body["offsets"]][1] == (1, None)
    binary = proxy.post(
        f"/topics/{topic}",
        {
            "records": [
                {"value": base64.b64encode(b"\x01\x02").decode(), "partition": 0},
            ]
        },
        content_type="application/vnd.kafka.binary.v2+json",
    )
    assert binary.status == 200, binary.body
    values = {m.value() for m in read_all(broker.bootstrap, topic, 3, partitions=2)}
    assert values == {b'{"a":[1,2]}', b"5", b"\x01\x02"}
