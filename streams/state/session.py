"""Session stores: values per ``(key, session start, session end)``.

Sessions of a key live in a dict; an index of session ends in a heap drives expiry: a session
whose ``end <= observed - retention`` is dropped, where observed is the largest end put.

Changelog records: key = serialized key + 8-byte start + 8-byte end (big-endian), value =
serialized value or a tombstone when sessions merge.

>>> from sluice.serde import STRING, INT64
>>> store = SessionStore(STRING, INT64, retention_ms=1000)
>>> store.put("a", 0, 10, 2, 10); store.put("a", 100, 130, 5, 130)
>>> store.find_sessions("a", earliest_end=5, latest_start=105)
[(0, 10, 2), (100, 130, 5)]
>>> store.remove("a", 0, 10); list(store.fetch("a"))
[(100, 130, 5)]
"""

from __future__ import annotations

import heapq
import itertools
import struct
from collections.abc import Iterator
from typing import Any

from sluice.serde import Serde
from sluice.streams.state.base import StateStore
from sluice.streams.state.keyvalue import Entry

__all__ = ["SessionStore"]

_BOUNDS = struct.Struct(">qq")


class SessionStore(StateStore):
    """Sessions per key, kept for ``retention_ms`` of stream time after they end."""

    def __init__(self, key_serde: Serde, value_serde: Serde, retention_ms: int) -> None:
        self.name = ""
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.retention_ms = retention_ms
        self.observed_time = -1
        self._sessions: dict[Any, dict[tuple[int, int], Entry]] = {}
        self._ends: list[tuple[int, int, Any, int]] = []
        self._tie = itertools.count()
        self._dirty: dict[tuple[Any, int, int], Entry | None] = {}

    def put(self, key: Any, start: int, end: int, value: Any, timestamp: int) -> None:
        """Set the value of the session ``[start, end]`` of ``key``."""
        if end <= self.observed_time - self.retention_ms:
            return
        sessions = self._sessions.setdefault(key, {})
        entry = (value, timestamp)
        sessions[(start, end)] = entry
        heapq.heappush(self._ends, (end, next(self._tie), key, start))
        self._dirty[(key, start, end)] = entry
        if end > self.observed_time:
            self.observed_time = end
            self._expire()

    def remove(self, key: Any, start: int, end: int) -> None:
        """Delete one session (merged into a larger one)."""
        sessions = self._sessions.get(key)
        if sessions is not None and sessions.pop((start, end), None) is not None:
            if not sessions:
                del self._sessions[key]
            self._dirty[(key, start, end)] = None

    def find_sessions(
        self, key: Any, earliest_end: int, latest_start: int
    ) -> list[tuple[int, int, Any]]:
        """Sessions of ``key`` with ``end >= earliest_end``, ``start <= latest_start``, by start."""
        sessions = self._sessions.get(key)
        if not sessions:
            return []
        return sorted(
            (start, end, entry[0])
            for (start, end), entry in sessions.items()
            if end >= earliest_end and start <= latest_start
        )

    def fetch(self, key: Any) -> Iterator[tuple[int, int, Any]]:
        """Every session of ``key``: ``(start, end, value)`` by start."""
        return iter(self.find_sessions(key, -(2**63), 2**63 - 1))

    def all(self) -> Iterator[tuple[tuple[Any, int, int], Any]]:
        """Every ``((key, start, end), value)``."""
        for key, sessions in list(self._sessions.items()):
            for (start, end), entry in sorted(sessions.items()):
                yield (key, start, end), entry[0]

    def _expire(self) -> None:
        limit = self.observed_time - self.retention_ms
        ends = self._ends
        while ends and ends[0][0] <= limit:
            end, _, key, start = heapq.heappop(ends)
            sessions = self._sessions.get(key)
            removed = sessions is not None and sessions.pop((start, end), None) is not None
            if removed and not sessions:
                del self._sessions[key]

    def flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if not (self.logged and self.context is not None and self.context.changelog_topic):
            return
        serialize_key = self.key_serde.serialize
        serialize_value = self.value_serde.serialize
        for (key, start, end), entry in dirty.items():
            raw_key = serialize_key(key) + _BOUNDS.pack(start, end)
            if entry is None:
                self._log(raw_key, None, end)
            else:
                self._log(raw_key, serialize_value(entry[0]), entry[1])

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        start, end = _BOUNDS.unpack_from(key, len(key) - _BOUNDS.size)
        record_key = self.key_serde.deserialize(key[: len(key) - _BOUNDS.size])
        if value is None:
            self.remove(record_key, start, end)
        else:
            self.put(record_key, start, end, self.value_serde.deserialize(value), timestamp)
        self._dirty.clear()

    def close(self) -> None:
        self._sessions.clear()
        self._ends.clear()
