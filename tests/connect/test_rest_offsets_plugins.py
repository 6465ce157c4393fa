"""Kafka Connect's REST API: connector offsets, connector plugins and config validation
(fixtures in tests/connect/rest_fixtures.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from tests.connect.plugins_for_tests import RECEIVED
from tests.connect.rest_fixtures import (
    SINK,
    SOURCE,
    counted,
    create,
    offsets,
    source_config,
    unique,
    wait_for,
)

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
