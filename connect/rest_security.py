"""The security of the Connect REST API, from worker settings as Kafka Connect names them.

**HTTPS** (Kafka's ``listeners`` and ``listeners.https.ssl.*``, KIP-208)::

    listeners=https://0.0.0.0:8443
    listeners.https.ssl.keystore.location=/etc/sluice/connect.pem   # PEM: key + chain
    listeners.https.ssl.key.password=…                              # when the key is encrypted
    listeners.https.ssl.truststore.location=/etc/sluice/ca.pem      # CAs of client certificates
    listeners.https.ssl.client.authentication=required              # none | requested | required
    listeners.https.ssl.cipher.suites=TLS_AES_256_GCM_SHA384,…      # standard names

``listeners`` (one listener, ``http://`` or ``https://``) replaces ``--rest``. As in Kafka, when
no ``listeners.https.``-prefixed setting is given the worker's top-level ``ssl.*`` ones are
used. Stores are PEM (``ssl.keystore.type``/``ssl.truststore.type`` ``PEM``); JKS and PKCS12 are
refused, naming the key.

**HTTP basic authentication** (Kafka's ``BasicAuthSecurityRestExtension``)::

    rest.extension.classes=org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension
    java.security.auth.login.config=/etc/sluice/connect-jaas.conf

The JAAS file is Kafka's (Kafka takes its path as the JVM's system property of that name in
``KAFKA_OPTS``; a Sluice worker takes it as a worker setting)::

    KafkaConnect {
        org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
        file="/etc/sluice/connect.password";
    };

and the file it names holds ``user=password`` lines (Java properties). A request without valid
credentials is answered 401 with ``WWW-Authenticate: Basic``; passwords are compared in constant
time and never logged. Every mistake is a :class:`~sluice.errors.ConfigError` naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sluice import cipher_suites
from sluice.errors import ConfigError
from sluice.http_security import (
    CLIENT_AUTH,
    BasicAuth,
    TlsSettings,
    check_tls,
    jaas_users,
    pem_file,
)

__all__ = ["BASIC_AUTH_EXTENSION", "BasicAuth", "RestSecurity", "TlsSettings", "rest_security"]

BASIC_AUTH_EXTENSION = (
    "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
)
"""Kafka's basic-authentication REST extension (``rest.extension.classes``)."""

_EXTENSIONS = {BASIC_AUTH_EXTENSION, "BasicAuthSecurityRestExtension", "basic-auth"}
_TLS_KEYS = (
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.key.password",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.client.authentication",
    "ssl.cipher.suites",
)


@dataclass(frozen=True)
class RestSecurity:
    """Where and how the REST API listens: ``listen`` (``HOST:PORT``, None: ``--rest``'s),
    TLS when ``https://``, basic authentication when the extension is on."""

    listen: str | None = None
    tls: TlsSettings | None = None
    basic_auth: BasicAuth | None = None

    @property
    def scheme(self) -> str:
        """``https`` or ``http``."""
        return "https" if self.tls is not None else "http"


def _pem_file(settings: Mapping[str, Any], key: str, type_key: str) -> Path:
    kind = str(settings.get(type_key, "PEM"))
    if kind.strip().upper() != "PEM":
        raise ConfigError(f"{kind.strip().upper()}: only PEM files are supported", key=type_key)
    return pem_file(Path(str(settings[key])), key=key)


