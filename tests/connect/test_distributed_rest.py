"""Distributed mode through the REST API, with workers in this process on the real broker.

Two distributed workers (:func:`~sluice.connect.runtime.distributed.cluster_worker`) join one
group (fresh topics and group per test); requests go to either worker's REST API and take
effect wherever the connector's slots put the work. The records written to ``connect-configs``
and ``connect-status`` are Kafka Connect's.
"""

from __future__ import annotations

from typing import Any

from tests.conftest import BrokerProcess
from tests.connect.cluster_fixtures import BAD_TASKS, Cluster, topic_records
from tests.connect.rest_fixtures import (
    REBALANCING,
    counted,
    create,
    offsets,
    source_config,
    states,
    unique,
    wait_for,
)


def test_changes_are_refused_with_409_until_the_worker_has_joined(cluster: Cluster) -> None:
    worker, client = cluster("")  # made, not started: not a member of the group yet
    assert worker.rebalancing
    response = client.post(
        "/connectors", json={"name": "early", "config": source_config("t", count=1)}
    )
    assert (response.status_code, response.json()) == (409, REBALANCING)
    assert client.get("/connectors").json() == []  # reads are served meanwhile
    worker.start("127.0.0.1:1")
    wait_for(lambda: not worker.rebalancing, "the worker to join")
    assert (
        client.post(
            "/connectors", json={"name": "early", "config": source_config("t", count=1)}
        ).status_code
        == 201
    )


def test_work_spreads_over_two_workers_and_any_worker_answers(
    cluster: Cluster, shared_broker: BrokerProcess
) -> None:
    first, one = cluster("worker-a:8083")
    second, two = cluster("worker-b:8083")
    wait_for(lambda: not first.rebalancing and not second.rebalancing, "both to have slots")
    topic = unique("dist")
    name = unique("counting")
    info = create(one, name, source_config(topic, count=5, **{"tasks.max": "4"}))
    assert info["name"] == name and info["type"] == "source"

    def all_running() -> dict[str, Any] | None:
        body = two.get(f"/connectors/{name}/status").json()
        tasks = body["tasks"]
        ok = len(tasks) == 4 and all(t["state"] == "RUNNING" for t in tasks)
        return body if ok and body["connector"]["state"] == "RUNNING" else None

    status = wait_for(all_running, "4 running tasks, seen from the other worker")
    assert {t["worker_id"] for t in status["tasks"]} == {"worker-a:8083", "worker-b:8083"}
    assert [t["id"] for t in status["tasks"]] == [0, 1, 2, 3]
    committed = [{"partition": {"task": i}, "offset": {"n": 5}} for i in range(4)]
    wait_for(
        lambda: sorted(offsets(one, name), key=str) == committed,
        "every task to commit its 5 records",
    )
    tasks = one.get(f"/connectors/{name}/tasks").json()
    assert [t["id"] for t in tasks] == [{"connector": name, "task": i} for i in range(4)]

    # Kafka Connect's records in the config and status topics
    configs = topic_records(shared_broker.bootstrap, first.configs.map.topic)
    assert configs[f"connector-{name}"]["properties"]["tasks.max"] == "4"
    assert configs[f"target-state-{name}"] == {"state": "RUNNING", "state.v2": "RUNNING"}
    assert configs[f"commit-{name}"] == {"tasks": 4}
    assert set(configs[f"task-{name}-3"]["properties"]) >= {"connector.class", "topic"}
    statuses = topic_records(shared_broker.bootstrap, first.status.map.topic)
    assert statuses[f"status-task-{name}-0"]["state"] == "RUNNING"
    assert set(statuses[f"status-connector-{name}"]) == {
        "state",
        "trace",
        "worker_id",
        "generation",
    }


