"""The JSON codecs of Kafka's ZooKeeper layout: Kafka's own bytes in, the same bytes out.

The golden strings are what Kafka 3.x clusters show in ZooKeeper (``zookeeper-shell get``).
"""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.broker.cluster import znodes
from sluice.broker.cluster.model import (
    BrokerRegistration,
    Endpoint,
    PartitionState,
    ProducerIdBlock,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
)
from sluice.broker.log.partition_metadata import parse_topic_id

KAFKA_BROKER = (
    b'{"features":{},"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT",'
    b'"EXTERNAL":"PLAINTEXT"},"endpoints":["INTERNAL://kafka3:29092","EXTERNAL://kafka3:9092"],'
    b'"jmx_port":-1,"port":29092,"host":"kafka3","version":5,"timestamp":"1731163180710"}'
)
KAFKA_TOPIC = (
    b'{"removing_replicas":{},"partitions":{"0":[0]},"topic_id":"ZOLr9CLNQjSW70hyIHx6BQ",'
    b'"adding_replicas":{},"version":3}'
)
KAFKA_STATE = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}'
KAFKA_CONTROLLER = (
    b'{"version":2,"brokerid":2,"timestamp":"1688524276281","kraftControllerEpoch":-1}'
)
KAFKA_CLUSTER_ID = b'{"version":"1","id":"Sfr7YvlkRHSHrmSrwq9mug"}'


def test_a_kafka_broker_registration_reads_and_writes_back_byte_for_byte() -> None:
    reg = znodes.decode_broker(3, KAFKA_BROKER)
    assert reg == BrokerRegistration(
        broker_id=3,
        endpoints=(Endpoint("INTERNAL", "kafka3", 29092), Endpoint("EXTERNAL", "kafka3", 9092)),
        security_protocols={"INTERNAL": "PLAINTEXT", "EXTERNAL": "PLAINTEXT"},
        rack=None,
        jmx_port=-1,
        timestamp_ms=1731163180710,
    )
    assert znodes.encode_broker(reg) == KAFKA_BROKER


def test_broker_registration_with_rack_features_and_no_plaintext_listener() -> None:
    reg = BrokerRegistration(
        broker_id=1,
        endpoints=(Endpoint("SSL", "::1", 9093),),
        security_protocols={"SSL": "SSL"},
        rack="r1",
        timestamp_ms=7,
        features={"metadata.version": (1, 14)},
    )
    doc = json.loads(znodes.encode_broker(reg))
    assert doc["rack"] == "r1"
    assert doc["host"] is None and doc["port"] == -1  # Kafka's "no PLAINTEXT endpoint"
    assert doc["endpoints"] == ["SSL://[::1]:9093"]
    assert doc["features"] == {"metadata.version": {"min_version": 1, "max_version": 14}}
    assert znodes.decode_broker(1, znodes.encode_broker(reg)) == reg


def test_older_broker_registrations_still_read() -> None:
    v1 = b'{"version":1,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1"}'
    assert znodes.decode_broker(0, v1).endpoints == (Endpoint("PLAINTEXT", "h", 9092),)
    v2 = (
        b'{"version":2,"host":"h","port":1,"jmx_port":-1,"timestamp":"1","endpoints":["SSL://h:2"]}'
    )
    assert znodes.decode_broker(0, v2).security_protocols == {"SSL": "SSL"}


def test_a_kafka_topic_assignment_reads_and_writes_back_byte_for_byte() -> None:
    assignment = znodes.decode_topic("test", KAFKA_TOPIC)
    assert assignment == TopicAssignment(
        {0: ReplicaAssignment((0,))}, parse_topic_id("ZOLr9CLNQjSW70hyIHx6BQ")
    )
    assert znodes.encode_topic(assignment) == KAFKA_TOPIC


def test_topic_assignment_with_a_reassignment_in_progress() -> None:
    assignment = TopicAssignment(
        {1: ReplicaAssignment((1, 2, 3), adding=(3,), removing=(1,)), 0: ReplicaAssignment((2,))},
        uuid.uuid4(),
    )
    doc = json.loads(znodes.encode_topic(assignment))
    assert doc["partitions"] == {"0": [2], "1": [1, 2, 3]}
    assert doc["adding_replicas"] == {"1": [3]}
    assert doc["removing_replicas"] == {"1": [1]}
    assert znodes.decode_topic("t", znodes.encode_topic(assignment)) == assignment
    # version 1 (no topic id, no reassignment keys) still reads
    old = znodes.decode_topic("t", b'{"version":1,"partitions":{"0":[1,2]}}')
    assert old == TopicAssignment({0: ReplicaAssignment((1, 2))}, None)


def test_partition_state_matches_kafka() -> None:
    state = znodes.decode_partition_state("t", 0, KAFKA_STATE)
    assert state == PartitionState(leader=1, leader_epoch=0, isr=(1,), controller_epoch=1)
    assert znodes.encode_partition_state(state) == KAFKA_STATE
    recovering = PartitionState(2, 5, (2,), 3, leader_recovery_state=1)
    assert json.loads(znodes.encode_partition_state(recovering))["leader_recovery_state"] == 1
    assert znodes.decode_partition_state("t", 0, znodes.encode_partition_state(recovering)) == (
        recovering
    )


