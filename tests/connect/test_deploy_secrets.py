"""YAML deployment files: env and file secrets, and masking."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluice.connect.deploy import (
    DeploymentError,
    is_sensitive,
    load,
    masked,
)
from tests.connect.deploy_helpers import one, problems, write


def test_env_and_file_secrets_are_resolved_and_masked(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "db.properties").write_text("# db\nuser=app\npassword = p@ss:word\n")
    path = write(
        tmp_path,
        "db.yaml",
        """
        name: db
        class: x
        config:
          connection.url: postgresql://${file:secrets/db.properties:user}@db/shop
          connection.pw: ${file:secrets/db.properties:password}
          api: ${env:API_TOKEN}
          connection.password: written-in-clear
          topic: ${topic}-${timestamp}
        """,
    )
    [spec] = load(path, environ={"API_TOKEN": "tok-123"})
    assert spec.config["connection.url"] == "postgresql://app@db/shop"
    assert spec.config["connection.pw"] == "p@ss:word"
    assert spec.config["api"] == "tok-123"
    assert spec.config["topic"] == "${topic}-${timestamp}", "not a provider placeholder"
    assert spec.secret_keys == {"connection.url", "connection.pw", "api"}
    shown = spec.masked_config()
    assert shown["connection.url"] == shown["connection.pw"] == shown["api"] == "[hidden]"
    assert shown["connection.password"] == "[hidden]", "masked by its name"
    assert shown["topic"] == "${topic}-${timestamp}"
    for secret in ("p@ss:word", "tok-123", "written-in-clear", "app@db"):
        assert secret not in repr(spec), f"{secret} leaked into repr"


def test_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLUICE_TEST_TOPIC", "from-env")
    assert (
        one("name: a\nclass: x\nconfig: {topic: '${env:SLUICE_TEST_TOPIC}'}\n").config["topic"]
        == "from-env"
    )


def test_absolute_secret_file(tmp_path: Path) -> None:
    secrets = tmp_path / "s.properties"
    secrets.write_text("k=v\n")
    spec = one(f"name: a\nclass: x\nconfig: {{p: '${{file:{secrets}:k}}'}}\n")
    assert spec.config["p"] == "v"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${env:NOPE}", "${env:NOPE}: environment variable NOPE is not set"),
        ("${vault:a:b}", "${vault:a:b}: unknown config provider placeholder"),
        ("${file:missing.properties:k}", "${file:missing.properties:k}: "),
        ("${file:s.properties:nope}", "${file:s.properties:nope}: no key nope in "),
    ],
)
def test_a_missing_secret_names_file_line_and_key(tmp_path: Path, value: str, message: str) -> None:
    (tmp_path / "s.properties").write_text("k=hunter2\n")
    path = write(tmp_path, "a.yaml", f"name: a\nclass: x\nconfig:\n  db.password: '{value}'\n")
    with pytest.raises(DeploymentError) as caught:
        load(path, environ={})
    assert str(caught.value).startswith(f"{path}:4: db.password: {message}")
    assert "hunter2" not in str(caught.value)


def test_errors_never_show_a_secret_value() -> None:
    [text] = problems(
        "name: a\nconnector.class: x\ntasks.max: ${env:N}\n", environ={"N": "many-s3cret"}
    )
    assert text == "c.yaml:3: tasks.max: must be a whole number of at least 1, not [hidden]"


def test_sensitive_names() -> None:
    sensitive = [
        "password",
        "connection.password",
        "ssl.key.password",
        "sasl.jaas.config",
        "aws.secret.access.key",
        "api.key",
        "apiToken",
        "client_secret",
        "gcp.credentials",
    ]
    plain = ["key.converter", "key.ignore", "topic", "transforms.t.fields", "tokenizer.name"]
    assert [key for key in sensitive if not is_sensitive(key)] == []
    assert [key for key in plain if is_sensitive(key)] == []
    assert masked({"a": "1", "b": "2"}, {"b"}) == {"a": "1", "b": "[hidden]"}
