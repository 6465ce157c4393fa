"""How a Sluice client reaches a schema registry: Sluice's settings (Confluent's names) turned
into confluent-kafka's ``SchemaRegistryClient`` configuration, in one place.

Every client of the registry (the schema serdes, the Connect converters, ``sluice schemas``,
``sluice produce|consume --value-format``, the REST proxy) takes the same settings, under the
names of Confluent's Java serializers or of its Python client:

=================================================  =====================================
``basic.auth.credentials.source``                  ``USER_INFO`` (with ``basic.auth.user.info``)
                                                   or ``URL`` (``https://user:pw@host``)
``basic.auth.user.info``                           ``user:password`` (also
                                                   ``schema.registry.basic.auth.user.info``)
``ssl.ca.location``                                the CA (PEM) of the registry's
``schema.registry.ssl.truststore.location``        certificate (default: the system's)
``ssl.certificate.location``                       a client certificate (PEM: the key may
``schema.registry.ssl.keystore.location``          come first in the same file)
``ssl.key.location``                               its key, when in another file
``ssl.key.password``                               the key's password (also
                                                   ``schema.registry.ssl.key.password``)
=================================================  =====================================

Stores are PEM (``schema.registry.ssl.truststore.type`` / ``…keystore.type`` ``PEM``).
A process started by ``sluice up`` finds them in the properties file named by
``$SLUICE_SCHEMA_REGISTRY_CONFIG`` (:data:`ENV_REGISTRY_CONFIG`), used for the registry of
``$SLUICE_SCHEMA_REGISTRY_URL`` (what a setting gives wins).

>>> registry_client_config("https://r:8081", {"schema.registry.basic.auth.user.info": "ops:pw"},
...                        environment=False)
{'url': 'https://r:8081', 'basic.auth.user.info': 'ops:pw'}
>>> registry_client_config("http://r:8081", {"ssl.ca": "x"})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sluice.errors.ConfigError: ssl.ca: not a schema registry client setting (known: ...)
"""

from __future__ import annotations

import base64
import os
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sluice.client_properties import read_entries
from sluice.errors import ConfigError

__all__ = [
    "ENV_REGISTRY_CONFIG",
    "REGISTRY_CLIENT_KEYS",
    "http_access",
    "load_registry_config",
    "registry_client_config",
]

ENV_REGISTRY_CONFIG = "SLUICE_SCHEMA_REGISTRY_CONFIG"
"""The environment variable naming a properties file of these settings (``sluice up`` sets it
for its children when the registry is secured)."""
_ENV_URL = "SLUICE_SCHEMA_REGISTRY_URL"

_ALIASES = {
    "basic.auth.user.info": "basic.auth.user.info",
    "schema.registry.basic.auth.user.info": "basic.auth.user.info",
    "ssl.ca.location": "ssl.ca.location",
    "schema.registry.ssl.truststore.location": "ssl.ca.location",
    "ssl.certificate.location": "ssl.certificate.location",
    "schema.registry.ssl.keystore.location": "ssl.certificate.location",
    "ssl.key.location": "ssl.key.location",
    "ssl.key.password": "ssl.key.password",
    "schema.registry.ssl.key.password": "ssl.key.password",
}
_TYPES = ("schema.registry.ssl.truststore.type", "schema.registry.ssl.keystore.type")
_SOURCE = "basic.auth.credentials.source"
REGISTRY_CLIENT_KEYS = frozenset({*_ALIASES, *_TYPES, _SOURCE})
"""Every setting :func:`registry_client_config` takes (callers pick theirs out with it)."""


def load_registry_config(path: Path) -> dict[str, str]:
    """The settings of a properties file (``key=value`` lines); ConfigError naming the file,
    line and key of an unknown one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read: {error.strerror}", source=str(path)) from None
    settings = {}
    for line, key, value in read_entries(text):
        if key not in REGISTRY_CLIENT_KEYS:
            raise ConfigError(_unknown(), key=key, source=str(path), line=line)
        settings[key] = value
    return settings


def _unknown() -> str:
    return (
        f"not a schema registry client setting (known: {', '.join(sorted(REGISTRY_CLIENT_KEYS))})"
    )


def _from_environment(url: str) -> dict[str, str]:
    path = os.environ.get(ENV_REGISTRY_CONFIG)
    own_url = os.environ.get(_ENV_URL)
    if not path or (own_url and own_url.rstrip("/") != url.rstrip("/")):
        return {}  # another registry than sluice up's: its credentials stay out of it
    return load_registry_config(Path(path))


def registry_client_config(
    url: str, settings: Mapping[str, Any] | None = None, *, environment: bool = True
) -> dict[str, Any]:
    """confluent-kafka's ``SchemaRegistryClient`` configuration for the registry at ``url``
    (several URLs separated by commas) with ``settings`` (see the module docstring; with
    ``environment``, over those of :data:`ENV_REGISTRY_CONFIG`); ConfigError naming the key
    of a wrong one."""
    given = dict(settings or {})
    for key in given:
        if key not in REGISTRY_CLIENT_KEYS:
            raise ConfigError(_unknown(), key=key)
    merged = {**(_from_environment(url) if environment else {}), **given}
    for key in _TYPES:
        if key in merged and str(merged[key]).strip().upper() != "PEM":
            raise ConfigError(f"{merged[key]}: only PEM files are supported", key=key)
    conf: dict[str, Any] = {"url": url}
    for key, value in merged.items():
        if key in _ALIASES and str(value).strip():
            conf[_ALIASES[key]] = str(value).strip() if key != "basic.auth.user.info" else value
    source = str(merged.get(_SOURCE, "USER_INFO" if "basic.auth.user.info" in conf else "URL"))
    source = source.strip().upper()
    if source == "USER_INFO":
        user, colon, _ = str(conf.get("basic.auth.user.info", "")).partition(":")
        if not colon or not user:
            raise ConfigError(
                f"must be user:password with {_SOURCE}=USER_INFO", key="basic.auth.user.info"
            )
    elif source != "URL":
        raise ConfigError(
            f"must be URL or USER_INFO, not {source!r} (SASL_INHERIT is not supported)",
            key=_SOURCE,
        )
    elif "basic.auth.user.info" in conf:
        raise ConfigError(f"is used only with {_SOURCE}=USER_INFO", key="basic.auth.user.info")
    if "ssl.key.location" in conf and "ssl.certificate.location" not in conf:
        raise ConfigError("needs ssl.certificate.location (the certificate)",
                          key="ssl.key.location")  # fmt: skip
    for key in ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location"):
        if key in conf and not Path(conf[key]).is_file():
            raise ConfigError(f"no such file: {conf[key]}", key=key)
    return conf


def http_access(conf: Mapping[str, Any]) -> tuple[dict[str, str], ssl.SSLContext | None]:
    """The ``Authorization`` header and the TLS context (None: the default) of a plain HTTP
    request to the registry of ``conf`` (what :func:`registry_client_config` returned), for the
    few callers that speak the REST API themselves."""
    headers = {}
    if "basic.auth.user.info" in conf:
        token = base64.b64encode(str(conf["basic.auth.user.info"]).encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    context = None
    if any(key in conf for key in ("ssl.ca.location", "ssl.certificate.location")):
        context = ssl.create_default_context(cafile=conf.get("ssl.ca.location"))
        if "ssl.certificate.location" in conf:
            context.load_cert_chain(
                conf["ssl.certificate.location"],
                conf.get("ssl.key.location"),
                conf.get("ssl.key.password"),
            )
    return headers, context
