"""``sluice consume --group``: subscribe with a group id and commit what was printed.

Sluice's broker has no group coordinator yet (a later issue), so this runs against the tansu
reference broker; switch the fixture to ``bootstrap`` once ours has one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.cli.conftest import Result

Run = Callable[..., "Result"]


@pytest.mark.slow
def test_group_commits_what_was_printed(run: Run, tansu: str) -> None:
    env = {"SLUICE_BOOTSTRAP": tansu}
    fast = ["-X", "session.timeout.ms=6000"]  # tansu holds JoinGroup for half a session
    assert run("topics", "create", "grouped", "-p", "1", env=env).code == 0
    lines = "".join(f"r{i}\n" for i in range(10))
    assert run("produce", "grouped", input=lines, env=env).code == 0

    first = run(
        "consume", "grouped", "-g", "readers", "--from-beginning", "-n", "4", *fast, env=env
    )
    assert first.code == 0, str(first)
    assert first.out.splitlines() == ["r0", "r1", "r2", "r3"]

    # The same group resumes after the committed offset; --from-beginning only applies to a
    # group without one (Kafka's auto.offset.reset).
    rest = run(
        "consume", "grouped", "-g", "readers", "--from-beginning", "-n", "6", "-f", "%o %v",
        *fast, env=env, timeout=120,
    )  # fmt: skip
    assert rest.code == 0, str(rest)
    assert rest.out.splitlines() == [f"{i} r{i}" for i in range(4, 10)]
