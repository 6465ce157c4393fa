"""Fixtures of the file connector tests: a fake offset store, task factories, a drain helper.

The tasks are driven directly, as units (no broker, no worker): the fake offset store plays the
runtime's committed offsets (``context.offset_storage_reader``), fed by ``commit(records)``.
Helpers reach the tests as fixtures (``--import-mode=importlib``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sluice.connect.api.connector import SourceTask
from sluice.connect.api.data import SourceRecord
from sluice.connectors.file import FileSourceTask, SpoolDirSourceTask
from tests.connectors.source_offsets import FakeContext, FakeOffsets


@pytest.fixture
def offsets() -> FakeOffsets:
    """The committed offsets every task of one test shares."""
    return FakeOffsets()


TaskFactory = Callable[..., SourceTask]


def _factory(
    cls: type[SourceTask], offsets: FakeOffsets, defaults: dict[str, Any]
) -> Iterator[TaskFactory]:
    started: list[SourceTask] = []

    def make(**config: Any) -> SourceTask:
        task = cls()
        task.initialize(FakeContext(offsets))
        settings = {**defaults, **config}
        task.start({key.replace("_", "."): value for key, value in settings.items()})
        started.append(task)
        return task

    yield make
    for task in started:
        task.stop()


@pytest.fixture
def tail_task(offsets: FakeOffsets) -> Iterator[TaskFactory]:
    """``tail_task(file=..., poll_interval_ms=...)``: a started FileSourceTask reading the shared
    offsets (underscores in keywords become dots; watchdog off, short waits, no rotation grace
    unless given)."""
    defaults = {"topic": "logs", "watch": "false", "poll_interval_ms": 50, "rotation_grace_ms": 0}
    yield from _factory(FileSourceTask, offsets, defaults)


@pytest.fixture
def spool_task(offsets: FakeOffsets) -> Iterator[TaskFactory]:
    """``spool_task(input_path=..., ...)``: a started SpoolDirSourceTask (same conventions)."""
    defaults = {"topic": "files", "watch": "false", "poll_interval_ms": 50}
    yield from _factory(SpoolDirSourceTask, offsets, defaults)


Drain = Callable[..., list[SourceRecord]]


@pytest.fixture
def drain() -> Drain:
    """``drain(task, count=None, timeout=2.0)``: poll until ``count`` records came (or, with no
    count, until a poll returns nothing); fails listing what came when ``timeout`` passes."""

    def run(task: SourceTask, count: int | None = None, timeout: float = 2.0) -> list[SourceRecord]:
        came: list[SourceRecord] = []
        deadline = time.monotonic() + timeout
        while count is None or len(came) < count:
            records = task.poll()
            if not records and count is None:
                return came
            came.extend(records or [])
            if time.monotonic() > deadline:
                values = [r.value for r in came]
                raise AssertionError(f"expected {count} records within {timeout}s, got {values}")
        assert count is None or len(came) == count, [r.value for r in came]
        return came

    return run
