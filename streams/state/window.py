"""Window stores: values per ``(key, window start)``, expired as stream time moves on.

:class:`WindowStore` is the data API, the changelog and the store's clock; where entries live is
its backend's business: :class:`MemoryWindowBackend`, or the time-segmented RocksDB backend of
:mod:`sluice.streams.state.rocksdb_window` (Kafka's default). The store's observed time is the
largest window start put; a window whose ``start <= observed - retention`` is gone (Kafka's
rule): a put of it is ignored and no read returns it.

In memory, entries are grouped by window start (``start → {key → entry}``) with the starts kept
sorted, so that expiry drops whole windows from the front — never a scan per record — and a fetch
looks only at the starts in range.

With ``retain_duplicates`` (the buffers of stream–stream joins) every put is kept, in order,
under a sequence number; a duplicate taken out (:meth:`WindowStore.remove_entry`) is logged as
a tombstone of its sequence number, so that a restored buffer does not hold it again.

Changelog records: key = serialized key + 8-byte big-endian window start (+ 4-byte sequence
number with duplicates), value = serialized value, timestamp = the entry's timestamp.

>>> from sluice.serde import STRING, INT64
>>> store = WindowStore(STRING, INT64, retention_ms=100)
>>> store.put("a", 1, 0, 5); store.put("a", 2, 50, 55); store.put("b", 7, 50, 51)
>>> list(store.fetch_range("a", 0, 60))
[(0, 1), (50, 2)]
>>> store.put("a", 3, 150, 150)   # observed time 150: the window at 0 and the one at 50 expire
>>> store.fetch("a", 0), list(store.fetch_all(0, 200))
(None, [(('a', 150), 3)])
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from sluice.serde import Serde
from sluice.streams.state.base import StateStore, StoreContext
from sluice.streams.state.keyvalue import Entry

__all__ = ["MemoryWindowBackend", "RawWindowRecord", "WindowBackend", "WindowStore"]

_START = struct.Struct(">q")
_START_SEQ = struct.Struct(">qi")
_LAST = 2**63 - 1

RawWindowRecord = tuple[bytes, int, int, bytes | None, int]
"""A changelog record as a backend restores it: ``(key bytes, start, seq, value, timestamp)``."""


class WindowBackend(Protocol):
    """Where window entries live. ``seq`` is 0 without duplicates; with duplicates entries are
    ``(value, timestamp, seq)`` triples, returned in sequence order within a window."""

    persistent: bool

    def open(self, context: StoreContext) -> tuple[int, int]:
        """Open files; returns the saved ``(observed time, last seq)`` (``(-1, 0)``: none)."""

    def get(self, key: Any, start: int) -> Entry | None:
        """The entry of ``key`` in one window (with duplicates: the last one), or None."""

    def put(self, key: Any, start: int, seq: int, entry: Entry | None) -> None:
        """Set (or with None, delete) an entry; may be cached until :meth:`commit`."""

    def fetch(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Entry]]:
        """``(start, entry)`` of ``key`` for starts in ``[time_from, time_to]``, by start."""

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Any, int, Entry]]:
        """``(key, start, entry)`` for starts in ``[time_from, time_to]``, by start."""

    def expire(self, limit: int) -> None:
        """Forget every window with ``start <= limit``."""

    def commit(self, observed_time: int, seq: int) -> None:
        """Make every put so far durable, with the store's clock (persistent backends)."""

    def close(self) -> None:
        """Close files."""

    def wipe(self) -> None:
        """Delete everything."""


