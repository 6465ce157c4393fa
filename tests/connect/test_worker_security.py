"""Worker settings for security, without a broker: the clients' settings each kind of client
gets (translated from Kafka's keys), and the REST API's TLS and basic authentication — every
mistake named by its key. The end-to-end run is ``tests/e2e/test_secured_apps.py``."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import trustme

from sluice.connect.rest_security import BASIC_AUTH_EXTENSION, rest_security
from sluice.connect.runtime.client_configs import task_clients, worker_clients
from sluice.connect.runtime.config_providers import masked
from sluice.connect.runtime.offsets import FileOffsetStore
from sluice.connect.runtime.worker import Worker
from sluice.errors import ConfigError

JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="w" password="pw";'
)


def test_security_settings_reach_every_kind_of_client_and_prefixed_ones_win() -> None:
    worker = {
        "bootstrap.servers": "b:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": JAAS,
        "producer.sasl.jaas.config": JAAS.replace('"w"', '"source"'),
        "consumer.fetch.min.bytes": "10",
        "key.converter": "string",
    }
    common = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
              "sasl.username": "w", "sasl.password": "pw"}  # fmt: skip
    assert worker_clients(worker) == common
    assert task_clients(worker, "producer") == {**common, "sasl.username": "source"}
    assert task_clients(worker, "consumer") == {**common, "fetch.min.bytes": "10"}
    assert task_clients(worker, "admin") == common


def test_a_bad_security_setting_stops_the_worker_naming_the_key(tmp_path: Path) -> None:
    bad = {"bootstrap.servers": "b:9093", "consumer.sasl.jaas.config": "nonsense"}
    with pytest.raises(ConfigError, match=r"worker config \(consumer\.\*\): sasl\.jaas\.config"):
        Worker(bad, FileOffsetStore(tmp_path / "offsets.json"))
    jks = tmp_path / "store.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed")
    bad = {"bootstrap.servers": "b:9093", "ssl.truststore.location": str(jks)}
    with pytest.raises(ConfigError, match=r"ssl\.truststore\.location: .* is not PEM"):
        Worker(bad, FileOffsetStore(tmp_path / "offsets.json"))


def test_worker_secrets_are_masked_where_configs_are_shown() -> None:
    shown = masked({"sasl.jaas.config": JAAS, "producer.sasl.jaas.config": JAAS, "topic": "t"})
    assert shown == {"sasl.jaas.config": "[hidden]", "producer.sasl.jaas.config": "[hidden]",
                     "topic": "t"}  # fmt: skip


@pytest.fixture
def rest_files(tmp_path: Path) -> dict[str, str]:
    ca = trustme.CA()
    pem = tmp_path / "rest.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(pem)
    ca.cert_pem.write_to_path(tmp_path / "ca.pem")
    (tmp_path / "users").write_text("ops=s3cret\n")
    (tmp_path / "jaas.conf").write_text(
        "KafkaConnect {\n org.apache.kafka.connect.rest.basic.auth.extension."
        f'PropertyFileLoginModule required file="{tmp_path / "users"}";\n}};\n'
    )
    return {"pem": str(pem), "ca": str(tmp_path / "ca.pem"), "jaas": str(tmp_path / "jaas.conf")}


def test_https_and_basic_auth_from_kafka_connect_settings(rest_files: dict[str, str]) -> None:
    security = rest_security({
        "listeners": "https://127.0.0.1:8443",
        "listeners.https.ssl.keystore.location": rest_files["pem"],
        "rest.extension.classes": BASIC_AUTH_EXTENSION,
        "java.security.auth.login.config": rest_files["jaas"],
    })  # fmt: skip
    assert (security.listen, security.scheme) == ("127.0.0.1:8443", "https")
    assert security.basic_auth is not None
    good = "Basic " + base64.b64encode(b"ops:s3cret").decode()
    wrong = "Basic " + base64.b64encode(b"ops:guess").decode()
    assert security.basic_auth.allows(good)
    assert not any(security.basic_auth.allows(h) for h in (None, "", wrong, "Basic !!", "Bearer x"))
    assert "s3cret" not in repr(security)
    # without listeners.https.* the top-level ssl.* serve the REST API too (Kafka's rule)
    fallback = rest_security({"listeners": "https://0.0.0.0:8443",
                              "ssl.keystore.location": rest_files["pem"]})  # fmt: skip
    assert fallback.tls is not None and str(fallback.tls.keystore) == rest_files["pem"]


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"listeners": "https://127.0.0.1:8443"}, "ssl.keystore.location"),
        ({"listeners": "ftp://h:1"}, "listeners"),
        ({"listeners": "http://a:1,http://b:2"}, "listeners"),
        ({"listeners.https.ssl.keystore.location": "x"}, "listeners"),
        ({"listeners": "https://h:1", "listeners.https.ssl.keystore.location": "PEM",
          "listeners.https.ssl.cipher.suites": "x"}, "listeners.https.ssl.cipher.suites"),
        ({"listeners": "https://h:1", "listeners.https.ssl.keystore.location": "PEM",
          "listeners.https.ssl.client.authentication": "required"},
         "listeners.https.ssl.truststore.location"),
        ({"rest.extension.classes": "com.example.Other"}, "rest.extension.classes"),
        ({"rest.extension.classes": BASIC_AUTH_EXTENSION}, "java.security.auth.login.config"),
        ({"java.security.auth.login.config": "JAAS"}, "java.security.auth.login.config"),
    ],
)  # fmt: skip
def test_rest_security_mistakes_name_the_key(
    settings: dict[str, str], key: str, rest_files: dict[str, str]
) -> None:
    fixed = {k: rest_files["pem"] if v == "PEM" else rest_files["jaas"] if v == "JAAS" else v
             for k, v in settings.items()}  # fmt: skip
    with pytest.raises(ConfigError) as raised:
        rest_security(fixed)
    assert raised.value.key == key, str(raised.value)
