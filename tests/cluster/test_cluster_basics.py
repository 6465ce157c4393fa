"""Three real brokers on ZooKeeper: one cluster as clients see it, topics through any broker,
records replicated to every replica, and a leader's failure that loses nothing acknowledged."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, ElectionType, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.cluster.brokers import BrokerCluster

SLUICE = str(Path(sys.executable).with_name("sluice"))


def create_topic(
    cluster: BrokerCluster, name: str, partitions: int = 3, rf: int = 3, **config: str
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, partitions, rf, config=config)], operation_timeout=30, request_timeout=40
    )
    futures[name].result(timeout=45)


def leaders(
    cluster: BrokerCluster, topic: str, via: int
) -> dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]:
    """partition → (leader, replicas, isr) as Metadata from broker ``via`` tells."""
    admin = AdminClient({"bootstrap.servers": cluster.broker(via).bootstrap})
    found = admin.list_topics(topic, timeout=10).topics[topic]
    return {p.id: (p.leader, tuple(p.replicas), tuple(p.isrs)) for p in found.partitions.values()}


def test_every_broker_tells_the_same_cluster(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    cluster.wait_until(
        lambda: all(sorted(cluster.metadata_brokers(i)) == [1, 2, 3] for i in cluster.ids),
        "every broker lists the three",
    )
    create_topic(cluster, "shared", partitions=3, rf=3)
    cluster.wait_until(
        lambda: (
            len({str(leaders(cluster, "shared", i)) for i in cluster.ids}) == 1
            and all(len(isr) == 3 for _, _, isr in leaders(cluster, "shared", 1).values())
        ),
        "the three agree on leaders, replicas and a full ISR",
    )
    described = leaders(cluster, "shared", 2)
    assert sorted(described) == [0, 1, 2]
    assert sorted(leader for leader, _, _ in described.values()) == [1, 2, 3]  # spread
    controllers = {
        AdminClient({"bootstrap.servers": cluster.broker(i).bootstrap})
        .list_topics(timeout=10)
        .controller_id
        for i in cluster.ids
    }
    assert len(controllers) == 1 and controllers <= {1, 2, 3}


def test_acks_all_records_reach_every_replica_and_survive_a_leader_kill(
    shared_cluster: BrokerCluster,
) -> None:
    cluster = shared_cluster
    create_topic(cluster, "orders", partitions=1, rf=3, **{"min.insync.replicas": "2"})
    leader, replicas, _ = leaders(cluster, "orders", 1)[0]
    acked: list[str] = []
    failed: list[str] = []

    def delivered(err: object, msg: object) -> None:
        (failed if err is not None else acked).append(msg.value().decode())  # type: ignore[attr-defined]

    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 60_000,
        }
    )
    deadline = time.monotonic() + 90
    for n in range(3000):
        producer.produce("orders", value=str(n).encode(), callback=delivered)
        producer.poll(0)
        if n == 1000:
            producer.flush(30)
            cluster.kill(leader)  # while records flow
        if n % 100 == 0:
            time.sleep(0.02)
        assert time.monotonic() < deadline
    assert producer.flush(90) == 0
    assert not failed, failed[:5]
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "checker",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition("orders", 0, 0)])
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < len(acked) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.value().decode())
    finally:
        consumer.close()
    assert len(set(acked)) == 3000
    assert seen == [str(n) for n in range(3000)], "lost, doubled or reordered"
    new_leader = leaders(cluster, "orders", next(i for i in replicas if i != leader))[0][0]
    assert new_leader in replicas and new_leader != leader


def test_elect_leaders_brings_the_preferred_replica_back(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    create_topic(cluster, "pref", partitions=1, rf=3)
    preferred, replicas, _ = leaders(cluster, "pref", 1)[0]
    assert preferred == replicas[0]
    cluster.stop(preferred)  # a clean stop: its leadership moves at once
    other = next(i for i in cluster.ids if i != preferred)
    cluster.wait_until(
        lambda: leaders(cluster, "pref", other)[0][0] not in (-1, preferred), "moved"
    )
    cluster.start(preferred)
    cluster.wait_until(lambda: len(leaders(cluster, "pref", other)[0][2]) == 3, "back in the ISR")
    done = subprocess.run(
        [SLUICE, "leader-election", "--preferred", "pref", "-b", cluster.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"^pref +0 +elected$", done.stdout, re.MULTILINE), done.stdout
    assert leaders(cluster, "pref", other)[0][0] == preferred
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    tp = TopicPartition("pref", 0)
    again = admin.elect_leaders(ElectionType.PREFERRED, [tp]).result(timeout=30)
    assert again[tp].code() == KafkaError.ELECTION_NOT_NEEDED


def test_a_restarted_broker_knows_every_topic_once_ready(shared_cluster: BrokerCluster) -> None:
    cluster = shared_cluster
    create_topic(cluster, "known", partitions=3, rf=3)
    cluster.stop(3)
    cluster.start(3)  # returns once it printed that it accepts connections
    admin = AdminClient({"bootstrap.servers": cluster.broker(3).bootstrap})
    found = admin.list_topics("known", timeout=10).topics["known"]
    assert found.error is None, found.error
    assert sorted(found.partitions) == [0, 1, 2]


def test_num_replica_fetchers_changes_on_a_running_broker(shared_cluster: BrokerCluster) -> None:
    """``num.replica.fetchers`` is a dynamic broker key, as in Kafka: set on one broker through
    the admin API, it resizes that broker's fetchers at once, and replication goes on."""
    cluster = shared_cluster
    create_topic(cluster, "fetchers", partitions=6, rf=3, **{"min.insync.replicas": "3"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(
        ResourceType.BROKER,
        "2",
        incremental_configs=[
            ConfigEntry(
                "num.replica.fetchers",
                "3",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)
    cluster.wait_until(
        lambda: "num.replica.fetchers: 1 -> 3 fetchers per leader" in cluster.broker(2).log_text(),
        "broker 2 resizing its fetchers",
    )
    described = admin.describe_configs([ConfigResource(ResourceType.BROKER, "2")])
    (configs,) = (f.result(timeout=30) for f in described.values())
    assert configs["num.replica.fetchers"].value == "3"
    # every partition still needs broker 2's acknowledgement (min.insync.replicas = 3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    failed: list[object] = []
    for n in range(600):
        producer.produce(
            "fetchers",
            value=str(n).encode(),
            partition=n % 6,
            on_delivery=lambda err, _msg: failed.append(err) if err is not None else None,
        )
    assert producer.flush(60) == 0
    assert not failed, failed[:3]


def test_followers_replicate_through_incremental_fetch_sessions(
    shared_cluster: BrokerCluster,
) -> None:
    """Each follower keeps a fetch session with each leader it copies from (KIP-227; logged
    when the leader gives one), and replication through the sessions' incremental fetches
    leaves every replica's log byte-identical to its leader's."""
    cluster = shared_cluster
    create_topic(cluster, "sessioned", partitions=3, rf=3)
    cluster.wait_until(
        lambda: all(len(isr) == 3 for _, _, isr in leaders(cluster, "sessioned", 1).values()),
        "a full ISR for every partition",
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for round_ in range(5):  # rounds: incremental fetches carry only the partitions that moved
        for n in range(60):
            producer.produce("sessioned", value=f"{round_}-{n}".encode(), partition=n % 3)
        assert producer.flush(30) == 0
    found = leaders(cluster, "sessioned", 1)

    def segment(broker: int, partition: int) -> bytes:
        path = cluster.broker(broker).data_dir / f"sessioned-{partition}"
        return (path / "00000000000000000000.log").read_bytes()

    for partition, (leader, replicas, _) in found.items():
        cluster.wait_until(
            lambda p=partition, ld=leader, rs=replicas: all(
                segment(r, p) == segment(ld, p) for r in rs
            ),
            f"partition {partition}: every replica's log equal to the leader's",
        )
    for follower in cluster.ids:
        followed = {leader for leader, _, _ in found.values() if leader != follower}
        text = cluster.broker(follower).log_text()
        sessions = set(map(int, re.findall(r"fetch session \d+ with leader (\d+) ", text)))
        assert followed <= sessions, (
            f"broker {follower} has no fetch session with {followed - sessions}\n"
            + cluster.log_tail(follower)
        )


def test_scram_credentials_live_in_zookeeper_for_every_broker(
    shared_cluster: BrokerCluster,
) -> None:
    """AlterUserScramCredentials through one broker, described through another: the
    credential is Kafka's ``/config/users/<user>`` (salted, never the password)."""
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    cluster = shared_cluster
    via_1 = AdminClient({"bootstrap.servers": cluster.broker(1).bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    [future] = via_1.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", info, b"carol-secret")]
    ).values()
    future.result(30)
    via_3 = AdminClient({"bootstrap.servers": cluster.broker(3).bootstrap})
    [(_, described)] = via_3.describe_user_scram_credentials(["carol"]).items()
    [credential] = described.result(30).scram_credential_infos
    assert (credential.mechanism, credential.iterations) == (ScramMechanism.SCRAM_SHA_512, 8192)
    stored = cluster.store().configs.get("users", "carol")
    assert list(stored) == ["SCRAM-SHA-512"]
    assert stored["SCRAM-SHA-512"].startswith("salt=") and "secret" not in stored["SCRAM-SHA-512"]
    assert stored["SCRAM-SHA-512"].endswith(",iterations=8192")
    # a name that is not a plain znode name lands where Kafka's Sanitizer puts it
    [future] = via_1.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("CN=dave smith,O=x", info, b"dave-secret")]
    ).values()
    future.result(30)
    assert "CN%3Ddave%20smith%2CO%3Dx" in cluster.store().configs.entities("users")
    [(_, described)] = via_3.describe_user_scram_credentials(["CN=dave smith,O=x"]).items()
    assert len(described.result(30).scram_credential_infos) == 1
