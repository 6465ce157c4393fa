"""The replication side of the broker's metrics and configs, in process: Kafka's names for the
replication and reassignment byte counters and the throttles' gauges, and the throttle rates
put in force by a dynamic broker config."""

from __future__ import annotations

from pathlib import Path

from sluice.broker.metrics import BrokerCollector
from sluice.broker.replication.quota import UNLIMITED
from tests.broker.inprocess import InProcessBroker


def _samples(collector: BrokerCollector) -> dict[tuple[str, tuple[str, ...]], float]:
    return {
        (s.name, tuple(s.labels.values())): s.value
        for family in collector.collect()
        for s in family.samples
    }


def test_replication_bytes_and_throttles_under_kafkas_names(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path) as node:
        broker = node.broker
        topic = broker.topics.create("moving", 2, {})
        first, second = topic.partitions[0], topic.partitions[1]
        first.replication_bytes_in, first.replication_bytes_out = 10, 20
        second.replication_bytes_in, second.reassignment_bytes_in = 5, 5
        first.reassignment_bytes_out = 7
        samples = _samples(BrokerCollector(broker))
        prefix = "kafka_server_broker_topic_metrics_"
        assert samples[(f"{prefix}replication_bytes_in_total", ("moving",))] == 15
        assert samples[(f"{prefix}replication_bytes_out_total", ("moving",))] == 20
        assert samples[(f"{prefix}reassignment_bytes_in_total", ("moving",))] == 5
        assert samples[(f"{prefix}reassignment_bytes_out_total", ("moving",))] == 7
        assert samples[(f"{prefix}bytes_out_total", ("moving",))] == 0
        assert samples[("kafka_server_leader_replication_throttled_rate", ())] == float(UNLIMITED)
        assert samples[("kafka_server_follower_replication_byte_rate", ())] == 0


def test_dynamic_rates_reach_the_quotas(tmp_path: Path) -> None:
    with InProcessBroker(tmp_path, **{"replication.quota.window.num": "4"}) as node:
        broker = node.broker
        throttles = broker.replication_throttles
        assert not throttles.leader.limited and not throttles.follower.limited
        assert throttles.leader.samples == 4
        entity = str(broker.node_id)
        broker.apply_config(
            broker.dynamic_configs.replace(
                entity,
                {
                    "leader.replication.throttled.rate": "1000",
                    "follower.replication.throttled.rate": "2000",
                },
            )
        )
        assert (throttles.leader.bound, throttles.follower.bound) == (1000, 2000)
        broker.apply_config(broker.dynamic_configs.replace(entity, {}))
        assert not throttles.leader.limited and not throttles.follower.limited
