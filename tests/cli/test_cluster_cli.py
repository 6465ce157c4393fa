"""``sluice cluster describe`` against one node: the node is the cluster, and its controller.

The same command on a 3-broker cluster (racks, the controller, leaders and replicas per broker)
is tested in ``tests/cluster/test_cluster_describe.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from confluent_kafka.admin import AdminClient

if TYPE_CHECKING:
    from tests.cli.conftest import Result, Sluice

TIMEOUT = 15.0


def section(result: Result, title: str) -> list[list[str]]:
    """The rows (split on runs of 2+ spaces) of one titled section of a command's output,
    header included."""
    lines = result.out.splitlines()
    start = lines.index(title) + 2
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        rows.append(re.split(r"\s{2,}", line.strip()))
    return rows


def test_one_node_is_the_cluster_and_its_controller(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic_factory(3)
    described = sluice("cluster", "describe")
    assert described.code == 0, str(described)
    admin = AdminClient({"bootstrap.servers": sluice.bootstrap})
    cluster = admin.describe_cluster(request_timeout=TIMEOUT).result(TIMEOUT)
    partitions = sum(len(t.partitions) for t in admin.list_topics(timeout=TIMEOUT).topics.values())
    assert partitions >= 3

    assert dict(section(described, "CLUSTER")) == {
        "ID": cluster.cluster_id,
        "CONTROLLER": "0",
    }, described.out
    host, port = sluice.bootstrap.rsplit(":", 1)
    assert section(described, "BROKERS") == [
        ["ID", "HOST", "PORT", "RACK", "LEADERS", "REPLICAS"],
        ["0*", host, port, "-", str(partitions), str(partitions)],
    ], described.out
    assert described.err == "", described.err


def test_an_unreachable_cluster_is_a_clear_error(run: Callable[..., Result]) -> None:
    result = run("cluster", "describe", "-b", "127.0.0.1:1", "--timeout", "3")
    assert result.code == 1, str(result)
    assert result.out == ""
    assert result.err.startswith("error: cannot reach a broker at 127.0.0.1:1"), result.err


def test_one_node_has_no_under_replicated_or_unavailable_partition(
    sluice: Sluice, topic_factory: Callable[..., str]
) -> None:
    topic_factory(2)
    for flags in (
        ["--under-replicated"],
        ["--unavailable"],
        ["--under-replicated", "--unavailable"],
    ):
        listed = sluice("topics", "list", *flags)
        assert listed.code == 0, str(listed)
        assert listed.out.splitlines() == ["TOPIC  PARTITION  LEADER  REPLICAS  ISR"], listed.out
