"""A consumer group of kafka-python consumers, each in its own process (the smaller scenario).

Three members over three partitions: each record processed by exactly one member; a clean leave
hands the member's partition over at once; a member killed -9 has its partition reassigned once its
session expires, resumed at the committed offset with nothing skipped.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.compat.groups.conftest import Member, run_group_scenario
from tests.conftest import BrokerProcess


@pytest.fixture
def bootstrap(broker_factory: Callable[..., BrokerProcess]) -> str:
    """A broker with Kafka's default 3 s initial rebalance delay, so the three members join the
    first generation together. A kafka-python 3 member that led a generation in which it was
    assigned nothing (it had joined alone) was seen to stall for good on a loaded machine —
    suspected client-side, not understood yet (see the session note)."""
    return broker_factory(**{"group.initial.rebalance.delay.ms": "3000"}).bootstrap


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_three_members_leave_and_kill(
    members: Callable[..., Member], bootstrap: str, group_id: str, strategy: str
) -> None:
    run_group_scenario(
        members,
        bootstrap,
        group_id,
        client="kafka-python",
        strategy=strategy,
        partitions=3,
        per_partition=10,
    )
