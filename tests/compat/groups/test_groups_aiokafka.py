"""A consumer group of aiokafka consumers, each in its own process (the smaller scenario).

Three members over three partitions: each record processed by exactly one member; a clean leave
hands the member's partition over at once; a member killed -9 has its partition reassigned once its
session expires, resumed at the committed offset with nothing skipped.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.compat.groups.conftest import Member, run_group_scenario


def test_three_members_leave_and_kill(
    members: Callable[..., Member], bootstrap: str, group_id: str
) -> None:
    run_group_scenario(
        members,
        bootstrap,
        group_id,
        client="aiokafka",
        strategy="roundrobin",
        partitions=3,
        per_partition=10,
    )
