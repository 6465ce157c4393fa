"""The broker's configuration: ``server.properties`` and the effective broker and topic configs.

Sluice accepts Kafka's keys as they are. Each topic-level key has a broker-level synonym
(``retention.ms`` ↔ ``log.retention.ms``) that supplies its default; a topic override wins.

>>> broker = BrokerConfig.from_properties({"log.retention.hours": "1", "num.partitions": "3"})
>>> broker.num_partitions
3
>>> topic = broker.topic_config({"segment.bytes": "1048576"})
>>> topic["retention.ms"], topic["segment.bytes"], topic["cleanup.policy"]
(3600000, 1048576, ['delete'])
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sluice.broker.config_keys import (
    BROKER_KEYS,
    DYNAMIC_BROKER_KEYS,
    INERT_BROKER_KEYS,
    INT_MAX,
    LONG_MAX,
    TOPIC_KEYS,
    ConfigKey,
    ConfigSource,
    ConfigType,
    dynamic_listener_key,
    listener_key,
    render,
)
from sluice.config import read_properties
from sluice.errors import ConfigError

__all__ = [
    "BROKER_KEYS",
    "DYNAMIC_BROKER_KEYS",
    "INERT_BROKER_KEYS",
    "INT_MAX",
    "LONG_MAX",
    "TOPIC_KEYS",
    "BrokerConfig",
    "ConfigKey",
    "ConfigSource",
    "ConfigType",
    "dynamic_key",
    "parse_listener",
    "parse_topic_value",
    "render",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BrokerConfig:
    """The broker's effective configuration.

    ``values`` holds every key with its typed value; ``explicit`` the keys that were set.
    """

    values: Mapping[str, Any]
    explicit: frozenset[str] = field(default_factory=frozenset)
    static: Mapping[str, Any] = field(default_factory=dict)
    """The typed values set in ``server.properties`` (and on the command line)."""
    dynamic_default: Mapping[str, Any] = field(default_factory=dict)
    """Typed values set by AlterConfigs on the cluster-default BROKER resource (name "")."""
    dynamic_broker: Mapping[str, Any] = field(default_factory=dict)
    """Typed values set by AlterConfigs on this broker's BROKER resource (its id)."""

    @classmethod
    def from_properties(
        cls,
        props: Mapping[str, str],
        *,
        source: str | None = None,
        lines: Mapping[str, int] | None = None,
    ) -> BrokerConfig:
        """Build from textual key/values (a parsed ``server.properties`` and overrides)."""
        values = {name: key.default for name, key in BROKER_KEYS.items()}
        explicit: set[str] = set()
        for name, raw in props.items():
            line = (lines or {}).get(name)
            if name in BROKER_KEYS:
                values[name] = BROKER_KEYS[name].parse(raw, source=source, line=line)
                explicit.add(name)
            elif (patterned := listener_key(name)) is not None:  # listener.name.<l>.<key>
                values[name] = patterned.parse(raw, source=source, line=line)
                explicit.add(name)
            elif name in TOPIC_KEYS:
                raise ConfigError(
                    f"is a topic-level key; the broker-level key is {TOPIC_KEYS[name].synonym}",
                    key=name,
                    source=source,
                    line=line,
                )
            elif name not in INERT_BROKER_KEYS:
                log.warning("%s: unknown key %s ignored", source or "config", name)
        return cls(values, frozenset(explicit), {k: values[k] for k in explicit})

    def with_dynamic(
        self, default: Mapping[str, str], per_broker: Mapping[str, str]
    ) -> BrokerConfig:
        """This static configuration with dynamic overrides laid over it: the cluster
        default's (``default``), then this broker's (``per_broker``), as Kafka orders them.
        Values are textual; a bad one raises :class:`ConfigError`.

        >>> static = BrokerConfig.from_properties({"log.retention.hours": "1"})
        >>> dyn = static.with_dynamic({"log.retention.ms": "5000"}, {})
        >>> dyn.topic_default("retention.ms"), dyn.source("log.retention.ms").name
        (5000, 'DYNAMIC_DEFAULT_BROKER_CONFIG')
        """
        typed_default = {k: dynamic_key(k).parse(v) for k, v in default.items()}
        typed_broker = {k: dynamic_key(k).parse(v) for k, v in per_broker.items()}
        values = {name: key.default for name, key in BROKER_KEYS.items()}
        values.update(self.static)
        values.update(typed_default)
        values.update(typed_broker)
        explicit = frozenset(self.static) | frozenset(typed_default) | frozenset(typed_broker)
        return BrokerConfig(values, explicit, self.static, typed_default, typed_broker)

    def source(self, name: str) -> ConfigSource:
        """Where broker key ``name`` gets its value from."""
        return self.synonyms(name)[0][2]

    def synonyms(self, name: str) -> list[tuple[str, Any, ConfigSource]]:
        """``(key, typed value, source)`` of every level that sets broker key ``name``, the one
        in force first (Kafka's DescribeConfigs synonyms)."""
        found: list[tuple[str, Any, ConfigSource]] = []
        for level, source in (
            (self.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
            (self.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (self.static, ConfigSource.STATIC_BROKER_CONFIG),
        ):
            if name in level:
                found.append((name, level[name], source))
        found.append((name, BROKER_KEYS[name].default, ConfigSource.DEFAULT_CONFIG))
        return found

    def topic_synonyms(self, name: str) -> list[tuple[str, Any, ConfigSource]]:
        """The broker levels that may supply topic key ``name``'s default, the one in force
        first, ending with the topic key's own default."""
        key = TOPIC_KEYS[name]
        names = list(_TOPIC_SYNONYMS.get(name, (key.synonym,) if key.synonym else ()))
        found = [
            entry
            for synonym in names
            for entry in self.synonyms(synonym)
            if entry[2] != ConfigSource.DEFAULT_CONFIG
        ]
        found.sort(key=lambda entry: _SOURCE_ORDER.index(entry[2]))
        found.append((names[0] if names else name, key.default, ConfigSource.DEFAULT_CONFIG))
        return found

    @classmethod
    def load(cls, path: Path | None, overrides: Mapping[str, str] | None = None) -> BrokerConfig:
        """Read a ``server.properties`` file (optional) and apply textual overrides."""
        props: dict[str, str] = {}
        lines: dict[str, int] = {}
        if path is not None:
            for line, key, value in read_properties(path):
                props[key], lines[key] = value, line
        config = cls.from_properties(props, source=str(path) if path else None, lines=lines)
        if overrides:
            merged = {k: render(v) or "" for k, v in config.values.items() if k in config.explicit}
            merged.update(overrides)
            config = cls.from_properties(merged, source=str(path) if path else None, lines=lines)
        return config

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    @property
    def node_id(self) -> int:
        broker_id = self.values["broker.id"]
        return int(broker_id if broker_id is not None else self.values["node.id"])

    @property
    def num_partitions(self) -> int:
        return int(self.values["num.partitions"])

    @property
    def log_dirs(self) -> list[Path]:
        """The log directories: ``log.dirs`` (comma-separated, JBOD), else ``log.dir``."""
        dirs = self.values["log.dirs"]
        if dirs:
            return [Path(d) for d in dirs]
        return [Path(self.values["log.dir"])]

    @property
    def data_dir(self) -> Path:
        """The first log directory, which also holds the broker-level files
        (:mod:`sluice.broker.log_dirs`)."""
        return self.log_dirs[0]

    @property
    def listener(self) -> tuple[str, int]:
        """The first listener as ``(host, port)`` (every listener, named, with its security
        protocol: :func:`sluice.broker.security.listeners.parse_listeners`)."""
        return parse_listener(self.values["listeners"][0])

    @property
    def advertised_listener(self) -> tuple[str, int]:
        """What the first listener advertises (its ``advertised.listeners`` entry, by name)."""
        name = _listener_name(self.values["listeners"][0])
        advertised = [
            text
            for text in self.values["advertised.listeners"] or ()
            if _listener_name(text) == name
        ]
        host, port = parse_listener(advertised[0]) if advertised else self.listener
        return ("127.0.0.1" if host in ("", "0.0.0.0") else host), port

    def topic_default(self, name: str) -> Any:
        """The broker-level default of topic key ``name``."""
        key = TOPIC_KEYS[name]
        if name == "retention.ms":
            for synonym, factor in (
                ("log.retention.ms", 1),
                ("log.retention.minutes", 60_000),
                ("log.retention.hours", 3_600_000),
            ):
                value = self.values[synonym]
                if value is not None:
                    return value if value < 0 else value * factor
        if name == "segment.ms" and "log.roll.ms" not in self.explicit:
            return self.values["log.roll.hours"] * 3_600_000
        if name == "segment.jitter.ms" and "log.roll.jitter.ms" not in self.explicit:
            return self.values["log.roll.jitter.hours"] * 3_600_000
        if key.synonym is None:
            return key.default
        return self.values[key.synonym]

    def topic_config(self, overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The effective config of a topic with the given textual overrides."""
        config = {name: self.topic_default(name) for name in TOPIC_KEYS}
        for name, raw in (overrides or {}).items():
            config[name] = parse_topic_value(name, raw)
        return config


_TOPIC_SYNONYMS = {
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
}
_SOURCE_ORDER = (
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG,
    ConfigSource.DEFAULT_CONFIG,
)


def parse_topic_value(name: str, raw: str | None) -> Any:
    """Parse one topic-level key, refusing unknown keys.

    >>> parse_topic_value("cleanup.policy", "compact")
    ['compact']
    """
    if name not in TOPIC_KEYS:
        raise ConfigError("unknown topic config", key=name)
    return TOPIC_KEYS[name].parse(raw)


def _listener_name(text: str) -> str:
    name, sep, _ = text.partition("://")
    return name.strip().upper() if sep else "PLAINTEXT"


def dynamic_key(name: str) -> ConfigKey:
    """The key of a name AlterConfigs may set on the BROKER resource: a broker key, or a
    listener's dynamic keystore key (``listener.name.<l>.ssl.keystore.location``…); KeyError
    for any other name."""
    key = BROKER_KEYS.get(name) or dynamic_listener_key(name)
    if key is None:
        raise KeyError(name)
    return key


def parse_listener(text: str) -> tuple[str, int]:
    """``PLAINTEXT://host:port`` or ``host:port`` → ``(host, port)``.

    >>> parse_listener("PLAINTEXT://127.0.0.1:9092")
    ('127.0.0.1', 9092)
    """
    _, _, address = text.rpartition("://")
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"expected HOST:PORT, got {text!r}", key="listeners")
    return host.strip("[]"), int(port)
