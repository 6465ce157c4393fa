"""Kafka's config providers at the worker: a config sent with ``${env:...}`` placeholders keeps
them — in the REST API's answers and in ``connect-configs`` — and the connector and its tasks
run with the resolved values; a placeholder the worker cannot resolve is a 400 naming the key."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import BrokerProcess
from tests.connect.cluster_fixtures import Cluster, read_topic, topic_records
from tests.connect.rest_fixtures import create, source_config, unique, wait_for

PLACEHOLDER = "${env:SLUICE_TEST_SECRET_TOPIC}"


def _config(**extra: Any) -> dict[str, Any]:
    return {**source_config(PLACEHOLDER, count=2), **extra}


def test_standalone_keeps_placeholders_and_runs_with_the_values(
    client: TestClient, shared_broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = unique("resolved")
    monkeypatch.setenv("SLUICE_TEST_SECRET_TOPIC", topic)
    name = unique("counting")
    info = create(client, name, _config())
    assert info["config"]["topic"] == PLACEHOLDER
    assert client.get(f"/connectors/{name}/config").json()["topic"] == PLACEHOLDER
    tasks = client.get(f"/connectors/{name}/tasks").json()
    # Kafka's reverse transform: the stored task config has the placeholder back, not the value
    assert tasks[0]["config"]["topic"] == PLACEHOLDER
    wait_for(lambda: len(read_topic(shared_broker.bootstrap, topic)) == 2, "records in the topic")


def test_an_unresolvable_placeholder_is_a_400_naming_the_key(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SLUICE_TEST_SECRET_TOPIC", raising=False)
    response = client.post("/connectors", json={"name": unique("c"), "config": _config()})
    assert response.status_code == 400
    message = response.json()["message"]
    assert "topic" in message and "SLUICE_TEST_SECRET_TOPIC is not set" in message
    validated = client.put(
        "/connector-plugins/tests.connect.plugins_for_tests.CountingSource/config/validate",
        json=_config(),
    ).json()
    [topic] = [c["value"] for c in validated["configs"] if c["value"]["name"] == "topic"]
    assert topic["errors"] and topic["value"] == "[hidden]"


def test_distributed_writes_placeholders_never_secrets(
    cluster: Cluster, shared_broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = unique("resolved")
    monkeypatch.setenv("SLUICE_TEST_SECRET_TOPIC", topic)
    worker, client = cluster("worker-a:8083")
    name = unique("counting")
    create(client, name, _config(**{"tasks.max": "2"}))
    wait_for(lambda: len(read_topic(shared_broker.bootstrap, topic)) == 4, "records in the topic")
    records = topic_records(shared_broker.bootstrap, worker.configs.map.topic)
    assert records[f"connector-{name}"]["properties"]["topic"] == PLACEHOLDER
    for task in range(2):
        assert records[f"task-{name}-{task}"]["properties"]["topic"] == PLACEHOLDER
    assert all(topic not in repr(value) for value in records.values())
