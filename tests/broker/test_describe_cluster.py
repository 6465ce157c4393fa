"""DescribeCluster (key 60, v0–1): the cluster id, the controller and the live brokers.

What a request gets back is checked in-process (``InProcessBroker``); the real clients run
against the broker process: kafka-python sends DescribeCluster itself (the broker's request
metrics show it), confluent-kafka's ``describe_cluster()`` must agree with it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.describe_cluster.v0 import request as describe_cluster_v0
from kio.schema.describe_cluster.v1 import request as describe_cluster_v1
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from sluice.broker.protocol.authorized_operations import CLUSTER_OPERATIONS, NOT_REQUESTED
from tests.broker.inprocess import InProcessBroker
from tests.conftest import BrokerProcess
from tests.platform.scrape import scrape

READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka.admin import KafkaAdminClient

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning"),
]

TIMEOUT = 15.0


@pytest.fixture
def racked_broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    """Node 7 on rack ``rack-a``, advertising another address than it listens on."""
    properties = {
        "node.id": "7",
        "broker.rack": "rack-a",
        "listeners": "PLAINTEXT://127.0.0.1:19092",
        "advertised.listeners": "PLAINTEXT://broker-7.example:29092",
    }
    with InProcessBroker(tmp_path / "data", **properties) as broker:
        yield broker


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("ask", [False, True])
def test_one_node_describes_itself(racked_broker: InProcessBroker, version: int, ask: bool) -> None:
    schema = describe_cluster_v0 if version == 0 else describe_cluster_v1
    answer = racked_broker.request(
        schema.DescribeClusterRequest(include_cluster_authorized_operations=ask)
    )
    assert answer.error_code == ErrorCode.none, answer
    assert answer.error_message is None
    assert answer.cluster_id == racked_broker.broker.cluster_id and len(answer.cluster_id) == 22
    assert answer.controller_id == 7, "on one node the node is its own controller"
    brokers = [(b.broker_id, b.host, b.port, b.rack) for b in answer.brokers]
    assert brokers == [(7, "broker-7.example", 29092, "rack-a")], (
        "the advertised listener and the rack"
    )
    expected = CLUSTER_OPERATIONS if ask else NOT_REQUESTED
    assert answer.cluster_authorized_operations == expected
    if version == 1:
        assert answer.endpoint_type == 1, "brokers were described"


@pytest.mark.parametrize(
    ("endpoint_type", "code", "message"),
    [
        (
            2,
            ErrorCode.mismatched_endpoint_type,
            "The request was sent to an endpoint of type BROKER, "
            "but we wanted an endpoint of type CONTROLLER",
        ),
        (0, ErrorCode.unsupported_endpoint_type, "Unsupported endpoint type 0"),
        (3, ErrorCode.unsupported_endpoint_type, "Unsupported endpoint type 3"),
    ],
)
def test_endpoint_types_other_than_brokers_are_refused_as_kafka_refuses_them(
    in_process_broker: InProcessBroker, endpoint_type: int, code: ErrorCode, message: str
) -> None:
    answer = in_process_broker.request(
        describe_cluster_v1.DescribeClusterRequest(
            include_cluster_authorized_operations=True, endpoint_type=i8(endpoint_type)
        )
    )
    assert (answer.error_code, answer.error_message) == (code, message)
    # the refusal carries nothing of the cluster, and the schema's default endpoint type
    assert (answer.cluster_id, answer.brokers, answer.controller_id) == ("", (), -1), answer
    assert answer.endpoint_type == 1
    assert answer.cluster_authorized_operations == NOT_REQUESTED


def test_kafka_python_and_confluent_kafka_describe_the_same_node(
    metered: tuple[BrokerProcess, int],
) -> None:
    broker, metrics_port = metered
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15_000)
    try:
        described = client.describe_cluster()
    finally:
        client.close()
    assert (
        scrape(metrics_port).get(
            "kafka_network_request_metrics_requests_total", request="DescribeCluster"
        )
        >= 1
    ), "kafka-python should have sent DescribeCluster (not its Metadata fallback)"
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    assert [(b["broker_id"], b["host"], b["port"], b["rack"]) for b in described["brokers"]] == [
        (0, "127.0.0.1", port, None)
    ], described
    assert described["controller_id"] == 0, described

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    assert cluster.cluster_id == described["cluster_id"]
    assert cluster.controller is not None and cluster.controller.id == 0
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, "127.0.0.1", port)]
