"""Kafka's client security settings in a Streams app's settings: translated to librdkafka's
keys for every client (prefixed ones for one kind), refused with the key named when wrong,
never shown by ``repr``. The app on a secured broker: ``tests/e2e/test_secured_apps.py``."""

from __future__ import annotations

import json

import pytest

from sluice.dsl import App
from sluice.streams import StreamsConfig
from sluice.streams.config import ENV_CONFIG, settings_from_text
from sluice.streams.errors import StreamsError

JAAS = (
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="pw";'
)


def test_security_settings_go_to_every_client_and_prefixed_ones_to_one_kind() -> None:
    config = StreamsConfig.of({
        "application.id": "a",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": JAAS,
        "producer.linger.ms": "20",
        "restore.consumer.sasl.jaas.config": JAAS.replace('"app"', '"reader"'),
        "admin.security.protocol": "SSL",
    })  # fmt: skip
    common = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
              "sasl.username": "app", "sasl.password": "pw"}  # fmt: skip
    assert config.producer_config == {**common, "linger.ms": "20"}
    assert config.consumer_config == {**common, "sasl.username": "reader"}
    assert config.admin_config == {**common, "security.protocol": "SSL"}
    assert "pw" not in repr(config)


def test_a_bad_security_setting_is_refused_naming_the_key() -> None:
    with pytest.raises(StreamsError, match=r"sasl\.jaas\.config: "):
        StreamsConfig.of({"application.id": "a", "sasl.jaas.config": "Nope required;"})
    with pytest.raises(StreamsError, match=r"ssl\.enabled\.protocols"):
        StreamsConfig.of({"application.id": "a", "ssl.enabled.protocols": "TLSv1.3"})


def test_a_deployment_adds_security_to_the_apps_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert settings_from_text({"security.protocol": "SSL"}) == {
        "client_config": {"security.protocol": "SSL"}
    }
    monkeypatch.setenv(ENV_CONFIG, json.dumps({"sasl.jaas.config": JAAS}))
    app = App("a", "b:9093", **{"security.protocol": "SASL_SSL"})
    assert app.config.consumer_config == {
        "security.protocol": "SASL_SSL", "sasl.username": "app", "sasl.password": "pw"
    }  # fmt: skip
