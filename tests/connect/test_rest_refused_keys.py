"""``PUT /connector-plugins/{type}/config/validate`` shows an anchor's key that the connector
does not implement as an error on that key, and creating the connector is refused (400) with
Kafka's message naming it; Debezium's column filters are validated there too."""

from __future__ import annotations

from fastapi.testclient import TestClient

POSTGRES = {
    "name": "cdc",
    "database.hostname": "127.0.0.1",
    "database.user": "cdc",
    "database.dbname": "shop",
    "topic.prefix": "shop",
}


def _errors(body: dict[str, object]) -> dict[str, list[str]]:
    configs = body["configs"]
    assert isinstance(configs, list)
    return {c["value"]["name"]: c["value"]["errors"] for c in configs if c["value"]["errors"]}


def test_validate_names_the_refused_key(client: TestClient) -> None:
    config = {**POSTGRES, "signal.data.collection": "public.signals"}
    response = client.put(
        "/connector-plugins/io.debezium.connector.postgresql.PostgresConnector/config/validate",
        json=config,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["error_count"] == 1
    assert _errors(body) == {
        "signal.data.collection": [
            "a key of Debezium's PostgreSQL connector that Sluice does not implement; remove it"
        ]
    }
    both = {**POSTGRES, "column.include.list": "a.b.c", "column.exclude.list": "a.b.d"}
    body = client.put("/connector-plugins/postgres-cdc/config/validate", json=both).json()
    assert list(_errors(body)) == ["column.exclude.list"]

    sink = {"name": "s", "connection.url": "sqlite:///x.db", "topics": "t", "db.timezone": "CET"}
    body = client.put("/connector-plugins/jdbc-sink/config/validate", json=sink).json()
    (message,) = _errors(body)["db.timezone"]
    assert "Confluent's JDBC sink connector" in message and "only 'UTC'" in message


def test_creating_a_connector_with_a_refused_key_is_a_400_naming_it(client: TestClient) -> None:
    config = {
        "connector.class": "jdbc-source",
        "connection.url": "sqlite:///x.db",
        "mode": "bulk",
        "topic.prefix": "db-",
        "schema.pattern": "public",
    }
    response = client.post("/connectors", json={"name": "db", "config": config})
    assert response.status_code == 400, response.text
    assert (
        "schema.pattern: a key of Confluent's JDBC source connector" in (response.json()["message"])
    )
    assert client.get("/connectors").json() == []