def test_controller_cluster_id_and_controller_epoch_match_kafka() -> None:
    assert znodes.encode_controller(2, 1688524276281) == KAFKA_CONTROLLER
    assert znodes.decode_controller(KAFKA_CONTROLLER).broker_id == 2
    # Kafka before 3.4 wrote version 1 without kraftControllerEpoch
    assert znodes.decode_controller(b'{"version":1,"brokerid":5,"timestamp":"9"}').broker_id == 5
    assert znodes.encode_cluster_id("Sfr7YvlkRHSHrmSrwq9mug") == KAFKA_CLUSTER_ID
    assert znodes.decode_cluster_id(KAFKA_CLUSTER_ID) == "Sfr7YvlkRHSHrmSrwq9mug"
    assert znodes.encode_controller_epoch(12) == b"12"
    assert znodes.decode_controller_epoch(b"12") == 12


def test_configs_notifications_admin_requests_and_producer_id_blocks() -> None:
    assert znodes.decode_entity_config("/config/topics/t", b"") == {}
    config = {"cleanup.policy": "compact", "retention.ms": "1000"}
    encoded = znodes.encode_entity_config(config)
    assert encoded == b'{"version":1,"config":{"cleanup.policy":"compact","retention.ms":"1000"}}'
    assert znodes.decode_entity_config("/config/topics/t", encoded) == config
    change = znodes.decode_config_change(
        "config_change_0000000007", znodes.encode_config_change("brokers/<default>")
    )
    assert (change.sequence, change.entity_path) == (7, "brokers/<default>")
    parts = {TopicPartition("a", 0), TopicPartition("b", 3)}
    assert znodes.decode_partitions("/x", znodes.encode_partitions(parts)) == parts
    moves = {TopicPartition("a", 0): (3, 1)}
    assert znodes.decode_reassignment(znodes.encode_reassignment(moves)) == moves
    block = ProducerIdBlock(4, 1000, 1999)
    assert znodes.decode_producer_id_block(znodes.encode_producer_id_block(block)) == block
    assert block.size == 1000


@pytest.mark.parametrize(
    ("decode", "data", "fragment"),
    [
        (lambda d: znodes.decode_broker(1, d), b"not json", "/brokers/ids/1"),
        (lambda d: znodes.decode_broker(1, d), b'{"version":9}', "unsupported version 9"),
        (lambda d: znodes.decode_topic("t", d), b'{"version":3}', "missing key 'partitions'"),
        (
            lambda d: znodes.decode_partition_state("t", 0, d),
            b'{"version":1,"leader":"one","leader_epoch":0,"isr":[],"controller_epoch":1}',
            "'one' is not an integer",
        ),
        (znodes.decode_controller_epoch, b"x", "/controller_epoch"),
        (
            znodes.decode_producer_id_block,
            b'{"version":1,"broker":1,"block_start":0,"block_end":"9"}',
            "0 is not a string",
        ),
    ],
)
def test_malformed_znodes_name_the_path_and_what_is_wrong(
    decode: object, data: bytes, fragment: str
) -> None:
    assert callable(decode)
    with pytest.raises(znodes.MalformedZNodeError) as info:
        decode(data)
    assert fragment in str(info.value), str(info.value)


def test_endpoints_and_connect_paths() -> None:
    assert str(Endpoint.parse("SASL_SSL://[::1]:9094")) == "SASL_SSL://[::1]:9094"
    with pytest.raises(ValueError, match="not a listener endpoint"):
        Endpoint.parse("127.0.0.1:9092")
    assert znodes.partition_state_path("t", 2) == "/brokers/topics/t/partitions/2/state"
    assert znodes.config_path("brokers", znodes.DEFAULT_ENTITY) == "/config/brokers/<default>"
    with pytest.raises(ValueError, match="not a sequential znode"):
        znodes.sequence_number("isr_change_x", znodes.ISR_CHANGE_PREFIX)


ids = st.integers(min_value=0, max_value=2**31 - 1)


@given(
    leader=st.integers(min_value=-1, max_value=2**31 - 1),
    epoch=ids,
    isr=st.lists(ids, max_size=5),
    controller_epoch=ids,
)
def test_partition_state_round_trips(
    leader: int, epoch: int, isr: list[int], controller_epoch: int
) -> None:
    state = PartitionState(leader, epoch, tuple(isr), controller_epoch)
    assert znodes.decode_partition_state("t", 0, znodes.encode_partition_state(state)) == state


@given(
    partitions=st.dictionaries(
        st.integers(min_value=0, max_value=999), st.lists(ids, min_size=1, max_size=4), max_size=8
    ),
    with_id=st.booleans(),
)
def test_topic_assignment_round_trips(partitions: dict[int, list[int]], with_id: bool) -> None:
    assignment = TopicAssignment(
        {p: ReplicaAssignment(tuple(r)) for p, r in partitions.items()},
        uuid.uuid4() if with_id else None,
    )
    assert znodes.decode_topic("t", znodes.encode_topic(assignment)) == assignment
