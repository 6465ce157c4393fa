"""The proxy's Kafka clients over SASL_SSL (SCRAM-SHA-512) with a Kafka client properties file
(``--command-config``, Java keys), as every client command takes them: v3 admin calls, produce
and a v2 consumer all work through the secured listener; a wrong password is an error answer,
not a crash."""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism
from confluent_kafka.admin import UserScramCredentialUpsertion as Upsertion

from tests.rest_proxy.fixtures import Proxy, cluster_id
from tests.security_fixtures import Listeners, listeners_broker

pytestmark = pytest.mark.timeout(180)

USER, PASSWORD = "proxy", "proxy-s3cret"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Listeners]:
    root = tmp_path_factory.mktemp("rest-proxy-sasl")
    for listeners in listeners_broker(
        root,
        {"PLAINTEXT": "PLAINTEXT", "SASL_SSL": "SASL_SSL"},
        ("ops@example.com", "ops"),
        **{"listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512"},
    ):
        admin = AdminClient({"bootstrap.servers": listeners.address("PLAINTEXT")})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        for future in admin.alter_user_scram_credentials(
            [Upsertion(USER, info, PASSWORD.encode())]
        ).values():
            future.result(15)
        yield listeners


def _properties(secured: Listeners, tmp_path: Path, password: str) -> str:
    path = tmp_path / f"client-{uuid.uuid4().hex[:6]}.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f'sasl.jaas.config={SCRAM} required username="{USER}" password="{password}";\n'
        f"ssl.truststore.location={secured.ca_pem}\n"
    )
    return str(path)


def test_everything_goes_over_sasl_ssl(
    secured: Listeners, tmp_path: Path, proxy_factory: Callable[..., Proxy]
) -> None:
    config = _properties(secured, tmp_path, PASSWORD)
    proxy = proxy_factory(secured.address("SASL_SSL"), "--command-config", config)
    cid = cluster_id(proxy)
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    created = proxy.post(f"/v3/clusters/{cid}/topics", {"topic_name": topic, "partitions_count": 1})
    assert created.status == 201, created.body
    produced = proxy.post(
        f"/v3/clusters/{cid}/topics/{topic}/records",
        {"value": {"type": "BINARY", "data": base64.b64encode(b"secret").decode()}},
    )
    assert produced.status == 200 and produced.json()["offset"] == 0, produced.body
    v2 = "application/vnd.kafka.v2+json"
    group = f"g-{uuid.uuid4().hex[:8]}"
    instance = proxy.post(f"/consumers/{group}", {"auto.offset.reset": "earliest"}, content_type=v2)
    base = instance.json()["base_uri"].removeprefix(proxy.url)
    assert proxy.post(f"{base}/subscription", {"topics": [topic]}, content_type=v2).status == 204
    found: list[Any] = []
    deadline = time.monotonic() + 30
    while not found:
        assert time.monotonic() < deadline, "nothing read over SASL_SSL"
        answer = proxy.get(
            f"{base}/records?timeout=1000", accept="application/vnd.kafka.binary.v2+json"
        )
        assert answer.status == 200, answer.body
        found += answer.json()
    assert base64.b64decode(found[0]["value"]) == b"secret"
    assert proxy.request("DELETE", base).status == 204


def test_a_wrong_password_is_an_error_answer(
    secured: Listeners, tmp_path: Path, proxy_factory: Callable[..., Proxy]
) -> None:
    config = _properties(secured, tmp_path, "not-the-password")
    proxy = proxy_factory(secured.address("SASL_SSL"), "--command-config", config)
    answer = proxy.get("/v3/clusters")
    assert answer.status == 401, answer.body
    body = answer.json()
    assert body["error_code"] == 40101 and "authentication" in body["message"].lower(), body
    assert proxy.alive(), answer.body
