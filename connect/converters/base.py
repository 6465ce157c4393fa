"""The converter interface: Connect data ↔ the bytes of a Kafka record's key or value.

Implementations live in :mod:`sluice.connect.converters` (string, bytes, and the factory) and
:mod:`sluice.connect.converters.json_converter`; a plugin converter subclasses :class:`Converter`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

from sluice.connect.api.data import Schema
from sluice.errors import ConfigError

__all__ = ["Converter", "boolean_setting"]


def boolean_setting(config: Mapping[str, Any], key: str, default: bool) -> bool:
    """A true/false setting (a bool, or the text true or false)."""
    raw = config.get(key, default)
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise ConfigError(f"must be true or false, not {raw!r}", key=key)


class Converter(ABC):
    """Turns Connect data into record bytes and back; one instance serves either keys or values.

    ``configure`` receives the converter's settings with the ``key.converter.`` /
    ``value.converter.`` prefix removed.
    """

    is_key: bool = False

    def configure(self, config: Mapping[str, Any], is_key: bool) -> None:
        """Apply settings (unknown keys are ignored, as Kafka does)."""
        self.is_key = is_key

    @abstractmethod
    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialize ``value`` (described by ``schema``, or schemaless) for ``topic``."""

    @abstractmethod
    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        """Deserialize record bytes of ``topic`` into ``(schema, value)``."""

    def close(self) -> None:
        """Release what the converter holds (Kafka's ``Converter`` is ``Closeable``): called
        once when its task stops. Nothing by default."""
        return None

    def from_connect_all(
        self, topic: str, schema: Schema | None, values: list[Any]
    ) -> list[bytes | None]:
        """:meth:`from_connect` of each value (all described by ``schema``), maybe in bulk."""
        return [self.from_connect(topic, schema, value) for value in values]

    def to_connect_all(
        self, topic: str, datas: list[bytes | None]
    ) -> tuple[Schema | None, list[Any]] | None:
        """``(schema, values)`` of many records' bytes when this converter gives them all one
        schema (string, bytes); None when it cannot say (then :meth:`to_connect` each)."""
        return None
