"""A task's converters are closed once its loop is over (Kafka's ``Converter`` is
``Closeable``): after a run that ended, one that failed, and for a task that never started."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from sluice.connect.converters.json_converter import JsonConverter
from sluice.connect.runtime.task_runner import TaskRunner


class Recording(JsonConverter):
    """A JSON converter that records its close."""

    closed: ClassVar[list[bool]] = []

    def close(self) -> None:
        self.closed.append(self.is_key)


class _Task(TaskRunner):
    kind = "source"

    def __init__(self, fail: bool) -> None:
        converter = f"{__name__}.Recording"
        config: dict[str, Any] = {"key.converter": converter, "value.converter": converter}
        super().__init__("c", 0, config, {})
        self.fail = fail

    def execute(self) -> None:
        if self.fail:
            raise RuntimeError("the task failed")


@pytest.mark.parametrize("fail", [False, True])
def test_converters_are_closed_when_the_loop_is_over(fail: bool) -> None:
    Recording.closed.clear()
    runner = _Task(fail)
    runner.start()
    runner.stop(10)
    assert sorted(Recording.closed) == [False, True], "key and value converters closed once"
    assert runner.state == ("FAILED" if fail else "UNASSIGNED")


def test_a_task_that_never_started_closes_its_converters() -> None:
    Recording.closed.clear()
    _Task(False).stop(10)
    assert sorted(Recording.closed) == [False, True]
