"""What clients and the CLI see of a 3-broker cluster: Metadata and DescribeCluster from every
broker, ``sluice cluster describe``, ``sluice topics describe`` and ``topics list
--under-replicated|--unavailable`` before and after a broker dies."""

from __future__ import annotations

import re
import uuid
import warnings
from collections.abc import Callable

import pytest

from tests.cli.conftest import Result, run_sluice
from tests.cli.test_cluster_cli import section
from tests.cluster.brokers import BrokerCluster

READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka.admin import KafkaAdminClient

pytestmark = [
    pytest.mark.timeout(360),
    pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning"),
]

RACKS = {1: "r1", 2: "r2", 3: "r3"}


def table(result: Result) -> list[list[str]]:
    """A command's output that is one table, header included."""
    return [re.split(r"\s{2,}", line.strip()) for line in result.out.splitlines()]


def sluice(cluster: BrokerCluster, *args: str) -> Result:
    result = run_sluice(*args, "-b", cluster.bootstrap)
    assert result.code == 0, f"{result}\n{cluster.logs()}"
    return result


def describe_cluster(bootstrap: str) -> dict[str, object]:
    """kafka-python's DescribeCluster, sent to the one broker of ``bootstrap``."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15_000)
    try:
        described: dict[str, object] = client.describe_cluster()
    finally:
        client.close()
    return described


def test_clients_and_the_cli_see_one_cluster(
    broker_cluster_factory: Callable[..., BrokerCluster],
) -> None:
    cluster = broker_cluster_factory(
        broker_config={i: {"broker.rack": rack} for i, rack in RACKS.items()},
        **{"zookeeper.session.timeout.ms": "3000", "replica.lag.time.max.ms": "2000"},
    )
    for i in cluster.ids:
        cluster.wait_until(
            lambda i=i: cluster.metadata_brokers(i) == [1, 2, 3],
            f"Metadata from broker {i} listing brokers 1, 2 and 3",
            timeout=20,
        )

    # DescribeCluster answers the same from every broker
    answers = [describe_cluster(cluster.broker(i).bootstrap) for i in cluster.ids]
    controller = answers[0]["controller_id"]
    assert controller in (1, 2, 3), answers[0]
    for answer in answers:
        assert answer["controller_id"] == controller and answer["cluster_id"], answer
        brokers = answer["brokers"]
        assert isinstance(brokers, list)
        assert sorted((b["broker_id"], b["port"], b["rack"]) for b in brokers) == [
            (i, cluster.broker(i).port, RACKS[i]) for i in cluster.ids
        ], answer

    topic = f"orders-{uuid.uuid4().hex[:8]}"
    single = f"single-{uuid.uuid4().hex[:8]}"
    sluice(cluster, "topics", "create", topic, "-p", "3", "-r", "3")
    sluice(cluster, "topics", "create", single, "-p", "3", "-r", "1")

    def partitions(name: str) -> list[list[str]]:
        return section(
            run_sluice("topics", "describe", name, "-b", cluster.bootstrap), "PARTITIONS"
        )

    cluster.wait_until(
        lambda: all(row[1] != "none" for row in partitions(topic)[1:]), f"leaders of {topic}"
    )
    rows = partitions(topic)
    assert rows[0] == [
        "PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "EARLIEST", "LATEST"
    ]  # fmt: skip
    for row in rows[1:]:
        replicas = set(row[3].strip("[]").split(","))
        assert replicas == {"1", "2", "3"} and row[1] in replicas, row
        assert int(row[2]) >= 0 and row[5] == "[]", row

    described = sluice(cluster, "cluster", "describe")
    info = dict(section(described, "CLUSTER"))  # a two-column table: its header is a row
    assert info == {"ID": answers[0]["cluster_id"], "CONTROLLER": str(controller)}, described
    brokers = section(described, "BROKERS")
    assert brokers[0] == ["ID", "HOST", "PORT", "RACK", "LEADERS", "REPLICAS"]
    assert [row[0] for row in brokers[1:]] == [
        f"{i}*" if i == controller else str(i) for i in cluster.ids
    ], described
    assert [row[3] for row in brokers[1:]] == ["r1", "r2", "r3"]
    assert all(int(row[5]) >= 4 for row in brokers[1:]), "3 partitions of RF 3, one of RF 1"

    healthy = sluice(cluster, "topics", "list", "--under-replicated", "--unavailable")
    assert table(healthy) == [["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR"]], healthy

    # broker 3 dies: the RF 3 partitions lose it from their ISR, the RF 1 one on it its leader
    single_on_3 = [row[0] for row in partitions(single)[1:] if row[3] == "[3]"]
    assert len(single_on_3) == 1, partitions(single)
    cluster.kill(3)

    def unhealthy(*flags: str) -> set[tuple[str, str]]:
        listed = table(sluice(cluster, "topics", "list", *flags))[1:]
        return {(row[0], row[1]) for row in listed}

    rf3 = {(topic, str(p)) for p in range(3)}
    cluster.wait_until(lambda: rf3 <= unhealthy("--under-replicated"), f"{topic} under-replicated")
    cluster.wait_until(
        lambda: unhealthy("--unavailable") == {(single, single_on_3[0])},
        f"partition {single_on_3[0]} of {single} unavailable",
    )
    assert not rf3 & unhealthy("--unavailable"), "the RF 3 partitions still have leaders"
    assert (single, single_on_3[0]) not in unhealthy("--under-replicated")
    for row in partitions(topic)[1:]:
        assert row[1] in ("1", "2") and row[5] == "[3]", f"3 offline, not leading: {row}"
    alive = section(sluice(cluster, "cluster", "describe"), "BROKERS")[1:]
    assert [row[0].rstrip("*") for row in alive] == ["1", "2"]
