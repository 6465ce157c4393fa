"""API v3's cluster, topic, partition, config, consumer-group and lag endpoints against a real
broker, checked against what confluent-kafka's AdminClient and consumers see."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType  # type: ignore[attr-defined]

from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.rest_proxy.fixtures import Proxy, cluster_id


def _admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def test_the_cluster_is_the_brokers_own(broker: BrokerProcess, proxy: Proxy) -> None:
    admin = _admin(broker)
    described = admin.describe_cluster(request_timeout=CLIENT_TIMEOUT).result()
    listed = proxy.get("/v3/clusters")
    assert listed.status == 200
    body = listed.json()
    assert body["kind"] == "KafkaClusterList"
    assert [c["cluster_id"] for c in body["data"]] == [described.cluster_id]
    cluster = proxy.get(f"/v3/clusters/{described.cluster_id}").json()
    assert cluster["kind"] == "KafkaCluster"
    assert cluster["metadata"] == {
        "self": f"{proxy.url}/v3/clusters/{described.cluster_id}",
        "resource_name": f"crn:///kafka={described.cluster_id}",
    }
    assert cluster["topics"] == {
        "related": f"{proxy.url}/v3/clusters/{described.cluster_id}/topics"
    }
    assert cluster["controller"]["related"].endswith(f"/brokers/{described.controller.id}")
    wrong = proxy.get("/v3/clusters/not-this-one/topics")
    assert wrong.status == 404 and wrong.json()["error_code"] == 404


def test_topics_created_listed_described_and_deleted(broker: BrokerProcess, proxy: Proxy) -> None:
    cid = cluster_id(proxy)
    created = proxy.post(
        f"/v3/clusters/{cid}/topics",
        {
            "topic_name": "orders",
            "partitions_count": 3,
            "replication_factor": 1,
            "configs": [
                {"name": "cleanup.policy", "value": "compact"},
                {"name": "retention.ms", "value": "60000"},
            ],
        },
    )
    assert created.status == 201, created.body
    body = created.json()
    assert body["kind"] == "KafkaTopic" and body["topic_name"] == "orders"
    assert body["partitions_count"] == 3 and body["replication_factor"] == 1
    assert created.headers["location"] == body["metadata"]["self"]

    admin = _admin(broker)
    metadata = admin.list_topics(timeout=CLIENT_TIMEOUT)
    assert len(metadata.topics["orders"].partitions) == 3
    resource = ConfigResource(ResourceType.TOPIC, "orders")
    configs = admin.describe_configs([resource])[resource].result(timeout=CLIENT_TIMEOUT)
    assert configs["cleanup.policy"].value == "compact"

    again = proxy.post(
        f"/v3/clusters/{cid}/topics", {"topic_name": "orders", "partitions_count": 1}
    )
    assert again.status == 400 and again.json()["error_code"] == 40002, again.body

    names = [t["topic_name"] for t in proxy.get(f"/v3/clusters/{cid}/topics").json()["data"]]
    assert "orders" in names
    partitions = proxy.get(f"/v3/clusters/{cid}/topics/orders/partitions").json()
    assert partitions["kind"] == "KafkaPartitionList"
    assert [p["partition_id"] for p in partitions["data"]] == [0, 1, 2]
    one = proxy.get(f"/v3/clusters/{cid}/topics/orders/partitions/2").json()
    assert one["kind"] == "KafkaPartition" and one["partition_id"] == 2
    assert one["metadata"]["resource_name"] == f"crn:///kafka={cid}/topic=orders/partition=2"
    missing = proxy.get(f"/v3/clusters/{cid}/topics/orders/partitions/7")
    assert missing.status == 404 and missing.json()["error_code"] == 40402

    deleted = proxy.request("DELETE", f"/v3/clusters/{cid}/topics/orders")
    assert deleted.status == 204, deleted.body
    deadline = time.monotonic() + CLIENT_TIMEOUT
    while "orders" in admin.list_topics(timeout=CLIENT_TIMEOUT).topics:
        assert time.monotonic() < deadline, "the topic is still there"
        time.sleep(0.1)
    gone = proxy.get(f"/v3/clusters/{cid}/topics/orders")
    assert gone.status == 404 and gone.json()["error_code"] == 40401


def test_topic_configs_read_set_reset_and_altered_in_batch(
    broker: BrokerProcess, proxy: Proxy
) -> None:
    cid = cluster_id(proxy)
    topic = create_topic(broker.bootstrap)
    base = f"/v3/clusters/{cid}/topics/{topic}/configs"
    listed = proxy.get(base).json()
    assert listed["kind"] == "KafkaTopicConfigList"
    names = {c["name"] for c in listed["data"]}
    assert {"retention.ms", "cleanup.policy"} <= names

    assert proxy.request("PUT", f"{base}/retention.ms", {"value": "123456"}).status == 204
    one = proxy.get(f"{base}/retention.ms").json()
    assert one["kind"] == "KafkaTopicConfig" and one["value"] == "123456"
    assert one["is_default"] is False and one["source"] == "DYNAMIC_TOPIC_CONFIG"
    resource = ConfigResource(ResourceType.TOPIC, topic)
    admin = _admin(broker)
    seen = admin.describe_configs([resource])[resource].result(timeout=CLIENT_TIMEOUT)
    assert seen["retention.ms"].value == "123456"

    assert proxy.request("DELETE", f"{base}/retention.ms").status == 204
    assert proxy.get(f"{base}/retention.ms").json()["is_default"] is True

    altered = proxy.post(
        f"{base}:alter",
        {
            "data": [
                {"name": "retention.ms", "value": "1000"},
                {"name": "cleanup.policy", "value": "compact", "operation": "SET"},
            ]
        },
    )
    assert altered.status == 204, altered.body
    after = {c["name"]: c["value"] for c in proxy.get(base).json()["data"]}
    assert after["retention.ms"] == "1000" and after["cleanup.policy"] == "compact"
    unknown = proxy.get(f"/v3/clusters/{cid}/topics/nope-{uuid.uuid4().hex}/configs")
    assert unknown.status == 404 and unknown.json()["error_code"] == 40401


def test_consumer_groups_and_their_lags(broker: BrokerProcess, proxy: Proxy) -> None:
    cid = cluster_id(proxy)
    topic = create_topic(broker.bootstrap, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce(topic, f"v{i}".encode(), partition=i % 2)
    assert producer.flush(CLIENT_TIMEOUT) == 0
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "client.id": "lagger",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        # commit 2 of partition 0's 5 records and 5 of partition 1's: lag 3 and 0
        consumer.commit(
            offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 5)], asynchronous=False
        )
        groups = proxy.get(f"/v3/clusters/{cid}/consumer-groups").json()
        assert groups["kind"] == "KafkaConsumerGroupList"
        assert group in [g["consumer_group_id"] for g in groups["data"]]
        one = proxy.get(f"/v3/clusters/{cid}/consumer-groups/{group}").json()
        assert one["kind"] == "KafkaConsumerGroup" and one["consumer_group_id"] == group
        assert one["lag_summary"]["related"].endswith(f"/consumer-groups/{group}/lag-summary")

        lags = proxy.get(f"/v3/clusters/{cid}/consumer-groups/{group}/lags").json()
        assert lags["kind"] == "KafkaConsumerLagList"
        by_partition = {lag["partition_id"]: lag for lag in lags["data"]}
        assert by_partition[0]["current_offset"] == 2 and by_partition[0]["log_end_offset"] == 5
        assert by_partition[0]["lag"] == 3 and by_partition[1]["lag"] == 0
        summary = proxy.get(f"/v3/clusters/{cid}/consumer-groups/{group}/lag-summary").json()
        assert summary["kind"] == "KafkaConsumerGroupLagSummary"
        assert summary["total_lag"] == 3 and summary["max_lag"] == 3
        assert summary["max_lag_topic_name"] == topic and summary["max_lag_partition_id"] == 0
        one_lag = proxy.get(f"/v3/clusters/{cid}/consumer-groups/{group}/lags/{topic}/partitions/0")
        assert one_lag.json()["lag"] == 3
        consumers = proxy.get(f"/v3/clusters/{cid}/consumer-groups/{group}/consumers").json()
        assert consumers["kind"] == "KafkaConsumerList"
    finally:
        consumer.close()
    nobody = proxy.get(f"/v3/clusters/{cid}/consumer-groups/nobody-{uuid.uuid4().hex}")
    assert nobody.status == 404, nobody.body
