"""Fixtures for the compat suite: real clients against one real ``sluice broker start`` process.

The compat tests share one broker (``compat_broker``; starting one costs seconds) and stay apart
by using their own topics (``topic_name`` is unique per test). A test that needs a broker with
other ``server.properties`` starts its own through ``broker_factory``. When a test fails, the
tail of the shared broker's log is attached to the report.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

# pytest (--import-mode=importlib) registers the root conftest as `tests.conftest`
from tests.conftest import BrokerProcess

TIMEOUT = 15.0  # seconds: the bound on every single client wait in this suite


@pytest.fixture(scope="session")
def compat_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A ``sluice broker start`` process with default configuration, shared by the suite."""
    root: Path = tmp_path_factory.mktemp("compat-broker")
    proc = BrokerProcess(root / "data", {}, root / "broker.log")
    try:
        proc.start()
        yield proc
    finally:
        try:
            proc.stop()
        finally:
            proc.kill()


@pytest.fixture(scope="session")
def bootstrap(compat_broker: BrokerProcess) -> str:
    """``host:port`` of the shared broker."""
    return compat_broker.bootstrap


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A legal topic name that no other test uses."""
    stem = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name).strip("-")[:80]
    return f"{stem}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def create_topic(bootstrap: str, topic_name: str) -> Callable[..., str]:
    """Create a topic through confluent-kafka's AdminClient; returns its name.

    ``create_topic(partitions=3, config={"retention.ms": "1000"}, name="")``: the name defaults
    to the test's ``topic_name``.
    """

    def create(partitions: int = 1, config: dict[str, str] | None = None, name: str = "") -> str:
        name = name or topic_name
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})],
            operation_timeout=TIMEOUT,
            request_timeout=TIMEOUT,
        )
        futures[name].result(timeout=TIMEOUT)
        return name

    return create


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        funcargs = getattr(item, "funcargs", {})
        procs = [v for v in funcargs.values() if isinstance(v, BrokerProcess)]
        for proc in procs:
            report.sections.append((f"broker log {proc.bootstrap}", proc.log_text()[-6000:]))
    return report
