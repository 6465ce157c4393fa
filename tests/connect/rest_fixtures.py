"""Shared fixtures and helpers for the Kafka Connect REST API tests (connect/rest.py).

Each test runs its own standalone worker and Herder on the shared broker; connector names (and
so sink groups ``connect-<name>``) and topics are fresh per test. The plugins are
``tests.connect.plugins_for_tests``, loaded by dotted path as a user's would be.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluice.connect.rest import create_app
from sluice.connect.runtime.herder import Herder
from sluice.connect.runtime.offsets import FileOffsetStore
from sluice.connect.runtime.standalone import standalone_worker
from tests.conftest import BrokerProcess, create_topic
from tests.connect.plugins_for_tests import CollectingSink, CountingSource

SOURCE = "tests.connect.plugins_for_tests.CountingSource"
SINK = "tests.connect.plugins_for_tests.CollectingSink"
TIMEOUT = 30.0
REBALANCING = {
    "error_code": 409,
    "message": "Cannot complete request momentarily due to stale configuration "
    "(typically caused by a concurrent config change)",
}


def wait_for(condition: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
    """Poll ``condition`` until it returns something true; returns that."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}; last: {last!r}")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def herder(shared_broker: BrokerProcess, tmp_path: Path) -> Iterator[Herder]:
    runtime = standalone_worker(
        {"bootstrap.servers": shared_broker.bootstrap, "offset.flush.interval.ms": 100},
        FileOffsetStore(tmp_path / "offsets.json"),
    )
    runtime.start("127.0.0.1:8083")
    try:
        yield Herder(runtime, plugins=[CountingSource, CollectingSink], timeout_s=10)
    finally:
        runtime.stop()


@pytest.fixture
def client(herder: Herder) -> Iterator[TestClient]:
    with TestClient(create_app(herder)) as client:
        yield client


@pytest.fixture
def topic(shared_broker: BrokerProcess) -> str:
    return create_topic(shared_broker.bootstrap)


def source_config(topic: str, **extra: Any) -> dict[str, Any]:
    return {"connector.class": SOURCE, "topic": topic, **extra}


def create(client: TestClient, name: str, config: dict[str, Any], **body: Any) -> Any:
    response = client.post("/connectors", json={"name": name, "config": config, **body})
    assert response.status_code == 201, response.text
    return response.json()


def status(client: TestClient, name: str) -> dict[str, Any]:
    response = client.get(f"/connectors/{name}/status")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def states(client: TestClient, name: str) -> tuple[str, list[str]]:
    body = status(client, name)
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


def offsets(client: TestClient, name: str) -> list[dict[str, Any]]:
    response = client.get(f"/connectors/{name}/offsets")
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["offsets"]
    return found


def counted(client: TestClient, name: str, count: int) -> Callable[[], bool]:
    """Whether every task of a CountingSource has committed ``count`` records."""

    def check() -> bool:
        found = offsets(client, name)
        return bool(found) and all(o["offset"] == {"n": count} for o in found)

    return check
