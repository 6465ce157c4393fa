"""The records that flow through a topology.

A :class:`Record` is what every processor receives: a deserialized key and value, the event time
in milliseconds and the headers. Inside the table part of a topology the value is a
:class:`Change` (the new value and the value it replaces), as in Kafka Streams; windowed results
are keyed by :class:`Windowed`.

>>> r = Record("k", 1, 1000)
>>> r.with_value(2)
Record(key='k', value=2, timestamp=1000, headers=())
>>> Windowed("k", 0, 60_000)
Windowed(key='k', start=0, end=60000)
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ["Change", "Headers", "Record", "Windowed"]

Headers = tuple[tuple[str, bytes | None], ...]
"""Record headers: an ordered tuple of ``(name, value)`` pairs (names may repeat)."""


class Record:
    """A key, a value, a timestamp (ms since the epoch) and headers; treat it as immutable."""

    __slots__ = ("headers", "key", "timestamp", "value")

    def __init__(self, key: Any, value: Any, timestamp: int, headers: Headers = ()) -> None:
        self.key = key
        self.value = value
        self.timestamp = timestamp
        self.headers = headers

    def with_key(self, key: Any) -> Record:
        """A copy with another key."""
        return Record(key, self.value, self.timestamp, self.headers)

    def with_value(self, value: Any) -> Record:
        """A copy with another value."""
        return Record(self.key, value, self.timestamp, self.headers)

    def with_timestamp(self, timestamp: int) -> Record:
        """A copy with another timestamp."""
        return Record(self.key, self.value, timestamp, self.headers)

    def with_headers(self, headers: Headers) -> Record:
        """A copy with other headers."""
        return Record(self.key, self.value, self.timestamp, headers)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return (self.key, self.value, self.timestamp, self.headers) == (
            other.key,
            other.value,
            other.timestamp,
            other.headers,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Record(key={self.key!r}, value={self.value!r}, "
            f"timestamp={self.timestamp!r}, headers={self.headers!r})"
        )


class Change(NamedTuple):
    """A table update: the ``new`` value and the ``old`` one it replaces (``None``: absent)."""

    new: Any
    old: Any


class Windowed(NamedTuple):
    """A key of a windowed result: the record key and its window ``[start, end)`` in ms."""

    key: Any
    start: int
    end: int
