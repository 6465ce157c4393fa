"""The schema registry and the REST proxy of a secured deployment (``security:`` or
``--secure``): served on HTTPS (the ``security:`` keystore, when the listener is SASL_SSL) with
HTTP basic authentication, and every part that talks to the registry given its URL and a login.

Under ``<home>`` (owner-only where a password is): ``schema-services.password`` (the users:
the admin and each user of ``security:``, with their Kafka passwords), ``schema-services-jaas.conf``
(its ``SchemaRegistry`` and ``KafkaRest`` sections name that file), and per client user
``schema-registry-<user>.properties`` (``basic.auth.user.info``, ``ssl.ca.location``: what
``--schema-registry-config`` and ``$SLUICE_SCHEMA_REGISTRY_CONFIG`` take). The registry and the
proxy log in as the admin; the brokers too (``confluent.basic.auth.user.info``,
``confluent.ssl.truststore.location``); Streams apps and processes as ``streams_user``.

>>> from sluice.up.spec import SchemaRegistrySpec, SecuritySpec
>>> registry_url(SchemaRegistrySpec(), SecuritySpec(keystore=Path("broker.pem")))
'https://127.0.0.1:8081'
>>> registry_url(SchemaRegistrySpec(), None)
'http://127.0.0.1:8081'
"""

from __future__ import annotations

import ssl
from pathlib import Path

from sluice.schemas.registry_client import http_access, registry_client_config
from sluice.up.security import private_file
from sluice.up.spec import SchemaRegistrySpec, SecuritySpec

__all__ = [
    "admin_access",
    "broker_registry_config",
    "registry_client_file",
    "registry_url",
    "service_options",
]

_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
"""Kafka's module: ``user=password`` lines (Jetty's would cut a password at a comma)."""


def _tls(security: SecuritySpec | None) -> bool:
    return security is not None and security.tls and security.keystore is not None


def registry_url(registry: SchemaRegistrySpec, security: SecuritySpec | None) -> str:
    """The registry's URL: ``https://`` on a deployment whose listener is TLS."""
    url = registry.url
    return "https://" + url.removeprefix("http://") if _tls(security) else url


def service_options(security: SecuritySpec, home: Path) -> list[str]:
    """The options of ``sluice schema-registry start`` / ``rest-proxy start`` that secure
    them (writing the users and JAAS files)."""
    users = [(security.admin_user, security.admin_password)]
    users += [(user.name, user.password) for user in security.users]
    password_file = private_file(home / "schema-services.password", users, escape=True)
    jaas = home / "schema-services-jaas.conf"
    jaas.write_text(
        "".join(
            f'{realm} {{\n    {_MODULE} required\n    file="{password_file.absolute()}";\n}};\n'
            for realm in ("SchemaRegistry", "KafkaRest")
        ),
        encoding="utf-8",
    )
    options = ["--jaas-config", str(jaas.absolute())]
    if _tls(security) and security.keystore is not None:
        options += ["--ssl-keystore", str(security.keystore.absolute())]
    return options


def _client(security: SecuritySpec, user: str) -> list[tuple[str, str]]:
    settings = [
        ("basic.auth.credentials.source", "USER_INFO"),
        ("basic.auth.user.info", f"{user}:{security.password_of(user)}"),
    ]
    if _tls(security) and security.truststore is not None:
        settings.append(("ssl.ca.location", str(security.truststore.absolute())))
    return settings


def registry_client_file(security: SecuritySpec, home: Path, user: str) -> Path:
    """``<home>/schema-registry-<user>.properties``: how ``user`` reaches the registry."""
    return private_file(
        home / f"schema-registry-{user}.properties", _client(security, user), escape=True
    )


def broker_registry_config(security: SecuritySpec) -> tuple[tuple[str, str], ...]:
    """The brokers' Confluent Server keys to reach the registry (as the admin)."""
    names = {
        "basic.auth.credentials.source": "confluent.basic.auth.credentials.source",
        "basic.auth.user.info": "confluent.basic.auth.user.info",
        "ssl.ca.location": "confluent.ssl.truststore.location",
    }
    return tuple((names[key], value) for key, value in _client(security, security.admin_user))


def admin_access(
    security: SecuritySpec | None, url: str
) -> tuple[dict[str, str], ssl.SSLContext | None]:
    """The ``Authorization`` header and TLS context ``sluice up`` reaches the registry with."""
    if security is None:
        return {}, None
    settings = dict(_client(security, security.admin_user))
    return http_access(registry_client_config(url, settings, environment=False))
