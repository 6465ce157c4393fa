"""Fixtures for the compat suite: real clients against one real ``sluice broker start`` process.

The compat tests share one broker (``shared_broker``) and stay apart
by using their own topics (``topic_name`` is unique per test). A test that needs a broker with
other ``server.properties`` starts its own through ``broker_factory``.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

# pytest (--import-mode=importlib) registers the root conftest as `tests.conftest`
from tests.conftest import BrokerProcess

TIMEOUT = 15.0  # seconds: the bound on every single client wait in this suite


@pytest.fixture(scope="session")
def bootstrap(shared_broker: BrokerProcess) -> str:
    """``host:port`` of the shared broker."""
    return shared_broker.bootstrap


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
