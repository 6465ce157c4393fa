"""``registry_client_config``: Sluice's registry client settings (Confluent's Java and Python
names) as confluent-kafka's ``SchemaRegistryClient`` configuration, each mistake a ConfigError
naming its key, and ``$SLUICE_SCHEMA_REGISTRY_CONFIG`` used for ``sluice up``'s registry only."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from sluice.errors import ConfigError
from sluice.schemas.registry_client import (
    ENV_REGISTRY_CONFIG,
    http_access,
    load_registry_config,
    registry_client_config,
)

URL = "https://registry.example:8081"


@pytest.fixture
def ca(tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    path.write_text("-----BEGIN CERTIFICATE-----\n")
    return path


def test_java_and_python_names_become_the_python_clients(ca: Path) -> None:
    java = {
        "basic.auth.credentials.source": "USER_INFO",
        "schema.registry.basic.auth.user.info": "ops:pw:with colon",
        "schema.registry.ssl.truststore.location": str(ca),
        "schema.registry.ssl.truststore.type": "PEM",
    }
    python = {"basic.auth.user.info": "ops:pw:with colon", "ssl.ca.location": str(ca)}
    expected = {"url": URL, "basic.auth.user.info": "ops:pw:with colon", "ssl.ca.location": str(ca)}
    assert registry_client_config(URL, java, environment=False) == expected
    assert registry_client_config(URL, python, environment=False) == expected
    SchemaRegistryClient({**expected, "ssl.ca.location": None}).close()  # the keys it knows
    headers, _ = http_access({"basic.auth.user.info": "ops:pw"})
    assert headers == {"Authorization": "Basic b3BzOnB3"}


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"ssl.truststore.location": "x"}, "ssl.truststore.location"),
        ({"basic.auth.credentials.source": "USER_INFO"}, "basic.auth.user.info"),
        ({"basic.auth.credentials.source": "URL", "basic.auth.user.info": "a:b"},
         "basic.auth.user.info"),
        ({"basic.auth.credentials.source": "SASL_INHERIT"}, "basic.auth.credentials.source"),
        ({"basic.auth.user.info": "no-colon"}, "basic.auth.user.info"),
        ({"schema.registry.ssl.truststore.type": "JKS"}, "schema.registry.ssl.truststore.type"),
        ({"ssl.ca.location": "/no/such/ca.pem"}, "ssl.ca.location"),
        ({"ssl.key.location": "/k.pem"}, "ssl.key.location"),
    ],
)  # fmt: skip
def test_mistakes_name_their_key(settings: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as refused:
        registry_client_config(URL, settings, environment=False)
    assert refused.value.key == key, refused.value


def test_the_environments_file_serves_its_own_registry_only(
    tmp_path: Path, ca: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "registry.properties"
    config.write_text(f"basic.auth.user.info=streams:pw\nssl.ca.location={ca}\n")
    monkeypatch.setenv(ENV_REGISTRY_CONFIG, str(config))
    monkeypatch.setenv("SLUICE_SCHEMA_REGISTRY_URL", URL + "/")
    found = registry_client_config(URL, {"basic.auth.user.info": "mine:pw"})
    assert found == {"url": URL, "basic.auth.user.info": "mine:pw", "ssl.ca.location": str(ca)}
    assert registry_client_config("https://elsewhere:8081") == {"url": "https://elsewhere:8081"}
    config.write_text("ssl.ca=x\n")
    with pytest.raises(ConfigError, match=r"registry.properties:1: ssl.ca: not a schema"):
        load_registry_config(config)
