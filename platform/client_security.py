"""Kafka's client security settings inside a larger config (a Streams app's, a Connect worker's).

Kafka Streams and Kafka Connect take their clients' settings among their own, under the Java
client's names: ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``,
``ssl.truststore.location`` … for every client, and role-prefixed ones (``producer.…``,
``consumer.…``, ``admin.…``) for one kind of client. Sluice's clients are librdkafka's, so
these go through the translation the CLI's ``--command-config`` uses
(:func:`sluice.client_properties.translate`: JAAS to ``sasl.username``/``sasl.password``, PEM
stores to ``ssl.ca.location`` …); a mistake is a :class:`~sluice.errors.ConfigError` naming the
key and where it came from.

>>> client_settings({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
...     "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule '
...                         'required username="app" password="pw";'}, source="app")
{'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-512', 'sasl.username': 'app', \
'sasl.password': 'pw'}
>>> split_security({"security.protocol": "SSL", "application.id": "a"})
({'security.protocol': 'SSL'}, {'application.id': 'a'})
>>> masked_client({"sasl.password": "pw", "security.protocol": "SASL_SSL"})
{'sasl.password': '[hidden]', 'security.protocol': 'SASL_SSL'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from sluice.client_properties import translate

__all__ = [
    "HIDDEN",
    "client_settings",
    "is_secret",
    "is_security_key",
    "masked_client",
    "split_security",
]

HIDDEN = "[hidden]"
"""What a secret value shows as (Kafka's ``[hidden]`` for a PASSWORD setting)."""

_SECURITY = re.compile(r"^(security\.protocol$|sasl\.|ssl\.)")
_SECRET = re.compile(
    r"(password|secret|jaas|\.key\.pem$|^ssl\.keystore\.key$|\.pem$|certificates$|token)"
)


def is_security_key(key: str) -> bool:
    """Whether ``key`` is one of the client security settings (``security.protocol``,
    ``sasl.*``, ``ssl.*``) that Kafka Streams and Connect give to every client they make."""
    return _SECURITY.match(key) is not None


def is_secret(key: str) -> bool:
    """Whether a client setting's value is secret: a password, a JAAS line, a private key."""
    return _SECRET.search(key) is not None and not key.endswith((".location", ".type"))


def split_security(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(security settings, the others)`` of ``settings``, each in its order."""
    security = {k: v for k, v in settings.items() if is_security_key(k)}
    return security, {k: v for k, v in settings.items() if k not in security}


def client_settings(settings: Mapping[str, Any], *, source: str) -> dict[str, Any]:
    """librdkafka's properties for client ``settings`` written with Java client keys
    (the translation of ``--command-config``); ``source`` names where they came from in errors.
    Values that are not strings (a callback, a number) pass through untouched."""
    text = {k: v for k, v in settings.items() if isinstance(v, str)}
    # No line numbers here: the settings come from a mapping (code, -X pairs, a YAML section
    # whose caller names the place), so an error reads "source: key: message".
    entries = [(cast(int, None), key, value) for key, value in text.items()]
    translated: dict[str, Any] = dict(translate(entries, source).config)
    translated.update({k: v for k, v in settings.items() if not isinstance(v, str)})
    return translated


def masked_client(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with its secret values shown as ``[hidden]``, for logs and dumps."""
    return {key: HIDDEN if is_secret(key) else value for key, value in config.items()}
