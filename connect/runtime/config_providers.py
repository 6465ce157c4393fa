"""Secrets in config values: Kafka's config providers ``env`` and ``file``, and masking.

A value may contain placeholders in Kafka's syntax ``${provider:[path:]key}``, anywhere in the
value (``jdbc:postgresql://app:${env:PGPASSWORD}@db/shop``). They are resolved where the config
is used: by ``sluice connect standalone`` when it loads its files, and by a worker when it
starts a connector or task whose config came with placeholders (:func:`resolve_config`, as
Kafka's workers do with ``config.providers``) — so that a config sent to the REST API, stored
in ``connect-configs`` or shown by it keeps the placeholder, never the secret.

- ``${env:VAR}``: the environment variable ``VAR`` (Kafka's ``EnvVarConfigProvider``);
- ``${file:path:key}``: ``key`` of the Java properties file ``path`` (Kafka's
  ``FileConfigProvider``); a relative path is relative to the YAML file's folder.

A missing variable, file or key raises ``ValueError`` naming the placeholder, never a value.

Masking (:func:`masked`) shows ``[hidden]`` — as Kafka shows a ``PASSWORD`` setting — for
every key whose value came from a placeholder, and for every key that looks secret
(:func:`is_sensitive`).

>>> resolver = SecretResolver(Path("."), {"PGPASSWORD": "s3cret"})
>>> resolver.resolve("postgresql://app:${env:PGPASSWORD}@db/shop")
('postgresql://app:s3cret@db/shop', True)
>>> resolver.resolve("${topic}-${timestamp}")  # TimestampRouter's format: no provider
('${topic}-${timestamp}', False)
>>> masked({"connection.password": "x", "topic": "t", "url": "u"}, {"url"})
{'connection.password': '[hidden]', 'topic': 't', 'url': '[hidden]'}
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from sluice.config import read_properties
from sluice.errors import ConfigError

__all__ = [
    "HIDDEN",
    "PROVIDERS",
    "SecretResolver",
    "is_sensitive",
    "masked",
    "placeholder_keys",
    "resolve_config",
]

HIDDEN = "[hidden]"
"""What a secret value shows as."""

PROVIDERS = ("env", "file")
"""The config providers understood in ``${provider:...}`` placeholders."""

# Kafka's ConfigTransformer.DEFAULT_PATTERN.
_PLACEHOLDER = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")

_SECRET_WORDS = frozenset(["password", "passwd", "secret", "token", "credentials", "jaas"])


def is_sensitive(key: str) -> bool:
    """Whether a setting looks secret by its name alone.

    The rule: one of the key's words (split at ``.``, ``_``, ``-`` and camelCase) is
    ``password``, ``passwd``, ``secret``, ``token``, ``credentials`` or ``jaas``
    (``sasl.jaas.config`` holds a password), or its *last* word is ``key``.

    >>> [is_sensitive(k) for k in ("ssl.key.password", "aws.secretKey", "api.key", "key.converter")]
    [True, True, True, False]
    """
    words = re.split(r"[._\-]+", re.sub(r"([a-z0-9])([A-Z])", r"\1.\2", key).lower())
    return bool(_SECRET_WORDS.intersection(words)) or words[-1] == "key"


def masked(config: Mapping[str, str], secret_keys: Collection[str] = ()) -> dict[str, str]:
    """``config`` with the values of ``secret_keys`` and of sensitive keys shown as ``[hidden]``."""
    return {
        key: HIDDEN if key in secret_keys or is_sensitive(key) else value
        for key, value in config.items()
    }


class SecretResolver:
    """Resolves placeholders for one YAML file (properties files are read once per resolver).

    With ``substitute=False`` placeholders are only checked (a known provider, the right
    form) and left as written, for a config that the worker resolves.
    """

    def __init__(self, base: Path, environ: Mapping[str, str], *, substitute: bool = True) -> None:
        self.base = base
        self.environ = environ
        self.substitute = substitute
        self._files: dict[Path, dict[str, str]] = {}

    def resolve(self, value: str) -> tuple[str, bool]:
        """``value`` with its placeholders replaced, and whether there were any."""
        found = False

        def replace(match: re.Match[str]) -> str:
            nonlocal found
            found = True
            provider, path, key = match.group(1), match.group(2), match.group(3)
            if not self.substitute and (provider, path is None) in (("env", True), ("file", False)):
                return match.group(0)
            if provider == "env" and path is None:
                if key not in self.environ:
                    raise ValueError(f"{match.group(0)}: environment variable {key} is not set")
                return self.environ[key]
            if provider == "file" and path is not None:
                return self._property(match.group(0), path, key)
            raise ValueError(
                f"{match.group(0)}: unknown config provider placeholder"
                " (known: ${env:VARIABLE}, ${file:path:key})"
            )

        return _PLACEHOLDER.sub(replace, value), found

    def _property(self, placeholder: str, path: str, key: str) -> str:
        file = Path(path) if Path(path).is_absolute() else self.base / path
        if file not in self._files:
            try:
                self._files[file] = {k: v for _, k, v in read_properties(file)}
            except ConfigError as error:
                where = f":{error.line}" if error.line is not None else ""
                raise ValueError(f"{placeholder}: {file}{where}: {error.reason}") from None
        properties = self._files[file]
        if key not in properties:
            raise ValueError(f"{placeholder}: no key {key} in {file}")
        return properties[key]


def placeholder_keys(config: Mapping[str, str]) -> frozenset[str]:
    """Keys whose value holds a config provider placeholder.

    >>> sorted(placeholder_keys({"url": "x://${env:U}@h", "topic": "${topic}", "n": "1"}))
    ['url']
    """
    return frozenset(
        key
        for key, value in config.items()
        if isinstance(value, str)
        and any(m.group(1) in PROVIDERS for m in _PLACEHOLDER.finditer(value))
    )


def resolve_config(
    config: Mapping[str, Any], *, base: Path | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """``config`` with the placeholders of its values resolved, as a worker resolves them: from
    this process's environment, and relative ``file`` paths from ``base`` (the working
    directory). A placeholder that cannot be resolved raises ConfigError naming the key.

    >>> resolve_config({"url": "x://${env:U}@h", "n": 1}, environ={"U": "ada"})
    {'url': 'x://ada@h', 'n': 1}
    """
    keys = placeholder_keys(config)
    if not keys:
        return dict(config)
    resolver = SecretResolver(base or Path.cwd(), os.environ if environ is None else environ)
    resolved = dict(config)
    for key in keys:
        try:
            resolved[key], _ = resolver.resolve(str(config[key]))
        except ValueError as error:
            raise ConfigError(str(error), key=key) from None
    return resolved
