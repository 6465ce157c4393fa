"""Kafka's ``RackAwareReplicaSelector`` rules (``RackAwareReplicaSelectorTest``) and the
``replica.selector.class`` key."""

from __future__ import annotations

import pytest

from sluice.broker.config import BrokerConfig
from sluice.broker.replication.replica_selector import (
    RACK_AWARE_SELECTOR,
    ReplicaView,
    preferred_read_replica,
    select_rack_aware,
)
from sluice.errors import ConfigError

LEADER = ReplicaView(0, "rack-a", log_end_offset=10)


def test_same_rack_replica_is_chosen_when_the_leader_is_elsewhere() -> None:
    followers = [ReplicaView(1, "rack-b", 10), ReplicaView(2, "rack-c", 10)]
    assert select_rack_aware("rack-b", LEADER, followers).broker_id == 1
    assert select_rack_aware("rack-c", LEADER, followers).broker_id == 2


def test_the_leader_wins_in_its_own_rack() -> None:
    followers = [ReplicaView(1, "rack-a", 10), ReplicaView(2, "rack-b", 10)]
    assert select_rack_aware("rack-a", LEADER, [LEADER, *followers]) == LEADER


@pytest.mark.parametrize("rack", ["", "rack-z"])
def test_no_rack_or_an_unknown_rack_reads_from_the_leader(rack: str) -> None:
    followers = [ReplicaView(1, "rack-b", 10)]
    assert select_rack_aware(rack, LEADER, followers) == LEADER


def test_the_most_caught_up_replica_of_the_rack_is_chosen() -> None:
    behind = ReplicaView(1, "rack-b", 8)
    ahead_but_stale = ReplicaView(2, "rack-b", 10, time_since_caught_up_ms=500)
    ahead_and_fresh = ReplicaView(3, "rack-b", 10, time_since_caught_up_ms=20)
    chosen = select_rack_aware("rack-b", LEADER, [behind, ahead_but_stale, ahead_and_fresh])
    assert chosen.broker_id == 3, f"expected the freshest of the largest offset, got {chosen}"
    tie = [ReplicaView(4, "rack-b", 10), ReplicaView(5, "rack-b", 10)]
    assert select_rack_aware("rack-b", LEADER, tie).broker_id == 5  # then the largest id


def test_a_replica_without_a_rack_never_matches() -> None:
    assert select_rack_aware("rack-b", LEADER, [ReplicaView(1, None, 10)]) == LEADER


def test_preferred_read_replica_is_none_for_the_leader_or_without_selector() -> None:
    followers = [ReplicaView(1, "rack-b", 10)]
    assert preferred_read_replica(RACK_AWARE_SELECTOR, "rack-b", LEADER, followers) == 1
    assert preferred_read_replica(RACK_AWARE_SELECTOR, "rack-a", LEADER, followers) is None
    assert preferred_read_replica(None, "rack-b", LEADER, followers) is None
    assert preferred_read_replica("", "rack-b", LEADER, followers) is None


@pytest.mark.parametrize("value", ["", RACK_AWARE_SELECTOR])
def test_the_selector_key_accepts_kafkas_selector_or_nothing(value: str) -> None:
    config = BrokerConfig.from_properties({"replica.selector.class": value})
    assert config["replica.selector.class"] == value


def test_another_selector_class_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"replica\.selector\.class") as caught:
        BrokerConfig.from_properties({"replica.selector.class": "com.example.MySelector"})
    assert RACK_AWARE_SELECTOR in str(caught.value), str(caught.value)