def _tls(settings: Mapping[str, Any]) -> TlsSettings:
    prefixed = {k[len("listeners.https.") :]: v for k, v in settings.items()
                if k.startswith("listeners.https.")}  # fmt: skip
    if prefixed:
        prefix, chosen = "listeners.https.", prefixed
    else:  # Kafka: without listeners.https.* the top-level ssl.* settings
        prefix, chosen = "", {k: v for k, v in settings.items() if k in _TLS_KEYS}
    named = {f"{prefix}{k}": v for k, v in chosen.items()}
    unknown = sorted(k for k in chosen if k not in _TLS_KEYS) if prefixed else []
    if unknown:
        raise ConfigError(
            f"not a REST TLS setting (known: {', '.join(_TLS_KEYS)})", key=prefix + unknown[0]
        )
    if f"{prefix}ssl.keystore.location" not in named:
        raise ConfigError(
            "an https listener needs the REST API's key and certificate chain (a PEM file)",
            key=f"{prefix}ssl.keystore.location",
        )
    keystore = _pem_file(named, f"{prefix}ssl.keystore.location", f"{prefix}ssl.keystore.type")
    truststore = None
    if f"{prefix}ssl.truststore.location" in named:
        truststore = _pem_file(
            named, f"{prefix}ssl.truststore.location", f"{prefix}ssl.truststore.type"
        )
    auth_key = f"{prefix}ssl.client.authentication"
    auth = str(named.get(auth_key, "none")).strip().lower()
    if auth not in CLIENT_AUTH:
        raise ConfigError(f"must be one of {', '.join(CLIENT_AUTH)}, got {auth!r}", key=auth_key)
    if auth != "none" and truststore is None:
        raise ConfigError(
            "client certificates need the CAs that sign them",
            key=f"{prefix}ssl.truststore.location",
        )
    password = named.get(f"{prefix}ssl.key.password")
    suites_key = f"{prefix}ssl.cipher.suites"
    suites = named.get(suites_key)
    names = suites if isinstance(suites, list) else cipher_suites.parse(suites)
    tls = TlsSettings(keystore, None if password is None else str(password), truststore,
                      CLIENT_AUTH[auth], tuple(str(name) for name in names))  # fmt: skip
    try:
        check_tls(tls)
    except ConfigError as error:
        raise ConfigError(error.reason, key=prefix + (error.key or "")) from None
    return tls


def _basic_auth(settings: Mapping[str, Any]) -> BasicAuth:
    key = "java.security.auth.login.config"
    if key not in settings:
        raise ConfigError(
            "the basic-authentication extension needs the JAAS file of its users", key=key
        )
    return jaas_users(Path(str(settings[key])), "KafkaConnect", key=key)


def rest_security(settings: Mapping[str, Any]) -> RestSecurity:
    """The REST API's security from worker ``settings``; ConfigError naming the key if wrong."""
    listen = None
    tls = None
    if "listeners" in settings:
        listeners = [u.strip() for u in str(settings["listeners"]).split(",") if u.strip()]
        if len(listeners) != 1:
            raise ConfigError("one listener (http://HOST:PORT or https://HOST:PORT)",
                              key="listeners")  # fmt: skip
        url = urlsplit(listeners[0])
        if url.scheme not in ("http", "https") or url.port is None:
            raise ConfigError(
                f"expected http://HOST:PORT or https://HOST:PORT, got {listeners[0]!r}",
                key="listeners",
            )
        listen = f"{url.hostname or '0.0.0.0'}:{url.port}"
        if url.scheme == "https":
            tls = _tls(settings)
    elif any(k.startswith("listeners.https.") for k in settings):
        raise ConfigError("listeners.https.* settings need an https:// listener", key="listeners")
    basic = None
    extensions = [c.strip() for c in str(settings.get("rest.extension.classes", "")).split(",")
                  if c.strip()]  # fmt: skip
    for extension in extensions:
        if extension not in _EXTENSIONS:
            raise ConfigError(
                f"unknown REST extension {extension!r} (known: {BASIC_AUTH_EXTENSION})",
                key="rest.extension.classes",
            )
        basic = _basic_auth(settings)
    if basic is None and "java.security.auth.login.config" in settings:
        raise ConfigError(
            f"a JAAS file without rest.extension.classes={BASIC_AUTH_EXTENSION} would be ignored",
            key="java.security.auth.login.config",
        )
    return RestSecurity(listen, tls, basic)
