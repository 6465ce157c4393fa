"""API v2's consumer instances over raw HTTP: create, subscribe or assign, read records in
each plain format, commit and read offsets, seek, delete, and expiry of idle instances."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.rest_proxy.fixtures import Proxy

V2 = "application/vnd.kafka.v2+json"


def _produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value, json.dumps(f"k{i}").encode(), partition=partition)
    assert producer.flush(CLIENT_TIMEOUT) == 0


def _read(proxy: Proxy, base: str, fmt: str, count: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(found) < count:
        assert time.monotonic() < deadline, f"only {len(found)} of {count} records came"
        answer = proxy.get(
            f"{base}/records?timeout=1000", accept=f"application/vnd.kafka.{fmt}.v2+json"
        )
        assert answer.status == 200, answer.body
        assert answer.headers["content-type"] == f"application/vnd.kafka.{fmt}.v2+json"
        found.extend(answer.json())
    return found


def _create(proxy: Proxy, group: str, **settings: Any) -> tuple[str, str]:
    answer = proxy.post(f"/consumers/{group}", settings, content_type=V2)
    assert answer.status == 200, answer.body
    body = answer.json()
    path = body["base_uri"].removeprefix(proxy.url)
    assert path == f"/consumers/{group}/instances/{body['instance_id']}"
    return body["instance_id"], path


def test_subscribe_read_commit_and_delete(broker: BrokerProcess, proxy: Proxy) -> None:
    topic = create_topic(broker.bootstrap)
    _produce(broker.bootstrap, topic, [json.dumps({"n": i}).encode() for i in range(6)])
    group = f"g-{uuid.uuid4().hex[:8]}"
    name, base = _create(
        proxy,
        group,
        name="reader",
        format="json",
        **{"auto.offset.reset": "earliest", "auto.commit.enable": "false"},
    )
    assert name == "reader"
    again = proxy.post(f"/consumers/{group}", {"name": "reader"}, content_type=V2)
    assert again.status == 409 and again.json()["error_code"] == 40902

    assert proxy.post(f"{base}/subscription", {"topics": [topic]}, content_type=V2).status == 204
    assert proxy.get(f"{base}/subscription").json() == {"topics": [topic]}
    records = _read(proxy, base, "json", 6)
    assert [r["value"] for r in records] == [{"n": i} for i in range(6)]
    assert [r["key"] for r in records] == [f"k{i}" for i in range(6)]
    assert [r["offset"] for r in records] == list(range(6))
    assert all(r["topic"] == topic and r["partition"] == 0 for r in records)

    mismatch = proxy.get(f"{base}/records", accept="application/vnd.kafka.binary.v2+json")
    assert mismatch.status == 406 and mismatch.json()["error_code"] == 40601

    # commit "offset 3 processed": the group's committed offset is 4, as Confluent's
    commit = proxy.post(
        f"{base}/offsets",
        {"offsets": [{"topic": topic, "partition": 0, "offset": 3}]},
        content_type=V2,
    )
    assert commit.status == 200, commit.body
    offsets = proxy.request(
        "GET",
        f"{base}/offsets",
        {"partitions": [{"topic": topic, "partition": 0}]},
        content_type=V2,
    ).json()
    assert offsets["offsets"][0]["offset"] == 4
    checker = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        (committed,) = checker.committed([TopicPartition(topic, 0)], timeout=CLIENT_TIMEOUT)
        assert committed.offset == 4
    finally:
        checker.close()
    # and with no body: everything read so far
    assert proxy.post(f"{base}/offsets", content_type=V2).status == 200
    offsets = proxy.request(
        "GET",
        f"{base}/offsets",
        {"partitions": [{"topic": topic, "partition": 0}]},
        content_type=V2,
    ).json()
    assert offsets["offsets"][0]["offset"] == 6

    assert proxy.request("DELETE", f"{base}/subscription").status == 204
    assert proxy.request("DELETE", base).status == 204
    gone = proxy.get(f"{base}/records", accept="application/vnd.kafka.json.v2+json")
    assert gone.status == 404 and gone.json()["error_code"] == 40403


def test_assign_seek_and_binary_records(broker: BrokerProcess, proxy: Proxy) -> None:
    topic = create_topic(broker.bootstrap, partitions=2)
    _produce(broker.bootstrap, topic, [b"\x00a", b"\x01b", b"\x02c"], partition=1)
    _, base = _create(proxy, f"g-{uuid.uuid4().hex[:8]}", format="binary")
    partitions = {"partitions": [{"topic": topic, "partition": 1}]}
    assert proxy.post(f"{base}/assignments", partitions, content_type=V2).status == 204
    assert proxy.get(f"{base}/assignments").json() == {
        "partitions": [{"topic": topic, "partition": 1}]
    }
    subscribing = proxy.post(f"{base}/subscription", {"topics": [topic]}, content_type=V2)
    assert subscribing.status == 409 and subscribing.json()["error_code"] == 40901

    seek = proxy.post(
        f"{base}/positions",
        {"offsets": [{"topic": topic, "partition": 1, "offset": 1}]},
        content_type=V2,
    )
    assert seek.status == 204, seek.body
    records = _read(proxy, base, "binary", 2)
    assert [base64.b64decode(r["value"]) for r in records] == [b"\x01b", b"\x02c"]
    assert base64.b64decode(records[0]["key"]) == b'"k1"'
    assert proxy.post(f"{base}/positions/beginning", partitions, content_type=V2).status == 204
    again = _read(proxy, base, "binary", 3)
    assert [r["offset"] for r in again] == [0, 1, 2]
    assert proxy.post(f"{base}/positions/end", partitions, content_type=V2).status == 204
    empty = proxy.get(f"{base}/records?timeout=200", accept="application/vnd.kafka.binary.v2+json")
    assert empty.json() == []
    assert proxy.request("DELETE", base).status == 204


def test_an_idle_instance_is_closed(
    broker: BrokerProcess, proxy_factory: Callable[..., Proxy]
) -> None:
    proxy = proxy_factory(broker.bootstrap, "--consumer-instance-timeout-ms", "1000")
    _, base = _create(proxy, f"g-{uuid.uuid4().hex[:8]}")
    deadline = time.monotonic() + 30
    while proxy.get(f"{base}/subscription").status == 200:
        assert time.monotonic() < deadline, "the idle instance was never closed"
        time.sleep(1.5)  # a request marks it used: ask less often than it expires
    assert proxy.get(f"{base}/subscription").json()["error_code"] == 40403
