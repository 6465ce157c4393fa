"""v3 produce is served in front of FastAPI's routing (:mod:`sluice.rest_proxy.records`) but
inside the application's middleware: HTTP basic authentication guards it as every other path.
In-process (Starlette's test client); the credentials are refused before any Kafka client is
asked, so the proxy's clients point at a closed port."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from sluice.http_security import BasicAuth, require_basic_auth
from sluice.rest_proxy.app import create_app
from sluice.rest_proxy.consumers import ConsumerInstances
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.schemas import SchemaSerdes
from tests.conftest import free_port

RECORDS = "/v3/clusters/c1/topics/t1/records"


@pytest.fixture
def client() -> Iterator[TestClient]:
    pool = ClientPool(f"127.0.0.1:{free_port()}", {"log_level": 0}, timeout_s=1.0)
    serdes = SchemaSerdes(None)
    instances = ConsumerInstances(pool, serdes, 300_000)
    app = create_app(pool, serdes, instances)
    require_basic_auth(app, BasicAuth({"alice": "s3cret"}), "KafkaRest", "REST proxy")
    try:
        with TestClient(app) as client:
            yield client
    finally:
        instances.close_all()
        pool.close(1.0)


def test_produce_asks_for_credentials(client: TestClient) -> None:
    body = b'{"value": {"type": "STRING", "data": "x"}}'
    answer = client.post(RECORDS, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 401, answer.text
    assert answer.json() == {"error_code": 401, "message": "Unauthorized"}
    assert answer.headers["WWW-Authenticate"] == 'Basic realm="KafkaRest"'


def test_with_credentials_the_endpoint_answers(client: TestClient) -> None:
    token = base64.b64encode(b"alice:s3cret").decode()
    answer = client.get(RECORDS, headers={"Authorization": f"Basic {token}"})
    assert answer.status_code == 405, answer.text
    assert answer.json() == {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
    answer = client.post(
        RECORDS,
        content=b"x",
        headers={"Authorization": f"Basic {token}", "Content-Type": "text/plain"},
    )
    assert (answer.status_code, answer.json()["error_code"]) == (415, 415), answer.text
