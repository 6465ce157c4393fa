"""A consumer group of confluent-kafka (librdkafka) consumers, each in its own process.

Three members over a six-partition topic: each record processed by exactly one member; a member
that leaves cleanly is gone at once and its partitions go to the others; a member killed -9 has its
partitions reassigned once its session expires, and its successor resumes at the committed offset
with nothing skipped. Eager (range) and incremental (cooperative-sticky) rebalancing.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.compat.groups.conftest import Member, run_group_scenario


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_three_members_leave_and_kill(
    members: Callable[..., Member], bootstrap: str, group_id: str, strategy: str
) -> None:
    run_group_scenario(
        members,
        bootstrap,
        group_id,
        client="confluent",
        strategy=strategy,
        partitions=6,
        per_partition=20,
    )
