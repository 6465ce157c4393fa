"""The broker's ``/metrics`` (``sluice broker start --metrics-listen``): known traffic, then a
scrape parsed as Prometheus parses it."""

from __future__ import annotations

import socket
import subprocess
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.conftest import read_partition
from tests.conftest import SLUICE, BrokerProcess, create_topic, free_port
from tests.platform.scrape import scrape, scrape_until

TOPIC_METRICS = "kafka_server_broker_topic_metrics_"


def test_counts_sizes_latencies_and_group_lag(metered: tuple[BrokerProcess, int]) -> None:
    broker, port = metered
    topic = create_topic(broker.bootstrap, partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    counts = {0: 120, 1: 80}
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(topic, b"v" * 100, f"k{i}".encode(), partition=partition)
    assert producer.flush(15) == 0
    read = read_partition(broker.bootstrap, topic, 0)  # fetches every record of partition 0
    assert len(read) == counts[0]
    committer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "metrics-group"})
    committer.commit(
        offsets=[TopicPartition(topic, 0, 50), TopicPartition(topic, 1, 30)], asynchronous=False
    )
    committer.close()

    m = scrape(port)
    bytes_in = m.get(TOPIC_METRICS + "bytes_in_total", topic=topic)
    assert bytes_in >= 200 * 100, f"bytes in: {bytes_in}"
    assert m.get(TOPIC_METRICS + "messages_in_total", topic=topic) == 200
    assert m.get(TOPIC_METRICS + "failed_produce_requests_total", topic=topic) == 0
    assert m.get(TOPIC_METRICS + "total_produce_requests_total", topic=topic) >= 2
    # batches are stored as produced: the log holds exactly the bytes that came in
    sizes = {p: m.get("kafka_log_log_size", topic=topic, partition=str(p)) for p in counts}
    assert all(size > 0 for size in sizes.values()), sizes
    assert sum(sizes.values()) == bytes_in
    # what was fetched is partition 0's log (whole batches), at least once
    assert m.get(TOPIC_METRICS + "bytes_out_total", topic=topic) >= sizes[0]
    for partition, count in counts.items():
        where = {"topic": topic, "partition": str(partition)}
        assert m.get("kafka_log_log_end_offset", **where) == count
        assert m.get("kafka_log_log_start_offset", **where) == 0
        assert m.get("kafka_log_num_log_segments", **where) == 1
    # requests: a counter and a histogram per request name, consistent with each other
    produces = m.get("kafka_network_request_metrics_requests_total", request="Produce")
    assert produces >= 1
    histogram = "kafka_network_request_metrics_total_time_ms"
    assert m.get(histogram + "_count", request="Produce") == produces
    assert m.get(histogram + "_bucket", request="Produce", le="+Inf") == produces
    assert m.get(histogram + "_sum", request="Produce") > 0
    assert m.get("kafka_network_request_metrics_requests_total", request="FetchConsumer") >= 1
    assert m.get("kafka_network_request_metrics_requests_total", request="OffsetCommit") >= 1
    assert m.get("kafka_network_request_metrics_requests_total", request="Metadata") >= 1
    # single node
    assert m.get("kafka_server_replica_manager_under_replicated_partitions") == 0
    assert m.get("kafka_server_replica_manager_partition_count") >= 2
    # lag: the high watermark minus the committed offset
    lag = {
        p: m.get(
            "kafka_consumergroup_lag", consumergroup="metrics-group", topic=topic, partition=str(p)
        )
        for p in counts
    }
    assert lag == {0: 70, 1: 50}
    assert (
        m.get(
            "kafka_consumergroup_current_offset",
            consumergroup="metrics-group",
            topic=topic,
            partition="0",
        )
        == 50
    )

    # more records: the counters and the lag follow
    for _ in range(10):
        producer.produce(topic, b"w" * 10, partition=1)
    assert producer.flush(15) == 0
    after = scrape_until(
        port,
        lambda s: s.get(TOPIC_METRICS + "messages_in_total", topic=topic) == 210,
        what="210 messages in",
    )
    assert (
        after.get(
            "kafka_consumergroup_lag", consumergroup="metrics-group", topic=topic, partition="1"
        )
        == 60
    )
    assert after.get(TOPIC_METRICS + "bytes_in_total", topic=topic) > bytes_in


def test_refused_appends_are_counted(metered: tuple[BrokerProcess, int]) -> None:
    broker, port = metered
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    futures = admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])
    futures[topic].result(15)
    failures: list[object] = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    producer.produce(topic, b"no key", on_delivery=lambda error, _: failures.append(error))
    producer.flush(15)
    producer.produce(topic, b"keyed", b"k", on_delivery=lambda error, _: failures.append(error))
    producer.flush(15)  # two batches, in two requests: one refused, one accepted
    assert len(failures) == 2 and failures[0] is not None and failures[1] is None, failures
    m = scrape_until(
        port,
        lambda s: s.get(TOPIC_METRICS + "total_produce_requests_total", topic=topic) >= 2,
        what="two produce requests",
    )
    assert m.get(TOPIC_METRICS + "failed_produce_requests_total", topic=topic) == 1
    assert m.get(TOPIC_METRICS + "messages_in_total", topic=topic) == 1


def _start(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SLUICE), "broker", "start", "--data-dir", str(tmp_path / "data"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_malformed_address_is_a_usage_error(tmp_path: Path) -> None:
    done = _start("--metrics-listen", "nowhere", tmp_path=tmp_path)
    assert done.returncode == 2, done
    assert "--metrics-listen" in done.stderr and "HOST:PORT" in done.stderr, done.stderr


def test_a_port_in_use_is_a_usage_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        listen = f"127.0.0.1:{free_port()}"
        done = _start(
            "--listen", listen, "--metrics-listen", f"127.0.0.1:{port}", tmp_path=tmp_path
        )
    assert done.returncode == 2, done
    assert "--metrics-listen" in done.stderr and "in use" in done.stderr, done.stderr
    assert not (tmp_path / "data").exists(), "nothing may be written before the metrics listen"