class MemoryWindowBackend:
    """Dicts of ``key → entry`` (lists of entries with duplicates) per window start."""

    persistent = False

    def __init__(self, retain_duplicates: bool = False) -> None:
        self.retain_duplicates = retain_duplicates
        self._windows: dict[int, dict[Any, Any]] = {}
        self._starts: list[int] = []

    def open(self, context: StoreContext) -> tuple[int, int]:
        return -1, 0

    def get(self, key: Any, start: int) -> Entry | None:
        window = self._windows.get(start)
        if window is None:
            return None
        found = window.get(key)
        if found is None or not self.retain_duplicates:
            return found
        return found[-1] if found else None

    def put(self, key: Any, start: int, seq: int, entry: Entry | None) -> None:
        window = self._windows.get(start)
        if window is None:
            if entry is None:
                return
            window = self._windows[start] = {}
            bisect.insort(self._starts, start)
        if not self.retain_duplicates:
            if entry is None:
                window.pop(key, None)
            else:
                window[key] = entry
        elif entry is not None:
            window.setdefault(key, []).append(entry)
        else:
            found = window.get(key)
            if found:
                found[:] = [kept for kept in found if kept[2] != seq]
                if not found:
                    del window[key]

    def fetch(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Entry]]:
        starts = self._starts
        low = bisect.bisect_left(starts, time_from)
        high = bisect.bisect_right(starts, time_to)
        for start in starts[low:high]:
            found = self._windows[start].get(key)
            if found is None:
                continue
            if self.retain_duplicates:
                for entry in list(found):
                    yield start, entry
            else:
                yield start, found

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Any, int, Entry]]:
        starts = self._starts
        low = bisect.bisect_left(starts, time_from)
        high = bisect.bisect_right(starts, time_to)
        for start in starts[low:high]:
            for key, found in list(self._windows[start].items()):
                for entry in list(found) if self.retain_duplicates else [found]:
                    yield key, start, entry

    def expire(self, limit: int) -> None:
        starts = self._starts
        cut = bisect.bisect_right(starts, limit)
        if cut:
            for start in starts[:cut]:
                del self._windows[start]
            del starts[:cut]

    def commit(self, observed_time: int, seq: int) -> None:
        pass

    def close(self) -> None:
        self._windows.clear()
        self._starts.clear()

    def wipe(self) -> None:
        self.close()


