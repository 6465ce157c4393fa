"""The checks of configuration values, as Kafka's ``ConfigDef`` validators have them.

A check takes the typed value and returns what is wrong with it, or None.

>>> at_least(1)(0), between(1, 9, also=-1)(-1), one_of("delete", "compact")(["compact"])
('must be at least 1', None, None)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["at_least", "between", "message_format_version", "one_of", "throttled_replicas"]


def one_of(*allowed: str) -> Callable[[Any], str | None]:
    """Kafka's ``in(...)`` (``ValidList.in`` for a list): every value one of ``allowed``."""

    def check(value: Any) -> str | None:
        values = value if isinstance(value, list) else [value]
        bad = [v for v in values if v not in allowed]
        return f"must be one of {', '.join(allowed)}" if bad or not values else None

    return check


def at_least(low: int) -> Callable[[Any], str | None]:
    """Kafka's ``atLeast(low)``."""
    return lambda v: f"must be at least {low}" if v < low else None


def between(low: float, high: float, *, also: int | None = None) -> Callable[[Any], str | None]:
    """Kafka's ``between(low, high)`` (with ``Either.of(also, ...)`` when ``also`` is given)."""

    def check(value: Any) -> str | None:
        if value == also or low <= value <= high:
            return None
        extra = f" or {also}" if also is not None else ""
        return f"must be between {low} and {high}{extra}"

    return check


_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?(-IV\d+)?$")


def message_format_version(value: Any) -> str | None:
    """Kafka's ``MetadataVersionValidator``: a release version such as ``3.0`` or ``3.0-IV1``."""
    return None if _VERSION.match(str(value)) else "must be a Kafka version such as 3.0-IV1"


_THROTTLED = re.compile(r"^\d+:\d+$")


def throttled_replicas(value: Any) -> str | None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` pairs."""
    items = [str(v) for v in value]
    if items == ["*"] or all(_THROTTLED.match(v) for v in items):
        return None
    return "must be the wildcard (*) or a list of the form [PartitionId]:[BrokerId],..."
