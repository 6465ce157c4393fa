"""Kafka Connect's REST API: pause, resume, stop, restart, and 409 while rebalancing
(fixtures in tests/connect/rest_fixtures.py).
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from sluice.connect.runtime.herder import Herder
from sluice.connect.runtime.reconciler import LocalAssignment
from tests.connect.rest_fixtures import (
    REBALANCING,
    create,
    source_config,
    states,
    unique,
    wait_for,
)

# -- rebalancing ----------------------------------------------------------------------------


def test_every_change_is_409_while_rebalancing(
    client: TestClient, herder: Herder, topic: str
) -> None:
    name = unique("src")
    create(client, name, source_config(topic))
    assignment = herder.runtime.assignment
    assert isinstance(assignment, LocalAssignment)
    assignment.revoke()  # as a rebalance: no slots
    offsets_body = {"offsets": [{"partition": {"task": 0}, "offset": {"n": 1}}]}
    changes = [
        ("POST", "/connectors", {"name": unique("x"), "config": source_config(topic)}),
        ("PUT", f"/connectors/{name}/config", source_config(topic)),
        ("POST", f"/connectors/{name}/restart", None),
        ("POST", f"/connectors/{name}/restart?includeTasks=true", None),
        ("POST", f"/connectors/{name}/tasks/0/restart", None),
        ("PUT", f"/connectors/{name}/pause", None),
        ("PUT", f"/connectors/{name}/resume", None),
        ("PUT", f"/connectors/{name}/stop", None),
        ("DELETE", f"/connectors/{name}", None),
        ("PATCH", f"/connectors/{name}/offsets", offsets_body),
        ("DELETE", f"/connectors/{name}/offsets", None),
    ]
    for method, path, body in changes:
        response = client.request(method, path, json=body)
        assert (response.status_code, response.json()) == (409, REBALANCING), (method, path)
    assert client.get(f"/connectors/{name}").status_code == 200
    assert client.get("/connectors").json() == [name]
    assignment.assign()
    assert client.put(f"/connectors/{name}/pause").status_code == 202


# -- lifecycle -------------------------------------------------------------------------------


def test_pause_and_resume_show_in_status(client: TestClient, topic: str) -> None:
    name = unique("src")
    create(client, name, source_config(topic, **{"tasks.max": 2}))
    wait_for(lambda: states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"]), "running")
    response = client.put(f"/connectors/{name}/pause")
    assert response.status_code == 202 and response.content == b""
    assert states(client, name) == ("PAUSED", ["PAUSED", "PAUSED"])
    assert client.put(f"/connectors/{name}/pause").status_code == 202  # idempotent
    response = client.put(f"/connectors/{name}/resume")
    assert response.status_code == 202 and response.content == b""
    assert states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"])


def test_stop_keeps_the_config_and_resume_starts_again(client: TestClient, topic: str) -> None:
    name = unique("src")
    create(client, name, source_config(topic, **{"tasks.max": 2}))
    response = client.put(f"/connectors/{name}/stop")
    assert response.status_code == 204 and response.content == b""
    assert states(client, name) == ("STOPPED", [])
    assert client.get(f"/connectors/{name}/tasks").json() == []
    assert client.get(f"/connectors/{name}").json()["tasks"] == []
    assert client.get(f"/connectors/{name}/config").json()["topic"] == topic
    assert client.put(f"/connectors/{name}/stop").status_code == 204  # idempotent
    assert client.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"]), "running")
    client.put(f"/connectors/{name}/stop")
    assert client.put(f"/connectors/{name}/pause").status_code == 202  # a stopped one starts
    wait_for(lambda: states(client, name) == ("PAUSED", ["PAUSED", "PAUSED"]), "paused")


@pytest.mark.parametrize("state", ["PAUSED", "STOPPED"])
def test_initial_state(client: TestClient, topic: str, state: str) -> None:
    name = unique("src")
    info = create(client, name, source_config(topic), initial_state=state)
    assert len(info["tasks"]) == (0 if state == "STOPPED" else 1)
    assert states(client, name)[0] == state


def test_restart_answers_kafka_3_0_bodies(client: TestClient, topic: str) -> None:
    name = unique("src")
    create(client, name, source_config(topic, **{"tasks.max": 2, "fail.task": 1}))
    wait_for(lambda: states(client, name) == ("RUNNING", ["RUNNING", "FAILED"]), "task 1 failed")
    failed = client.get(f"/connectors/{name}/tasks/1/status").json()
    assert failed["state"] == "FAILED"
    assert "task 1 fails on purpose" in failed["trace"]

    plain = client.post(f"/connectors/{name}/restart")
    assert plain.status_code == 204 and plain.content == b""

    only_failed = client.post(f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true")
    assert only_failed.status_code == 202
    body = only_failed.json()
    assert body["name"] == name and body["type"] == "source"
    assert body["connector"]["state"] == "RUNNING"
    assert [(t["id"], t["state"]) for t in body["tasks"]] == [(0, "RUNNING"), (1, "RESTARTING")]

    connector_only = client.post(f"/connectors/{name}/restart?onlyFailed=true")
    assert connector_only.status_code == 202
    assert connector_only.json()["connector"]["state"] == "RUNNING"  # it had not failed

    everything = client.post(f"/connectors/{name}/restart?includeTasks=true")
    assert everything.status_code == 202
    body = everything.json()
    assert body["connector"]["state"] == "RESTARTING"
    assert [t["state"] for t in body["tasks"]] == ["RESTARTING", "RESTARTING"]
    wait_for(lambda: states(client, name) == ("RUNNING", ["RUNNING", "FAILED"]), "restarted")
