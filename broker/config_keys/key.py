"""The type of a configuration key: :class:`ConfigKey` (type, default, check, documentation,
synonym), Kafka's numbering of config types and sources, and :func:`render`.

>>> ConfigKey("segment.ms", ConfigType.LONG, 604_800_000, "Roll age.").parse("60000")
60000
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.errors import ConfigError

__all__ = ["INT_MAX", "LONG_MAX", "ConfigKey", "ConfigSource", "ConfigType", "render"]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigType(enum.IntEnum):
    """Kafka's ``ConfigType`` numbering, as DescribeConfigs v3+ reports it."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """Kafka's ``ConfigSource`` numbering (DescribeConfigs)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key: its type, default, validation and documentation."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    synonym: str | None = None
    """The broker-level key that supplies the topic-level default."""
    check: Callable[[Any], str | None] | None = None
    no_effect: str | None = None
    """Why the key, valid in Kafka, changes nothing on a Sluice node (None: it is implemented).
    Such a key is validated, stored and described like any other."""

    def parse(self, raw: str | None, *, source: str | None = None, line: int | None = None) -> Any:
        """Turn the text of a value into a typed one, or raise :class:`ConfigError`."""
        if raw is None:
            return None
        text = raw.strip()
        try:
            value: Any
            match self.type:
                case ConfigType.BOOLEAN:
                    if text.lower() not in ("true", "false"):
                        raise ValueError("must be true or false")
                    value = text.lower() == "true"
                case ConfigType.INT | ConfigType.SHORT | ConfigType.LONG:
                    value = int(text)
                    limit = {ConfigType.INT: INT_MAX, ConfigType.SHORT: 2**15 - 1}.get(
                        self.type, LONG_MAX
                    )
                    if not -limit - 1 <= value <= limit:
                        raise ValueError(f"out of range for {self.type.name.lower()}")
                case ConfigType.DOUBLE:
                    value = float(text)
                case ConfigType.LIST:
                    value = [item.strip() for item in text.split(",") if item.strip()]
                case _:
                    value = text
        except ValueError as exc:
            reason = (
                str(exc)
                if "must" in str(exc) or "range" in str(exc)
                else (f"expected {self.type.name.lower()}, got {raw!r}")
            )
            raise ConfigError(reason, key=self.name, source=source, line=line) from None
        if self.check is not None and (problem := self.check(value)) is not None:
            raise ConfigError(f"{problem} (got {raw!r})", key=self.name, source=source, line=line)
        return value


def render(value: Any) -> str | None:
    """Render a typed value the way Kafka prints it (DescribeConfigs, the CLI).

    >>> render(["compact", "delete"]), render(True), render(None)
    ('compact,delete', 'true', None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
