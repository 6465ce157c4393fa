"""Kafka Connect's REST API: the root, creating, reading, configuring and deleting connectors,
errors, and serving in a thread (fixtures in tests/connect/rest_fixtures.py).
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from sluice.connect.rest import serve
from sluice.connect.runtime.herder import Herder
from tests.conftest import free_port
from tests.connect.rest_fixtures import (
    SOURCE,
    counted,
    create,
    source_config,
    states,
    status,
    unique,
    wait_for,
)

# -- the root, listing and reading -----------------------------------------------------------


def test_root_names_version_commit_and_cluster(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"version", "commit", "kafka_cluster_id"}
    assert isinstance(body["kafka_cluster_id"], str) and body["kafka_cluster_id"]


def test_create_then_read_every_view_of_a_connector(client: TestClient, topic: str) -> None:
    name = unique("src")
    config = source_config(topic, **{"tasks.max": 2, "api.key": "s3cret"})
    response = client.post("/connectors", json={"name": name, "config": config})
    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"/connectors/{name}"
    shown = {
        "connector.class": SOURCE,
        "topic": topic,
        "tasks.max": "2",
        "api.key": "[hidden]",
        "name": name,
    }
    info = {
        "name": name,
        "config": shown,
        "tasks": [{"connector": name, "task": 0}, {"connector": name, "task": 1}],
        "type": "source",
    }
    assert response.json() == info
    assert client.get("/connectors").json() == [name]
    assert client.get(f"/connectors/{name}").json() == info
    assert client.get(f"/connectors/{name}/config").json() == shown

    tasks = client.get(f"/connectors/{name}/tasks").json()
    assert [t["id"] for t in tasks] == [
        {"connector": name, "task": 0},
        {"connector": name, "task": 1},
    ]
    assert all(t["config"]["api.key"] == "[hidden]" for t in tasks)
    assert [t["config"]["task.index"] for t in tasks] == ["0", "1"]

    wait_for(lambda: states(client, name) == ("RUNNING", ["RUNNING", "RUNNING"]), "running")
    body = status(client, name)
    worker_id = body["connector"]["worker_id"]
    assert body == {
        "name": name,
        "connector": {"state": "RUNNING", "worker_id": worker_id},
        "tasks": [
            {"id": 0, "state": "RUNNING", "worker_id": worker_id},
            {"id": 1, "state": "RUNNING", "worker_id": worker_id},
        ],
        "type": "source",
    }
    task = client.get(f"/connectors/{name}/tasks/1/status")
    assert task.status_code == 200
    assert task.json() == {"id": 1, "state": "RUNNING", "worker_id": worker_id}
    missing = client.get(f"/connectors/{name}/tasks/5/status")
    assert missing.status_code == 404
    assert missing.json() == {"error_code": 404, "message": f"No status found for task {name}-5"}


def test_list_expands_status_and_info(client: TestClient, topic: str) -> None:
    names = sorted(unique("src") for _ in range(2))
    for name in names:
        create(client, name, source_config(topic))
    assert client.get("/connectors").json() == names
    by_status = client.get("/connectors", params={"expand": "status"}).json()
    assert sorted(by_status) == names
    assert all(set(entry) == {"status"} for entry in by_status.values())
    assert by_status[names[0]]["status"]["name"] == names[0]
    both = client.get("/connectors?expand=status&expand=info").json()
    assert all(set(entry) == {"status", "info"} for entry in both.values())
    assert both[names[1]]["info"]["config"]["topic"] == topic
    assert client.get("/connectors?expand=everything").json() == {n: {} for n in names}


# -- errors ----------------------------------------------------------------------------------

UNKNOWN = [
    ("GET", "/connectors/nope"),
    ("GET", "/connectors/nope/config"),
    ("GET", "/connectors/nope/status"),
    ("GET", "/connectors/nope/tasks"),
    ("GET", "/connectors/nope/tasks/0/status"),
    ("POST", "/connectors/nope/restart"),
    ("POST", "/connectors/nope/restart?includeTasks=true"),
    ("POST", "/connectors/nope/tasks/0/restart"),
    ("PUT", "/connectors/nope/pause"),
    ("PUT", "/connectors/nope/resume"),
    ("PUT", "/connectors/nope/stop"),
    ("DELETE", "/connectors/nope"),
    ("GET", "/connectors/nope/offsets"),
    ("DELETE", "/connectors/nope/offsets"),
]


@pytest.mark.parametrize(("method", "path"), UNKNOWN)
def test_unknown_connector_is_404(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, path)
    assert response.status_code == 404, response.text
    assert response.json() == {"error_code": 404, "message": "Connector nope not found"}


def test_patch_offsets_of_unknown_connector_is_404(client: TestClient) -> None:
    body = {"offsets": [{"partition": {"a": 1}, "offset": {"b": 2}}]}
    response = client.patch("/connectors/nope/offsets", json=body)
    assert response.status_code == 404
    assert response.json()["message"] == "Connector nope not found"


def test_invalid_configs_are_400_naming_every_problem(client: TestClient, topic: str) -> None:
    response = client.post(
        "/connectors",
        json={"name": "bad", "config": {"connector.class": SOURCE, "count": "-1"}},
    )
    assert response.status_code == 400
    message = response.json()["message"]
    assert response.json()["error_code"] == 400
    assert message.startswith(
        "Connector configuration is invalid and contains the following 2 error(s):\n"
    ), message
    assert "\ntopic: missing required configuration" in message
    assert "\ncount: must be at least 0, got -1" in message
    assert message.endswith(
        "You can also find the above list of errors at the endpoint "
        "`/connector-plugins/{connectorType}/config/validate`"
    )
    assert client.get("/connectors").json() == []

    def refused(body: Any) -> str:
        answer = client.post("/connectors", json=body)
        assert answer.status_code == 400, answer.text
        assert answer.json()["error_code"] == 400
        return str(answer.json()["message"])

    assert "tasks.max: must be at least 1" in refused(
        {"name": "bad", "config": source_config(topic, **{"tasks.max": "0"})}
    )
    assert "contains no connector type" in refused({"name": "bad", "config": {"topic": topic}})
    assert "Failed to find any class" in refused(
        {"name": "bad", "config": {"connector.class": "no.such.Connector"}}
    )
    assert "doesn't match connector name in the URL" in refused(
        {"name": "bad", "config": source_config(topic, name="other")}
    )
    assert "name: must not be empty" in refused({"name": " ", "config": source_config(topic)})
    assert "config" in refused({"name": "bad"})
    assert "initial state" in refused(
        {"name": "bad", "config": source_config(topic), "initial_state": "SLEEPING"}
    )
    malformed = client.post(
        "/connectors", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 400
    assert malformed.json()["error_code"] == 400
    assert client.get("/connectors").json() == []


def test_duplicate_connector_is_409(client: TestClient, topic: str) -> None:
    name = unique("src")
    create(client, name, source_config(topic))
    again = client.post("/connectors", json={"name": name, "config": source_config(topic)})
    assert again.status_code == 409
    assert again.json() == {"error_code": 409, "message": f"Connector {name} already exists"}


def test_unknown_path_and_method_answer_kafka_errors(client: TestClient) -> None:
    response = client.get("/no/such/path")
    assert response.status_code == 404
    assert response.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    wrong = client.patch("/connectors")
    assert wrong.status_code == 405
    assert wrong.json() == {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}


def test_unexpected_failure_is_500(
    client: TestClient, herder: Herder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom() -> list[str]:
        raise RuntimeError("boom")

    monkeypatch.setattr(herder, "connectors", boom)
    response = client.get("/connectors")
    assert response.status_code == 500
    assert response.json() == {"error_code": 500, "message": "boom"}


def test_put_config_creates_then_reconfigures(client: TestClient, topic: str) -> None:
    name = unique("src")
    created = client.put(f"/connectors/{name}/config", json=source_config(topic, count=2))
    assert created.status_code == 201, created.text
    assert created.headers["location"] == f"/connectors/{name}"
    assert created.json()["config"]["count"] == "2"
    wait_for(counted(client, name, 2), "two records")

    updated = client.put(f"/connectors/{name}/config", json=source_config(topic, count=4))
    assert updated.status_code == 200, updated.text
    assert updated.json()["name"] == name
    assert updated.json()["config"]["count"] == "4"
    assert client.get(f"/connectors/{name}/config").json()["count"] == "4"
    wait_for(counted(client, name, 4), "the new config to count on to four")

    client.put(f"/connectors/{name}/pause")
    client.put(f"/connectors/{name}/config", json=source_config(topic, count=5))
    assert states(client, name)[0] == "PAUSED"  # a new config keeps the target state

    invalid = client.put(f"/connectors/{name}/config", json=source_config(topic, count=-5))
    assert invalid.status_code == 400
    assert "count: must be at least 0" in invalid.json()["message"]
    assert client.get(f"/connectors/{name}/config").json()["count"] == "5"
    mismatch = client.put(f"/connectors/{name}/config", json=source_config(topic, name="x"))
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == (
        f"Connector name configuration (x) doesn't match connector name in the URL ({name})"
    )


def test_task_restart(client: TestClient, topic: str) -> None:
    name = unique("src")
    create(client, name, source_config(topic, **{"tasks.max": 2}))
    client.put(f"/connectors/{name}/pause")
    response = client.post(f"/connectors/{name}/tasks/1/restart")
    assert response.status_code == 204 and response.content == b""
    wait_for(lambda: states(client, name) == ("PAUSED", ["PAUSED", "PAUSED"]), "still paused")
    missing = client.post(f"/connectors/{name}/tasks/9/restart")
    assert missing.status_code == 404
    assert missing.json() == {"error_code": 404, "message": f"Task {name}-9 not found"}


def test_delete(client: TestClient, topic: str) -> None:
    name = unique("src")
    create(client, name, source_config(topic))
    response = client.delete(f"/connectors/{name}")
    assert response.status_code == 204 and response.content == b""
    assert client.get("/connectors").json() == []
    assert client.get(f"/connectors/{name}").status_code == 404
    create(client, name, source_config(topic))  # the name is free again


# -- the server ------------------------------------------------------------------------------


def test_serve_in_a_thread_and_stop_cleanly(herder: Herder, topic: str) -> None:
    with serve(herder, "127.0.0.1", 0) as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        with httpx2.Client(base_url=server.url, timeout=10) as http:
            assert http.get("/").status_code == 200
            name = unique("src")
            answer = http.post("/connectors", json={"name": name, "config": source_config(topic)})
            assert answer.status_code == 201
            assert http.get("/connectors").json() == [name]
        with pytest.raises(OSError):
            serve(herder, "127.0.0.1", server.port)
    assert not server.thread.is_alive()
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(server.url + "/", timeout=2)
    port = free_port()
    with serve(herder, "127.0.0.1", port) as again:
        assert httpx2.get(f"http://127.0.0.1:{port}/connectors", timeout=10).status_code == 200
    assert not again.thread.is_alive()
