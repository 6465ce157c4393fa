"""Session stores: values per ``(key, session start, session end)``.

:class:`SessionStore` is the data API, the changelog and the store's clock; its backend keeps the
sessions: :class:`MemorySessionBackend`, or the RocksDB backend segmented by session end of
:mod:`sluice.streams.state.rocksdb_session` (Kafka's default). A session whose
``end <= observed - retention`` is gone, where observed is the largest end put.

In memory, the sessions of a key live in a dict; an index of session ends in a heap drives
expiry.

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
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from sluice.serde import Serde
from sluice.streams.state.base import StateStore, StoreContext
from sluice.streams.state.keyvalue import Entry

__all__ = ["MemorySessionBackend", "RawSessionRecord", "SessionBackend", "SessionStore"]

_BOUNDS = struct.Struct(">qq")
_FIRST, _LAST = -(2**63), 2**63 - 1

RawSessionRecord = tuple[bytes, int, int, bytes | None, int]
"""A changelog record as a backend restores it: ``(key bytes, start, end, value, timestamp)``."""

Session = tuple[int, int, Entry]
"""``(start, end, (value, timestamp))``."""


class SessionBackend(Protocol):
    """Where sessions live."""

    persistent: bool

    def open(self, context: StoreContext) -> int:
        """Open files; returns the saved observed time (-1: none)."""

    def get(self, key: Any, start: int, end: int) -> Entry | None:
        """The entry of one session, or None."""

    def put(self, key: Any, start: int, end: int, entry: Entry | None) -> None:
        """Set (or with None, delete) a session; may be cached until :meth:`commit`."""

    def find(self, key: Any, earliest_end: int, latest_start: int) -> list[Session]:
        """Sessions of ``key`` with ``end >= earliest_end`` and ``start <= latest_start``, by
        ``(start, end)``."""

    def all(self) -> Iterator[tuple[Any, int, int, Entry]]:
        """Every ``(key, start, end, entry)``."""

    def expire(self, limit: int) -> None:
        """Forget every session with ``end <= limit``."""

    def commit(self, observed_time: int) -> None:
        """Make every put so far durable, with the store's clock (persistent backends)."""

    def close(self) -> None:
        """Close files."""

    def wipe(self) -> None:
        """Delete everything."""


class MemorySessionBackend:
    """A dict of sessions per key, and a heap of session ends for expiry."""

    persistent = False

    def __init__(self) -> None:
        self._sessions: dict[Any, dict[tuple[int, int], Entry]] = {}
        self._ends: list[tuple[int, int, Any, int]] = []
        self._tie = itertools.count()

    def open(self, context: StoreContext) -> int:
        return -1

    def get(self, key: Any, start: int, end: int) -> Entry | None:
        sessions = self._sessions.get(key)
        return None if sessions is None else sessions.get((start, end))

    def put(self, key: Any, start: int, end: int, entry: Entry | None) -> None:
        if entry is None:
            sessions = self._sessions.get(key)
            removed = sessions is not None and sessions.pop((start, end), None) is not None
            if removed and not sessions:
                del self._sessions[key]
            return
        self._sessions.setdefault(key, {})[(start, end)] = entry
        heapq.heappush(self._ends, (end, next(self._tie), key, start))

    def find(self, key: Any, earliest_end: int, latest_start: int) -> list[Session]:
        sessions = self._sessions.get(key)
        if not sessions:
            return []
        return sorted(
            (start, end, entry)
            for (start, end), entry in sessions.items()
            if end >= earliest_end and start <= latest_start
        )

    def all(self) -> Iterator[tuple[Any, int, int, Entry]]:
        for key, sessions in list(self._sessions.items()):
            for (start, end), entry in sorted(sessions.items()):
                yield key, start, end, entry

    def expire(self, limit: int) -> None:
        ends = self._ends
        while ends and ends[0][0] <= limit:
            end, _, key, start = heapq.heappop(ends)
            sessions = self._sessions.get(key)
            removed = sessions is not None and sessions.pop((start, end), None) is not None
            if removed and not sessions:
                del self._sessions[key]

    def commit(self, observed_time: int) -> None:
        pass

    def close(self) -> None:
        self._sessions.clear()
        self._ends.clear()

    def wipe(self) -> None:
        self.close()


