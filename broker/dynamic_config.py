"""Dynamic broker configs: the keys Kafka lets AlterConfigs change on a running broker.

Two levels, as Kafka's ``DynamicBrokerConfig``: the cluster default (BROKER resource named
``""``) and this broker (named by its id), the latter winning, both over ``server.properties``.
Only :data:`~sluice.broker.config.DYNAMIC_BROKER_KEYS` may be set, and, on this broker's level
only, a listener's keystore keys (``listener.name.<l>.ssl.keystore.location``…:
:mod:`sluice.broker.security.keystores`); any other key is refused with Kafka's "Cannot update
these configs dynamically" message. The broker-level synonyms of topic keys
(``log.retention.ms``, ``log.cleanup.policy``, ``message.max.bytes``, ...) change the defaults
of every topic at once: topics without an override follow them.

On disk::

    <data_dir>/dynamic-broker-configs.json   {"default": {key: text}, "<node id>": {key: text}}

written to a temporary name, fsynced and renamed (a crash leaves the old or the new file), read
at start before the topics are loaded. Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path

from sluice.broker.config import DYNAMIC_BROKER_KEYS, BrokerConfig, dynamic_key
from sluice.broker.config_keys import dynamic_listener_key
from sluice.broker.log.files import write_atomically
from sluice.errors import ConfigError

__all__ = ["DEFAULT_ENTITY", "FILE_NAME", "DynamicBrokerConfigs"]

log = logging.getLogger(__name__)

FILE_NAME = "dynamic-broker-configs.json"
DEFAULT_ENTITY = ""
"""The BROKER resource name of the cluster-wide default."""


class DynamicBrokerConfigs:
    """The dynamic overrides of one broker, persisted in its data directory."""

    def __init__(self, data_dir: Path, static: BrokerConfig) -> None:
        self._path = data_dir / FILE_NAME
        self._static = static
        self._node = str(static.node_id)
        self._levels: dict[str, dict[str, str]] = {DEFAULT_ENTITY: {}, self._node: {}}

    def load(self) -> BrokerConfig:
        """Read the persisted overrides; returns the effective configuration. A file that no
        longer validates (a key made static since) is reported and its bad keys skipped."""
        if self._path.exists():
            try:
                stored = json.loads(self._path.read_text())
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot read: {exc}", source=str(self._path)) from None
            for entity, level in (("default", DEFAULT_ENTITY), (self._node, self._node)):
                for key, value in dict(stored.get(entity, {})).items():
                    try:
                        self._validate(key, str(value))
                    except ConfigError as exc:
                        log.error("%s: %s: skipped", self._path, exc)
                        continue
                    self._levels[level][key] = str(value)
        return self.effective()

    def entity_of(self, resource_name: str) -> str | None:
        """The level a BROKER resource name addresses ("" or this broker's id), else None."""
        return resource_name if resource_name in self._levels else None

    def overrides(self, entity: str) -> dict[str, str]:
        """The textual overrides of a level."""
        return dict(self._levels[entity])

    def check(self, entity: str, overrides: Mapping[str, str | None]) -> dict[str, str]:
        """Validate a level's new overrides (None values dropped); raises :class:`ConfigError`
        whose ``reason`` is Kafka's message. A listener's keystore keys are per broker only."""
        static = sorted(k for k in overrides if not _dynamic(k))
        if static:
            raise ConfigError(f"Cannot update these configs dynamically: Set({', '.join(static)})")
        per_broker = sorted(k for k in overrides if dynamic_listener_key(k) is not None)
        if entity == DEFAULT_ENTITY and per_broker:
            raise ConfigError(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: Set({', '.join(per_broker)})"
            )
        result = {}
        for key, value in overrides.items():
            if value is None:
                continue
            self._validate(key, value)
            result[key] = value
        return result

    def preview(self, entity: str, overrides: Mapping[str, str]) -> BrokerConfig:
        """The effective configuration ``overrides`` (checked) would make, persisting nothing."""
        levels = {**self._levels, entity: dict(overrides)}
        return self._static.with_dynamic(levels[DEFAULT_ENTITY], levels[self._node])

    def replace(self, entity: str, overrides: Mapping[str, str]) -> BrokerConfig:
        """Make ``overrides`` (checked) the level's whole set, persist, return the effective
        configuration."""
        levels = {**self._levels, entity: dict(overrides)}
        config = self._static.with_dynamic(levels[DEFAULT_ENTITY], levels[self._node])
        stored = {"default": levels[DEFAULT_ENTITY], self._node: levels[self._node]}
        write_atomically(self._path, json.dumps(stored, indent=1, sort_keys=True).encode())
        self._levels = levels
        log.info("dynamic broker config %r: %s", entity or "<default>", overrides)
        return config

    def effective(self) -> BrokerConfig:
        """``server.properties`` with both dynamic levels laid over it."""
        return self._static.with_dynamic(self._levels[DEFAULT_ENTITY], self._levels[self._node])

    @staticmethod
    def _validate(key: str, value: str) -> None:
        if not _dynamic(key):
            raise ConfigError(f"Cannot update these configs dynamically: Set({key})")
        try:
            dynamic_key(key).parse(value)
        except ConfigError as exc:
            raise ConfigError(
                f"Invalid value {value} for configuration {key}: {exc.reason}"
            ) from None


def _dynamic(key: str) -> bool:
    return key in DYNAMIC_BROKER_KEYS or dynamic_listener_key(key) is not None
