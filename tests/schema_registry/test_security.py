"""A schema registry on HTTPS with HTTP basic authentication (Confluent's ``listeners=https://``,
``authentication.method=BASIC``): confluent-kafka's ``SchemaRegistryClient`` and
``AvroSerializer`` work through it with the settings Sluice turns into their configuration; a
wrong password is a 401 with Confluent's error body; a client without the CA fails with a
clear message; a follower forwards a write to the leader over HTTPS with the client's
credentials; ``sluice schemas`` and ``sluice consume --value-format`` reach it; a broker
validates schema ids against it (``confluent.basic.auth.user.info``, ``confluent.ssl.*``).

Real processes: two secured registries (one election group) on the session's broker, and a
second broker for validation.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from sluice.schemas.registry_client import registry_client_config
from tests.cli.conftest import run_sluice
from tests.conftest import BrokerProcess
from tests.schema_registry.secured import (
    PASSWORD,
    USER,
    Material,
    SecuredRegistry,
    material,
    start_registry,
)

pytestmark = pytest.mark.timeout(180)

ORDER = """{"type": "record", "name": "Order", "namespace": "shop",
 "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}"""


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Material:
    return material(tmp_path_factory.mktemp("secured-registry"))


@pytest.fixture(scope="module")
def registries(
    shared_broker: BrokerProcess, files: Material
) -> Iterator[tuple[SecuredRegistry, SecuredRegistry]]:
    """Two instances of one registry (the first one started leads)."""
    unique = uuid.uuid4().hex[:8]
    first = start_registry(shared_broker.bootstrap, files, "first", unique)
    try:
        second = start_registry(shared_broker.bootstrap, files, "second", unique)
        try:
            yield first, second
        finally:
            second.stop()
    finally:
        first.stop()


@pytest.fixture(scope="module")
def registry(registries: tuple[SecuredRegistry, SecuredRegistry]) -> SecuredRegistry:
    return registries[0]


def client(url: str, files: Material, password: str = PASSWORD) -> SchemaRegistryClient:
    settings = {
        "basic.auth.credentials.source": "USER_INFO",
        "basic.auth.user.info": f"{USER}:{password}",
        "schema.registry.ssl.truststore.location": str(files.ca_pem),  # the Java serdes' name
    }
    return SchemaRegistryClient(registry_client_config(url, settings, environment=False))


def raw(url: str, files: Material, authorization: str | None) -> tuple[int, Any, Any]:
    """Status, JSON body and headers of ``GET url`` (CA trusted)."""
    context = ssl.create_default_context(cafile=str(files.ca_pem))
    headers = {} if authorization is None else {"Authorization": authorization}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), context=context, timeout=10
        ) as answer:
            return answer.status, json.loads(answer.read()), answer.headers
    except urllib.error.HTTPError as refused:
        with refused:
            return refused.code, json.loads(refused.read()), refused.headers


def test_avro_serializer_through_https_and_basic_auth(
    registry: SecuredRegistry, files: Material
) -> None:
    sr = client(registry.url, files)
    try:
        topic = f"orders-{uuid.uuid4().hex[:8]}"
        context = SerializationContext(topic, MessageField.VALUE)
        data = AvroSerializer(sr, ORDER)({"id": 7, "item": "tea"}, context)
        assert data is not None and data[0] == 0
        assert AvroDeserializer(sr)(data, context) == {"id": 7, "item": "tea"}
        assert f"{topic}-value" in sr.get_subjects()
    finally:
        sr.close()


def test_wrong_or_missing_credentials_are_401_with_confluents_body(
    registry: SecuredRegistry, files: Material
) -> None:
    sr = client(registry.url, files, password="wrong")
    try:
        with pytest.raises(SchemaRegistryError) as refused:
            sr.get_subjects()
        assert (refused.value.http_status_code, refused.value.error_code) == (401, 401)
    finally:
        sr.close()
    for authorization in (None, "Basic " + base64.b64encode(b"nobody:x").decode(), "Bearer x"):
        status, body, headers = raw(registry.url + "/subjects", files, authorization)
        assert (status, body) == (401, {"error_code": 401, "message": "Unauthorized"})
        assert headers["WWW-Authenticate"] == 'Basic realm="SchemaRegistry"'
    good = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert raw(registry.url + "/schemas/types", files, good)[:2] == (
        200,
        ["AVRO", "JSON", "PROTOBUF"],
    )
    assert "Traceback" not in registry.log_text()