class SessionStore(StateStore):
    """Sessions per key, kept for ``retention_ms`` of stream time after they end."""

    def __init__(
        self,
        key_serde: Serde,
        value_serde: Serde,
        retention_ms: int,
        *,
        backend: SessionBackend | None = None,
    ) -> None:
        self.name = ""
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.retention_ms = retention_ms
        self.backend: SessionBackend = backend if backend is not None else MemorySessionBackend()
        self.persistent = self.backend.persistent
        self.observed_time = -1
        self._dirty: dict[tuple[Any, int, int], Entry | None] = {}

    def init(self, context: StoreContext) -> None:
        super().init(context)
        observed_time = self.backend.open(context)
        if observed_time > self.observed_time:
            self.observed_time = observed_time
            self.backend.expire(observed_time - self.retention_ms)

    def put(self, key: Any, start: int, end: int, value: Any, timestamp: int) -> None:
        """Set the value of the session ``[start, end]`` of ``key``."""
        if end <= self.observed_time - self.retention_ms:
            return
        entry = (value, timestamp)
        self.backend.put(key, start, end, entry)
        self._dirty[(key, start, end)] = entry
        if end > self.observed_time:
            self.observed_time = end
            self.backend.expire(end - self.retention_ms)

    def remove(self, key: Any, start: int, end: int) -> None:
        """Delete one session (merged into a larger one)."""
        if self.backend.get(key, start, end) is not None:
            self.backend.put(key, start, end, None)
            self._dirty[(key, start, end)] = None

    def find_sessions(
        self, key: Any, earliest_end: int, latest_start: int
    ) -> list[tuple[int, int, Any]]:
        """Sessions of ``key`` with ``end >= earliest_end``, ``start <= latest_start``, by start."""
        return [
            (start, end, entry[0])
            for start, end, entry in self.backend.find(key, earliest_end, latest_start)
        ]

    def fetch(self, key: Any) -> Iterator[tuple[int, int, Any]]:
        """Every session of ``key``: ``(start, end, value)`` by start."""
        return iter(self.find_sessions(key, _FIRST, _LAST))

    def all(self) -> Iterator[tuple[tuple[Any, int, int], Any]]:
        """Every ``((key, start, end), value)``."""
        for key, start, end, entry in self.backend.all():
            yield (key, start, end), entry[0]

    def flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if self.logged and self.context is not None and self.context.changelog_topic:
            serialize_key = self.key_serde.serialize
            serialize_value = self.value_serde.serialize
            for (key, start, end), entry in dirty.items():
                raw_key = serialize_key(key) + _BOUNDS.pack(start, end)
                if entry is None:
                    self._log(raw_key, None, end)
                else:
                    self._log(raw_key, serialize_value(entry[0]), entry[1])
        self.backend.commit(self.observed_time)

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.restore_batch([(key, value, timestamp)])

    def restore_batch(self, records: list[tuple[bytes, bytes | None, int]]) -> None:
        parsed: list[RawSessionRecord] = []
        size = _BOUNDS.size
        observed, retention = self.observed_time, self.retention_ms
        for key, value, timestamp in records:
            start, end = _BOUNDS.unpack_from(key, len(key) - size)
            if value is not None:
                if end <= observed - retention:
                    continue  # expired already
                observed = max(observed, end)
            parsed.append((key, start, end, value, timestamp))
        restore_raw: Callable[[list[RawSessionRecord]], None] | None = getattr(
            self.backend, "restore_raw", None
        )
        if restore_raw is not None:
            restore_raw(parsed)  # a bytes backend: the changelog key is its own key
        else:
            deserialize_key = self.key_serde.deserialize
            deserialize_value = self.value_serde.deserialize
            put = self.backend.put
            for key, start, end, value, timestamp in parsed:
                entry = None if value is None else (deserialize_value(value), timestamp)
                put(deserialize_key(key[: len(key) - size]), start, end, entry)
        if observed > self.observed_time:
            self.observed_time = observed
            self.backend.expire(observed - retention)

    def flush_restored(self) -> None:
        self.backend.commit(self.observed_time)

    def close(self) -> None:
        self.backend.commit(self.observed_time)
        self.backend.close()

    def wipe(self) -> None:
        self._dirty.clear()
        self.observed_time = -1
        self.backend.wipe()
