"""Fixtures of the Streams and DSL tests: output as plain tuples, apps on either store backend.

Helpers reach the tests as fixtures (the suite runs with ``--import-mode=importlib``, where a
sibling helper module cannot be imported). Expected results in the tests are written out by
hand; nothing here computes them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sluice.dsl import App
from sluice.streams import TestDriver

Output = Callable[[TestDriver, str], list[tuple[Any, Any, int]]]
AppFactory = Callable[..., App]


@pytest.fixture
def out() -> Output:
    """``out(driver, topic)``: records written to ``topic`` since the last read, as
    ``(key, value, timestamp)`` tuples, so that a failing comparison shows both lists."""

    def read(driver: TestDriver, topic: str) -> list[tuple[Any, Any, int]]:
        return [(r.key, r.value, r.timestamp) for r in driver.read_output(topic)]

    return read


@pytest.fixture
def make_app() -> AppFactory:
    """``make_app(stores="memory", **settings)``: an App named ``app`` (changelogs are
    ``app-<store>-changelog``, repartition topics ``app-<name>-repartition``)."""

    def make(stores: str = "memory", **settings: Any) -> App:
        return App("app", stores=stores, **settings)  # type: ignore[arg-type]

    return make


@pytest.fixture(params=["memory", "rocksdb"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each key-value store backend in turn (for the tests that run on both)."""
    return str(request.param)
