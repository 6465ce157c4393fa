"""The REST API in process, over the in-memory log: Confluent's error bodies for bad paths,
bodies and content types, and Hypothesis over random bodies (never a 500)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.schema_registry.api import CONTENT_TYPE, create_app
from sluice.schema_registry.log import MemoryLog
from sluice.schema_registry.registry import SchemaRegistry
from sluice.schema_registry.store import Store

RECORD = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


@pytest.fixture
def api() -> Iterator[TestClient]:
    with TestClient(create_app(SchemaRegistry(MemoryLog(Store())))) as client:
        yield client


def error(response: Any) -> tuple[int, int]:
    body = response.json()
    assert set(body) == {"error_code", "message"}, body
    assert response.headers["content-type"] == CONTENT_TYPE
    return response.status_code, body["error_code"]


def test_content_types_confluent_accepts(api: TestClient) -> None:
    for kind in (
        CONTENT_TYPE,
        "application/vnd.schemaregistry+json",
        "application/json",
        "application/octet-stream",
    ):
        response = api.post(
            "/subjects/s/versions",
            content=json.dumps({"schema": RECORD}),
            headers={"Content-Type": kind},
        )
        assert response.status_code == 200, (kind, response.text)
        assert response.json() == {"id": 1}
    refused = api.post(
        "/subjects/s/versions", content=RECORD, headers={"Content-Type": "text/plain"}
    )
    assert error(refused) == (415, 415)


def test_root_and_types(api: TestClient) -> None:
    assert api.get("/").json() == {}
    assert "AVRO" in api.get("/schemas/types").json()


@pytest.mark.parametrize(
    ("method", "path", "body", "expected"),
    [
        ("GET", "/subjects/nope/versions", None, (404, 40401)),
        ("GET", "/subjects/nope/versions/1", None, (404, 40401)),
        ("GET", "/subjects/s/versions/0", None, (422, 42202)),
        ("GET", "/subjects/s/versions/one", None, (422, 42202)),
        ("GET", "/subjects/s/versions/2", None, (404, 40402)),
        ("GET", "/schemas/ids/77", None, (404, 40403)),
        ("GET", "/schemas/ids/x", None, (404, 40403)),
        ("POST", "/subjects/nope", {"schema": RECORD}, (404, 40401)),
        ("POST", "/subjects/s", {"schema": '"int"'}, (404, 40403)),
        ("DELETE", "/subjects/nope", None, (404, 40401)),
        ("DELETE", "/subjects/s/versions/5", None, (404, 40402)),
        ("PUT", "/config", {"compatibility": "SIDEWAYS"}, (422, 42203)),
        ("PUT", "/config", {"compatibility": "FULL", "colour": "red"}, (422, 422)),
        ("PUT", "/mode", {"mode": "WRITEONLY"}, (422, 42204)),
        ("GET", "/config/s", None, (404, 40408)),
        ("GET", "/mode/s", None, (404, 40409)),
        ("DELETE", "/mode/s", None, (404, 40409)),
        ("POST", "/subjects/t/versions", {"schema": ""}, (422, 42201)),
        ("POST", "/subjects/t/versions", {"schema": "{not avro"}, (422, 42201)),
        ("POST", "/subjects/t/versions", {"schema": RECORD, "schemaType": "XML"}, (422, 42201)),
        ("POST", "/subjects/t/versions", {"schema": 5}, (422, 422)),
        ("POST", "/subjects/t/versions", {"schema": RECORD, "references": {}}, (422, 422)),
        ("POST", "/subjects/t/versions", ["schema"], (422, 422)),
        ("GET", "/no/such/path", None, (404, 404)),
    ],
)
def test_refusals_have_confluent_codes(
    api: TestClient, method: str, path: str, body: Any, expected: tuple[int, int]
) -> None:
    assert api.post("/subjects/s/versions", json={"schema": RECORD}).status_code == 200
    response = api.request(method, path, json=body)
    assert error(response) == expected, response.text


def test_unparsable_json_is_400(api: TestClient) -> None:
    response = api.post(
        "/subjects/s/versions", content=b"{nope", headers={"Content-Type": CONTENT_TYPE}
    )
    assert error(response) == (400, 400)


def test_unknown_fields_refused_unless_the_client_accepts_them(api: TestClient) -> None:
    body = {"schema": RECORD, "futureField": 1}
    assert error(api.post("/subjects/s/versions", json=body)) == (422, 422)
    accepted = api.post(
        "/subjects/s/versions",
        json=body,
        headers={"Confluent-Accept-Unknown-Properties": "true"},
    )
    assert accepted.json() == {"id": 1}


def test_global_config_delete_returns_to_backward(api: TestClient) -> None:
    assert api.put("/config", json={"compatibility": "full"}).json() == {"compatibility": "FULL"}
    assert api.get("/config").json() == {"compatibilityLevel": "FULL"}
    assert api.delete("/config").json() == {"compatibilityLevel": "FULL"}
    assert api.get("/config").json() == {"compatibilityLevel": "BACKWARD"}
    assert api.get("/config/s?defaultToGlobal=true").json() == {"compatibilityLevel": "BACKWARD"}


def test_paging_and_prefix(api: TestClient) -> None:
    for subject in ("a-1", "a-2", "b-1"):
        api.post(f"/subjects/{subject}/versions", json={"schema": RECORD})
    assert api.get("/subjects?subjectPrefix=a-").json() == ["a-1", "a-2"]
    assert api.get("/subjects?offset=1&limit=1").json() == ["a-2"]
    assert api.get("/schemas/ids/1/subjects").json() == ["a-1", "a-2", "b-1"]
    assert api.get("/schemas/ids/1/versions?subject=b-1").json() == [
        {"subject": "b-1", "version": 1}
    ]


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
BODIES = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries(
        {"schema": JSON_VALUES | st.text(max_size=60)},
        optional={
            "schemaType": st.sampled_from(["AVRO", "JSON", "PROTOBUF", "avro", "?"]) | JSON_VALUES,
            "references": JSON_VALUES
            | st.lists(
                st.fixed_dictionaries(
                    {"name": JSON_VALUES, "subject": JSON_VALUES, "version": JSON_VALUES}
                ),
                max_size=2,
            ),
            "id": JSON_VALUES,
            "version": JSON_VALUES,
        },
    ),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(body=BODIES, raw=st.binary(max_size=40))
def test_random_bodies_never_crash_the_registry(api: TestClient, body: Any, raw: bytes) -> None:
    for response in (
        api.post("/subjects/h/versions", json=body),
        api.post("/subjects/h", json=body),
        api.post("/compatibility/subjects/h/versions/latest", json=body),
        api.put("/config/h", json=body),
        api.put("/mode/h", json=body),
        api.post("/subjects/h/versions", content=raw, headers={"Content-Type": CONTENT_TYPE}),
    ):
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            assert response.status_code in (400, 404, 409, 415, 422), response.text
            assert set(response.json()) == {"error_code", "message"}
