"""Kafka Connect's REST API (connect/rest.py) against a real worker and broker.

Each test runs its own Worker and Herder on the shared broker; connector names (and so sink
groups ``connect-<name>``) and topics are fresh per test. The plugins are
``tests.connect.plugins_for_tests``, loaded by dotted path as a user's would be.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from fastapi.testclient import TestClient

from sluice.connect.herder import Herder
from sluice.connect.offsets import FileOffsetStore
from sluice.connect.rest import create_app, serve
from sluice.connect.worker import Worker
from tests.conftest import BrokerProcess, create_topic, free_port
from tests.connect.plugins_for_tests import RECEIVED, CollectingSink, CountingSource

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
    worker = Worker(
        {"bootstrap.servers": shared_broker.bootstrap, "offset.flush.interval.ms": 100},
        FileOffsetStore(tmp_path / "offsets.json"),
    )
    try:
        yield Herder(worker, plugins=[CountingSource, CollectingSink], timeout_s=10)
    finally:
        worker.stop()


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


def test_every_change_is_409_while_rebalancing(
    client: TestClient, herder: Herder, topic: str
) -> None:
    name = unique("src")
    create(client, name, source_config(topic))
    herder.rebalancing = True
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
    herder.rebalancing = False
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


# -- offsets ---------------------------------------------------------------------------------

NEEDS_STOP = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be "
    "done for the specified connector by issuing a 'PUT' request to the "
    "'/connectors/{name}/stop' endpoint"
)
ALTERED = (
    "The Connect framework-managed offsets for this connector have been altered successfully. "
    "However, if this connector manages offsets externally, they will need to be manually "
    "altered in the system that the connector uses."
)
RESET = (
    "The Connect framework-managed offsets for this connector have been reset successfully. "
    "However, if this connector manages offsets externally, they will need to be manually "
    "reset in the system that the connector uses."
)


def collected(name: str, count: int) -> Callable[[], list[Any] | None]:
    return lambda: list(RECEIVED[name]) if len(RECEIVED[name]) >= count else None


def test_source_offsets(client: TestClient, topic: str) -> None:
    name = unique("src")
    create(client, name, source_config(topic, count=3))
    wait_for(counted(client, name, 3), "three records")
    assert offsets(client, name) == [{"partition": {"task": 0}, "offset": {"n": 3}}]

    one = {"offsets": [{"partition": {"task": 0}, "offset": {"n": 1}}]}
    refused = client.patch(f"/connectors/{name}/offsets", json=one)
    assert refused.status_code == 400
    assert refused.json() == {"error_code": 400, "message": NEEDS_STOP.format(name=name)}
    client.put(f"/connectors/{name}/pause")
    assert client.delete(f"/connectors/{name}/offsets").status_code == 400  # paused is not enough

    assert client.put(f"/connectors/{name}/stop").status_code == 204
    altered = client.patch(f"/connectors/{name}/offsets", json=one)
    assert altered.status_code == 200, altered.text
    assert altered.json() == {"message": ALTERED}
    assert offsets(client, name) == [{"partition": {"task": 0}, "offset": {"n": 1}}]
    for bad in ({}, {"offsets": []}, {"offsets": [{"offset": {"n": 1}}]}, [1]):
        answer = client.patch(f"/connectors/{name}/offsets", json=bad)
        assert answer.status_code == 400, (bad, answer.text)

    # The sink reads what the source wrote: 0-0 0-1 0-2, then 0-1 0-2 again from n=1.
    sink = unique("sink")
    create(client, sink, {"connector.class": SINK, "topics": topic})
    wait_for(collected(sink, 3), "the first three records")
    client.put(f"/connectors/{name}/resume")
    values = wait_for(collected(sink, 5), "the records after the altered offset")
    assert values == ["0-0", "0-1", "0-2", "0-1", "0-2"]
    wait_for(counted(client, name, 3), "the offset back at three")

    client.put(f"/connectors/{name}/stop")
    reset = client.delete(f"/connectors/{name}/offsets")
    assert reset.status_code == 200
    assert reset.json() == {"message": RESET}
    assert offsets(client, name) == []


def test_sink_offsets(client: TestClient, topic: str) -> None:
    source = unique("src")
    create(client, source, source_config(topic, count=3))
    wait_for(counted(client, source, 3), "three records")
    sink = unique("sink")
    create(client, sink, {"connector.class": SINK, "topics": topic})
    wait_for(collected(sink, 3), "three records in the sink")
    partition = {"kafka_topic": topic, "kafka_partition": 0}
    wait_for(
        lambda: offsets(client, sink) == [{"partition": partition, "offset": {"kafka_offset": 3}}],
        "the sink's committed offset",
    )

    one = {"offsets": [{"partition": partition, "offset": {"kafka_offset": 1}}]}
    assert client.patch(f"/connectors/{sink}/offsets", json=one).status_code == 400
    assert client.put(f"/connectors/{sink}/stop").status_code == 204
    altered = client.patch(f"/connectors/{sink}/offsets", json=one)
    assert altered.status_code == 200, altered.text
    assert altered.json() == {"message": ALTERED}
    assert offsets(client, sink) == [{"partition": partition, "offset": {"kafka_offset": 1}}]
    bad = {"offsets": [{"partition": {"kafka_topic": topic}, "offset": {"kafka_offset": 1}}]}
    assert client.patch(f"/connectors/{sink}/offsets", json=bad).status_code == 400
    negative = {"offsets": [{"partition": partition, "offset": {"kafka_offset": -1}}]}
    assert client.patch(f"/connectors/{sink}/offsets", json=negative).status_code == 400

    client.put(f"/connectors/{sink}/resume")
    values = wait_for(collected(sink, 5), "the records after the altered offset")
    assert values == ["0-0", "0-1", "0-2", "0-1", "0-2"]

    client.put(f"/connectors/{sink}/stop")
    reset = client.delete(f"/connectors/{sink}/offsets")
    assert reset.status_code == 200 and reset.json() == {"message": RESET}
    assert offsets(client, sink) == []
    assert client.delete(f"/connectors/{sink}/offsets").status_code == 200  # no group: fine
    removed = {"offsets": [{"partition": partition, "offset": None}]}
    assert client.patch(f"/connectors/{sink}/offsets", json=removed).status_code == 200
    assert offsets(client, sink) == [{"partition": partition, "offset": {"kafka_offset": 0}}]


# -- plugins and validation ------------------------------------------------------------------


def test_connector_plugins(client: TestClient) -> None:
    response = client.get("/connector-plugins")
    assert response.status_code == 200
    plugins = response.json()
    assert {"class": SOURCE, "type": "source", "version": "0.0.1"} in plugins
    assert {"class": SINK, "type": "sink", "version": "1.0"} in plugins
    assert {p["type"] for p in plugins} <= {"source", "sink"}
    everything = client.get("/connector-plugins?connectorsOnly=false").json()
    assert {p["type"] for p in everything} == {
        "source",
        "sink",
        "transformation",
        "predicate",
        "converter",
    }
    assert {
        "class": "org.apache.kafka.connect.transforms.InsertField$Value",
        "type": "transformation",
        "version": everything[-1]["version"],
    } in everything

    for plugin in (SOURCE, "CountingSource"):
        definitions = client.get(f"/connector-plugins/{plugin}/config")
        assert definitions.status_code == 200
        assert definitions.json()[0] == {
            "name": "topic",
            "type": "STRING",
            "required": True,
            "default_value": None,
            "importance": "HIGH",
            "documentation": "Topic to write to.",
        }
    unknown = client.get("/connector-plugins/NoSuchConnector/config")
    assert unknown.status_code == 404
    assert unknown.json()["error_code"] == 404


def test_validate_answers_config_infos(client: TestClient, topic: str) -> None:
    body = {"connector.class": SOURCE, "name": "v", "count": "-1", "api.key": "s3cret"}
    response = client.put("/connector-plugins/CountingSource/config/validate", json=body)
    assert response.status_code == 200, response.text
    infos = response.json()
    assert set(infos) == {"name", "error_count", "groups", "configs"}
    assert infos["name"] == SOURCE
    assert infos["error_count"] == 2
    assert infos["groups"] == ["Common", "Error Handling"]
    configs = {c["value"]["name"]: c for c in infos["configs"]}
    assert configs["topic"] == {
        "definition": {
            "name": "topic",
            "type": "STRING",
            "required": True,
            "default_value": None,
            "importance": "HIGH",
            "documentation": "Topic to write to.",
            "group": None,
            "order": -1,
            "width": "NONE",
            "display_name": "topic",
            "dependents": [],
        },
        "value": {
            "name": "topic",
            "value": None,
            "recommended_values": [],
            "errors": ["missing required configuration (Topic to write to.)"],
            "visible": True,
        },
    }
    assert configs["count"]["value"]["errors"] == ["must be at least 0, got -1"]
    assert configs["api.key"]["value"]["value"] == "[hidden]"
    assert configs["api.key"]["definition"]["type"] == "PASSWORD"
    assert configs["tasks.max"]["value"]["value"] == "1"
    assert configs["tasks.max"]["definition"]["group"] == "Common"
    assert configs["errors.tolerance"]["definition"]["group"] == "Error Handling"

    fine = client.put(f"/connector-plugins/{SOURCE}/config/validate", json={"topic": topic})
    assert fine.status_code == 200
    assert fine.json()["error_count"] == 1  # "name" is required too, as in Kafka
    named = {"topic": topic, "name": "v", "transforms": "x"}
    broken = client.put("/connector-plugins/CountingSource/config/validate", json=named).json()
    assert broken["error_count"] == 1
    assert any(
        "transforms.x" in c["value"]["name"] for c in broken["configs"] if c["value"]["errors"]
    )

    mismatch = client.put(
        "/connector-plugins/CollectingSink/config/validate", json={"connector.class": SOURCE}
    )
    assert mismatch.status_code == 400
    assert mismatch.json()["message"] == (
        f"Included connector type {SOURCE} does not match request type CollectingSink"
    )


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
