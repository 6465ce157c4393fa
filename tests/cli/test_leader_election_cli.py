"""``sluice leader-election`` against one node: every partition is led by its only (preferred)
replica, so there is nothing to elect; the arguments are checked before anything is sent.

Elections that move leaders are tested on a 3-broker cluster in
``tests/cluster/test_cluster_basics.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.cli.conftest import Result, Sluice


def rows(result: Result) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in result.out.splitlines()]


def test_one_node_needs_no_election(sluice: Sluice, topic_factory: Callable[..., str]) -> None:
    topic = topic_factory(2)
    result = sluice("leader-election", "--preferred", topic)
    assert result.code == 0, str(result)
    assert rows(result) == [
        ["TOPIC", "PARTITION", "RESULT"],
        [topic, "0", "not needed: the preferred replica leads already"],
        [topic, "1", "not needed: the preferred replica leads already"],
    ], result.out
    unclean = sluice("leader-election", "--unclean", f"{topic}:1")
    assert unclean.code == 0, str(unclean)
    assert rows(unclean)[1] == [topic, "1", "not needed: it has a leader"], unclean.out


def test_the_kind_of_election_must_be_given_once(sluice: Sluice) -> None:
    for args in ((), ("--preferred", "--unclean")):
        result = sluice("leader-election", *args, "t")
        assert result.code == 2, str(result)
        assert "give one of --preferred and --unclean" in result.err
    result = sluice("leader-election", "--unclean")
    assert result.code == 2 and "an unclean election needs the partitions named" in result.err


def test_an_unknown_topic_is_a_clear_error(sluice: Sluice) -> None:
    result = sluice("leader-election", "--preferred", "no-such-topic")
    assert result.code == 1, str(result)
    assert "topic 'no-such-topic' does not exist" in result.err
