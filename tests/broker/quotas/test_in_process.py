"""Quotas through ``Server.handle`` in process: the throttle time goes in the response's
``throttle_time_ms`` and on the connection (to be muted), the broker's metrics count it, and a
consumer's Fetch ``max_bytes`` is capped to its quota's windows."""

from __future__ import annotations

from pathlib import Path

from kio.schema.metadata.v9.request import MetadataRequest

from sluice.broker.metrics import BrokerCollector
from sluice.broker.quotas.config import Entity
from sluice.broker.quotas.requests import fetch_max_bytes
from tests.broker.inprocess import InProcessBroker

CLIENT_ID = "sluice-tests"  # what InProcessBroker.request sends


def metadata() -> MetadataRequest:
    return MetadataRequest(
        topics=(),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )


def test_request_percentage_throttles_the_response_and_the_connection(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path) as node:
        broker = node.broker
        assert not broker.client_quotas.enabled
        assert node.request(metadata()).throttle_time.total_seconds() == 0
        assert node.client.throttle_ms == 0
        broker.client_quotas.configure({Entity(None, CLIENT_ID): {"request_percentage": 1e-6}})
        throttled = node.request(metadata()).throttle_time.total_seconds() * 1000
        assert throttled > 0, "a request over its request_percentage was not throttled"
        assert node.client.throttle_ms == int(throttled)
        samples = {
            s.name: s.value for family in BrokerCollector(broker).collect() for s in family.samples
        }
        assert samples["kafka_server_request_throttled_responses_total"] == 1
        assert samples["kafka_server_request_throttle_time_seconds_total"] > 0
        assert samples["kafka_server_produce_throttled_responses_total"] == 0


def test_a_consumers_fetch_max_bytes_is_capped_to_its_quota(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path, **{"quota.window.num": "5"}) as node:
        quotas = node.broker.client_quotas
        quotas.configure({Entity("bob", None): {"consumer_byte_rate": 1000.0}})
        assert fetch_max_bytes(quotas, "User:bob", "any", 50_000_000) == 4000  # 1000 B/s * 4 s
        assert fetch_max_bytes(quotas, "User:bob", "any", 100) == 100
        assert fetch_max_bytes(quotas, "User:eve", "any", 50_000_000) == 50_000_000