class WindowStore(StateStore):
    """Values per key and window start, kept for ``retention_ms`` of stream time."""

    def __init__(
        self,
        key_serde: Serde,
        value_serde: Serde,
        retention_ms: int,
        *,
        retain_duplicates: bool = False,
        backend: WindowBackend | None = None,
    ) -> None:
        self.name = ""
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.retention_ms = retention_ms
        self.retain_duplicates = retain_duplicates
        self.backend: WindowBackend = (
            backend if backend is not None else MemoryWindowBackend(retain_duplicates)
        )
        self.persistent = self.backend.persistent
        self.observed_time = -1
        self._seq = 0
        self._dirty: dict[tuple[Any, int, int], Entry | None] = {}

    def init(self, context: StoreContext) -> None:
        super().init(context)
        observed_time, seq = self.backend.open(context)
        self._seq = max(self._seq, seq)
        if observed_time > self.observed_time:
            self.observed_time = observed_time
            self.backend.expire(observed_time - self.retention_ms)

    # -- data API ---------------------------------------------------------------------------
    def put(self, key: Any, value: Any, window_start: int, timestamp: int) -> None:
        """Set the value of ``key`` in the window starting at ``window_start`` (None deletes)."""
        if window_start <= self.observed_time - self.retention_ms:
            return  # already expired
        if self.retain_duplicates:
            self._seq += 1
            seq = self._seq
            entry: Entry | None = None if value is None else (value, timestamp, seq)  # type: ignore[assignment]
        else:
            seq = 0
            entry = None if value is None else (value, timestamp)
        self.backend.put(key, window_start, seq, entry)
        if self.logged:
            self._dirty[(key, window_start, seq)] = entry
        if window_start > self.observed_time:
            self.observed_time = window_start
            self.backend.expire(window_start - self.retention_ms)

    def fetch(self, key: Any, window_start: int) -> Any:
        """The value of ``key`` in one window (the last one put, with duplicates), or None."""
        entry = self.fetch_with_timestamp(key, window_start)
        return None if entry is None else entry[0]

    def fetch_with_timestamp(self, key: Any, window_start: int) -> Entry | None:
        """``(value, timestamp)`` of ``key`` in one window, or None."""
        return self.backend.get(key, window_start)

    def accessors(
        self,
    ) -> tuple[Callable[[Any, int], Entry | None], Callable[[Any, Any, int, int], None]]:
        """``(fetch_with_timestamp, put)`` for an operator's per-record path: the same as those
        methods, the fetch without the store's own frame (the backend's ``get``); a subclass
        that overrides :meth:`fetch_with_timestamp` gets its method.

        >>> from sluice.serde import STRING, INT64
        >>> store = WindowStore(STRING, INT64, retention_ms=60_000)
        >>> fetch, put = store.accessors()
        >>> put("a", 1, 0, 10); fetch("a", 0)
        (1, 10)
        """
        if type(self).fetch_with_timestamp is not WindowStore.fetch_with_timestamp:
            return self.fetch_with_timestamp, self.put
        return self.backend.get, self.put

    def fetch_range(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Any]]:
        """``(window start, value)`` of ``key`` for starts in ``[time_from, time_to]``."""
        for start, entry in self.backend.fetch(key, time_from, time_to):
            yield start, entry[0]

    def fetch_entries(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Entry]]:
        """Like :meth:`fetch_range` with ``(value, timestamp)`` entries (``(value, timestamp,
        sequence number)`` with duplicates: the object :meth:`remove_entry` takes)."""
        return self.backend.fetch(key, time_from, time_to)

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[tuple[Any, int], Any]]:
        """``((key, window start), value)`` for every key and start in ``[time_from, time_to]``."""
        for key, start, entry in self.backend.fetch_all(time_from, time_to):
            yield (key, start), entry[0]

    def all(self) -> Iterator[tuple[tuple[Any, int], Any]]:
        """Every ``((key, window start), value)``, oldest window first."""
        return self.fetch_all(-_LAST - 1, _LAST)

    def remove_entry(self, key: Any, window_start: int, entry: Entry) -> None:
        """Drop one duplicate (used by the outer-join buffer once a record found a partner)."""
        if self.retain_duplicates:
            seq = entry[2]  # type: ignore[misc]
            self.backend.put(key, window_start, seq, None)
            self._dirty[(key, window_start, seq)] = None  # a tombstone of its sequence number
        else:
            self.put(key, None, window_start, entry[1])

    # -- runtime API ------------------------------------------------------------------------
    def flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if self.logged and self.context is not None and self.context.changelog_topic:
            serialize_key = self.key_serde.serialize
            serialize_value = self.value_serde.serialize
            duplicates = self.retain_duplicates
            for (key, start, seq), entry in dirty.items():
                suffix = _START_SEQ.pack(start, seq) if duplicates else _START.pack(start)
                if entry is None:
                    self._log(serialize_key(key) + suffix, None, start)
                else:
                    self._log(serialize_key(key) + suffix, serialize_value(entry[0]), entry[1])
        self.backend.commit(self.observed_time, self._seq)

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        self.restore_batch([(key, value, timestamp)])

    def restore_batch(self, records: list[tuple[bytes, bytes | None, int]]) -> None:
        parsed: list[RawWindowRecord] = []
        layout = _START_SEQ if self.retain_duplicates else _START
        size = layout.size
        observed, retention, last_seq = self.observed_time, self.retention_ms, self._seq
        for key, value, timestamp in records:
            start, *seq = layout.unpack_from(key, len(key) - size)
            if start > observed:
                observed = start
            elif start <= observed - retention:
                continue  # expired already
            number = seq[0] if seq else 0
            last_seq = max(last_seq, number)
            parsed.append((key, start, number, value, timestamp))
        self._seq = last_seq
        restore_raw: Callable[[list[RawWindowRecord]], None] | None = getattr(
            self.backend, "restore_raw", None
        )
        if restore_raw is not None:
            restore_raw(parsed)  # a bytes backend: the changelog key is its own key
        else:
            deserialize_key, deserialize_value = (
                self.key_serde.deserialize,
                self.value_serde.deserialize,
            )
            put = self.backend.put
            duplicates = self.retain_duplicates
            for key, start, number, value, timestamp in parsed:
                entry: Entry | None = None
                if value is not None:
                    decoded = deserialize_value(value)
                    entry = (decoded, timestamp, number) if duplicates else (decoded, timestamp)  # type: ignore[assignment]
                put(deserialize_key(key[: len(key) - size]), start, number, entry)
        if observed > self.observed_time:
            self.observed_time = observed
            self.backend.expire(observed - retention)

    def flush_restored(self) -> None:
        self.backend.commit(self.observed_time, self._seq)

    def close(self) -> None:
        self.backend.commit(self.observed_time, self._seq)
        self.backend.close()

    def wipe(self) -> None:
        self._dirty.clear()
        self.observed_time = -1
        self._seq = 0
        self.backend.wipe()
