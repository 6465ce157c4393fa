"""What a cluster refuses, with the error Kafka gives: a ZooKeeper that does not answer, a broker
id a live broker holds, a data directory of another cluster, a replication factor above the
live brokers, replicas on brokers that do not exist."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster.brokers import BrokerCluster
from tests.compat.test_kafka_python import READ_TEXT

with warnings.catch_warnings():  # kafka-python loads its schemas with importlib's read_text
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.errors import InvalidReplicationAssignmentError

pytestmark = pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning")

SLUICE = str(Path(sys.executable).with_name("sluice"))


def start_broker(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A broker on ``data`` that is expected to refuse to start: its exit status and output."""
    return subprocess.run(
        [SLUICE, "broker", "start", "--listen", "127.0.0.1:0", "--data-dir", str(data), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_unreachable_zookeeper_is_reported_not_waited_for(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("zookeeper.connection.timeout.ms=1500\n")
    began = time.monotonic()
    done = start_broker(
        tmp_path / "d", "--config", str(props), "--broker-id", "1", "--zookeeper", "127.0.0.1:1/x"
    )
    assert done.returncode == 2, done.stderr
    assert "Timed out waiting for connection to ZooKeeper at 127.0.0.1:1/x" in done.stderr
    assert time.monotonic() - began < 30


def test_a_data_directory_of_another_cluster_is_refused(tmp_path: Path, zk_connect: str) -> None:
    with BrokerCluster(tmp_path / "a", zk_connect, size=1) as first:
        first.start_all()
        data = first.broker(1).data_dir
        first.stop(1)
    meta = (data / "meta.properties").read_text()
    # another cluster (another chroot), whose id its first broker chose
    with BrokerCluster(tmp_path / "b", f"{zk_connect}-other", size=1) as other:
        other.start_all()
        refused = start_broker(data, "--broker-id", "1", "--zookeeper", f"{zk_connect}-other")
    assert refused.returncode == 2, refused.stderr
    assert "doesn't match stored clusterId" in refused.stderr, refused.stderr
    assert (data / "meta.properties").read_text() == meta  # nothing changed


def test_replication_beyond_the_live_brokers_is_refused(broker_cluster: BrokerCluster) -> None:
    admin = AdminClient({"bootstrap.servers": broker_cluster.bootstrap})
    too_many = admin.create_topics([NewTopic("too-many", 1, 4)], request_timeout=30)
    with pytest.raises(KafkaException) as refused:
        too_many["too-many"].result(timeout=40)
    assert refused.value.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR
    assert "larger than available brokers: 3" in refused.value.args[0].str()
    # confluent-kafka 2.16 cannot send explicit assignments ("Specifying a default partition
    # count and a replica assignment are mutually exclusive", whatever is given): kafka-python
    kafka = KafkaAdminClient(bootstrap_servers=broker_cluster.bootstrap.split(","))
    try:
        with pytest.raises(InvalidReplicationAssignmentError):
            kafka.create_topics(
                [KpNewTopic("nowhere", -1, -1, replica_assignments={0: [1, 7]})], timeout_ms=30_000
            )
    finally:
        kafka.close()