def test_pause_resume_stop_offsets_and_delete_across_workers(cluster: Cluster) -> None:
    first, one = cluster("worker-a:8083")
    second, two = cluster("worker-b:8083")
    wait_for(lambda: not first.rebalancing and not second.rebalancing, "both to have slots")
    name = unique("counting")
    create(one, name, source_config(unique("dist"), count=3, **{"tasks.max": "2"}))
    wait_for(lambda: states(two, name) == ("RUNNING", ["RUNNING"] * 2), "running")

    assert two.put(f"/connectors/{name}/pause").status_code == 202
    wait_for(lambda: states(one, name) == ("PAUSED", ["PAUSED"] * 2), "paused")
    assert one.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: states(two, name) == ("RUNNING", ["RUNNING"] * 2), "resumed")
    wait_for(counted(one, name, 3), "the records committed")

    # offsets may change only once the connector is STOPPED and has no tasks
    patch = {"offsets": [{"partition": {"task": 0}, "offset": {"n": 1}}]}
    assert two.patch(f"/connectors/{name}/offsets", json=patch).status_code == 400
    assert one.put(f"/connectors/{name}/stop").status_code == 204
    wait_for(lambda: states(two, name) == ("STOPPED", []), "stopped, with no tasks")
    assert one.get(f"/connectors/{name}/tasks").json() == []
    response = two.patch(f"/connectors/{name}/offsets", json=patch)
    assert response.status_code == 200, response.text
    altered = {"partition": {"task": 0}, "offset": {"n": 1}}
    wait_for(lambda: altered in offsets(one, name), "the other worker to read the new offset")

    assert one.put(f"/connectors/{name}/resume").status_code == 202
    wait_for(lambda: states(two, name) == ("RUNNING", ["RUNNING"] * 2), "started again")
    assert two.delete(f"/connectors/{name}").status_code == 204
    wait_for(lambda: name not in one.get("/connectors").json(), "deleted everywhere")
    assert one.get(f"/connectors/{name}/status").status_code == 404
    wait_for(lambda: not first.tasks and not second.tasks, "the tasks stopped")


def test_restarts_reach_the_worker_running_the_task(cluster: Cluster) -> None:
    first, one = cluster("worker-a:8083")
    second, two = cluster("worker-b:8083")
    wait_for(lambda: not first.rebalancing and not second.rebalancing, "both to have slots")
    name = unique("failing")
    config = source_config(unique("dist"), count=1, **{"tasks.max": "2", "fail.task": "1"})
    create(two, name, config)
    wait_for(lambda: states(one, name) == ("RUNNING", ["RUNNING", "FAILED"]), "task 1 failed")
    failed = one.get(f"/connectors/{name}/tasks/1/status").json()
    assert "RuntimeError" in failed["trace"] or "Error" in failed["trace"]

    owner = first if (name, 1) in first.tasks else second
    before = owner.tasks[(name, 1)]
    response = one.post(f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true")
    assert response.status_code == 202
    body = response.json()
    assert body["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in body["tasks"]] == ["RUNNING", "RESTARTING"]
    wait_for(lambda: owner.tasks.get((name, 1)) not in (None, before), "task 1 restarted")

    assert two.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    assert two.post(f"/connectors/{name}/tasks/7/restart").status_code == 404
    assert one.post("/connectors/nobody/restart").status_code == 404


def test_invalid_configs_are_refused_with_400_and_nothing_is_written(cluster: Cluster) -> None:
    worker, client = cluster("worker-a:8083")
    response = client.post(
        "/connectors", json={"name": "bad", "config": source_config("t", count="many")}
    )
    assert response.status_code == 400
    assert "count" in response.json()["message"]
    assert worker.configs.connectors() == []
    name = unique("counting")
    create(client, name, source_config(unique("dist"), count=1))
    assert (
        client.post("/connectors", json={"name": name, "config": source_config("t")}).status_code
        == 409
    )


def test_a_task_that_cannot_be_made_shows_failed_with_the_reason(cluster: Cluster) -> None:
    worker, client = cluster("worker-a:8083")
    name = unique("counting")
    config = {**source_config(unique("dist"), count=1), "connector.class": BAD_TASKS}
    response = client.post("/connectors", json={"name": name, "config": config})
    assert response.status_code == 201, response.text
    wait_for(lambda: states(client, name) == ("RUNNING", ["FAILED"]), "the task to fail")
    trace = client.get(f"/connectors/{name}/tasks/0/status").json()["trace"]
    assert "no.such.Converter" in trace
    assert client.post(f"/connectors/{name}/tasks/0/restart").status_code == 204
    wait_for(lambda: (name, 0) in worker.broken, "tried again, failing again")