def test_a_client_without_the_ca_fails_cleanly(registry: SecuredRegistry, files: Material) -> None:
    conf = registry_client_config(
        registry.url, {"basic.auth.user.info": f"{USER}:{PASSWORD}"}, environment=False
    )
    sr = SchemaRegistryClient({**conf, "max.retries": 0})
    try:
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
            sr.get_subjects()
    finally:
        sr.close()
    done = run_sluice(
        "schemas",
        "list",
        "--url",
        registry.url,
        "--schema-registry-config",
        str(files.client_properties(ca=False)),
    )
    assert done.code == 1, done
    expected = f"error: the TLS certificate of the schema registry at {registry.url}"
    assert done.err.startswith(expected), done
    assert "ssl.ca.location" in done.err and "Traceback" not in done.err, done


def test_sluice_schemas_with_a_client_properties_file(
    registries: tuple[SecuredRegistry, SecuredRegistry], files: Material, tmp_path: Path
) -> None:
    """Through the follower: the write is forwarded to the leader over HTTPS with the
    client's credentials."""
    follower = registries[1]
    schema = tmp_path / "order.avsc"
    schema.write_text(ORDER)
    subject = f"forwarded-{uuid.uuid4().hex[:8]}-value"
    config = ("--url", follower.url, "--schema-registry-config", str(files.client_properties()))
    done = run_sluice("schemas", "register", subject, "--schema", str(schema), *config)
    assert done.code == 0, (done, follower.log_text())
    done = run_sluice("schemas", "list", *config)
    assert done.code == 0 and subject in done.out, done
    wrong = ("--schema-registry-config", str(files.client_properties("nope")))
    done = run_sluice("schemas", "list", "--url", follower.url, *wrong)
    assert done.code == 1, done
    assert "Unauthorized (401)" in done.err and "refused the credentials" in done.err, done


def test_consume_value_format_decodes_through_the_secured_registry(
    registry: SecuredRegistry, files: Material, shared_broker: BrokerProcess
) -> None:
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    sr = client(registry.url, files)
    try:
        data = AvroSerializer(sr, ORDER)(
            {"id": 1, "item": "tea"}, SerializationContext(topic, MessageField.VALUE)
        )
    finally:
        sr.close()
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap})
    producer.produce(topic, data)
    assert producer.flush(30) == 0
    done = run_sluice(
        "consume", topic, "-b", shared_broker.bootstrap, "--from-beginning", "--max-messages",
        "1", "--value-format", "avro", "--schema-registry", registry.url,
        "--schema-registry-config", str(files.client_properties()),
    )  # fmt: skip
    assert done.code == 0, done
    assert json.loads(done.out.strip()) == {"id": 1, "item": "tea"}, done


def test_the_broker_validates_against_a_secured_registry(
    registry: SecuredRegistry, files: Material, tmp_path: Path
) -> None:
    config = {
        "confluent.schema.registry.url": registry.url,
        "confluent.basic.auth.credentials.source": "USER_INFO",
        "confluent.basic.auth.user.info": f"{USER}:{PASSWORD}",
        "confluent.ssl.truststore.location": str(files.ca_pem),
    }
    broker = BrokerProcess(tmp_path / "data", config, tmp_path / "broker.log").start()
    try:
        topic = f"validated-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        new = NewTopic(topic, 1, 1, config={"confluent.value.schema.validation": "true"})
        admin.create_topics([new])[topic].result(30)
        sr = client(registry.url, files)
        try:
            good = AvroSerializer(sr, ORDER)(
                {"id": 1, "item": "tea"}, SerializationContext(topic, MessageField.VALUE)
            )
        finally:
            sr.close()
        errors: list[Any] = []
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        for value in (good, b"\x00\x00\x01\x00\x00junk"):
            producer.produce(topic, value, on_delivery=lambda err, _m: errors.append(err))
            producer.flush(30)
        codes = [None if e is None else e.code() for e in errors]
        assert codes == [None, KafkaError.INVALID_RECORD], errors
    finally:
        try:
            broker.stop()
        finally:
            broker.kill()
