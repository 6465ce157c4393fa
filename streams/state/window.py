"""Window stores: values per ``(key, window start)``, expired as stream time moves on.

In memory, entries are grouped by window start (``start → {key → entry}``) with the starts kept
sorted, so that expiry drops whole windows from the front — never a scan per record — and a fetch
looks only at the starts in range. The store's observed time is the largest window start put;
a window whose ``start <= observed - retention`` is gone (Kafka's rule).

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
from collections.abc import Iterator
from typing import Any

from sluice.serde import Serde
from sluice.streams.state.base import StateStore
from sluice.streams.state.keyvalue import Entry

__all__ = ["WindowStore"]

_START = struct.Struct(">q")
_START_SEQ = struct.Struct(">qi")


class WindowStore(StateStore):
    """Values per key and window start, kept for ``retention_ms`` of stream time."""

    def __init__(
        self,
        key_serde: Serde,
        value_serde: Serde,
        retention_ms: int,
        *,
        retain_duplicates: bool = False,
    ) -> None:
        self.name = ""
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.retention_ms = retention_ms
        self.retain_duplicates = retain_duplicates
        self.observed_time = -1
        self._windows: dict[int, dict[Any, Any]] = {}
        self._starts: list[int] = []
        self._seq = 0
        self._dirty: dict[tuple[Any, int, int], Entry | None] = {}

    # -- data API ---------------------------------------------------------------------------
    def put(self, key: Any, value: Any, window_start: int, timestamp: int) -> None:
        """Set the value of ``key`` in the window starting at ``window_start`` (None deletes)."""
        if window_start <= self.observed_time - self.retention_ms:
            return  # already expired
        window = self._windows.get(window_start)
        if window is None:
            window = self._windows[window_start] = {}
            bisect.insort(self._starts, window_start)
        entry = None if value is None else (value, timestamp)
        if self.retain_duplicates:
            self._seq += 1
            if entry is not None:
                # duplicates carry their sequence number: (value, timestamp, seq)
                window.setdefault(key, []).append((value, timestamp, self._seq))
            self._dirty[(key, window_start, self._seq)] = entry
        else:
            if entry is None:
                window.pop(key, None)
            else:
                window[key] = entry
            self._dirty[(key, window_start, 0)] = entry
        if window_start > self.observed_time:
            self.observed_time = window_start
            self._expire()

    def fetch(self, key: Any, window_start: int) -> Any:
        """The value of ``key`` in one window (the last one put, with duplicates), or None."""
        entry = self.fetch_with_timestamp(key, window_start)
        return None if entry is None else entry[0]

    def fetch_with_timestamp(self, key: Any, window_start: int) -> Entry | None:
        """``(value, timestamp)`` of ``key`` in one window, or None."""
        window = self._windows.get(window_start)
        if window is None:
            return None
        found = window.get(key)
        if found is None or not self.retain_duplicates:
            return found
        return found[-1] if found else None

    def fetch_range(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Any]]:
        """``(window start, value)`` of ``key`` for starts in ``[time_from, time_to]``."""
        for start, entry in self.fetch_entries(key, time_from, time_to):
            yield start, entry[0]

    def fetch_entries(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Entry]]:
        """Like :meth:`fetch_range` with ``(value, timestamp)`` entries (``(value, timestamp,
        sequence number)`` with duplicates: the object :meth:`remove_entry` takes)."""
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

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[tuple[Any, int], Any]]:
        """``((key, window start), value)`` for every key and start in ``[time_from, time_to]``."""
        starts = self._starts
        low = bisect.bisect_left(starts, time_from)
        high = bisect.bisect_right(starts, time_to)
        for start in starts[low:high]:
            for key, found in list(self._windows[start].items()):
                entries = found if self.retain_duplicates else [found]
                for entry in entries:
                    yield (key, start), entry[0]

    def all(self) -> Iterator[tuple[tuple[Any, int], Any]]:
        """Every ``((key, window start), value)``, oldest window first."""
        if not self._starts:
            return iter(())
        return self.fetch_all(self._starts[0], self._starts[-1])

    def remove_entry(self, key: Any, window_start: int, entry: Entry) -> None:
        """Drop one duplicate (used by the outer-join buffer once a record found a partner)."""
        window = self._windows.get(window_start)
        found = window.get(key) if window is not None else None
        if found is None:
            return
        if self.retain_duplicates:
            index = next((i for i, kept in enumerate(found) if kept is entry), None)
            if index is not None:
                removed = found.pop(index)  # (value, timestamp, seq): log a tombstone of seq
                self._dirty[(key, window_start, removed[2])] = None
            if not found:
                del window[key]  # type: ignore[union-attr]
        else:
            self.put(key, None, window_start, entry[1])

    def _expire(self) -> None:
        limit = self.observed_time - self.retention_ms
        starts = self._starts
        cut = bisect.bisect_right(starts, limit)
        if cut:
            for start in starts[:cut]:
                del self._windows[start]
            del starts[:cut]

    # -- runtime API ------------------------------------------------------------------------
    def flush(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if not (self.logged and self.context is not None and self.context.changelog_topic):
            return
        serialize_key = self.key_serde.serialize
        serialize_value = self.value_serde.serialize
        for (key, start, seq), entry in dirty.items():
            suffix = _START_SEQ.pack(start, seq) if self.retain_duplicates else _START.pack(start)
            if entry is None:
                self._log(serialize_key(key) + suffix, None, start)
            else:
                self._log(serialize_key(key) + suffix, serialize_value(entry[0]), entry[1])

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        size = _START_SEQ.size if self.retain_duplicates else _START.size
        start, *seq = (_START_SEQ if self.retain_duplicates else _START).unpack_from(
            key, len(key) - size
        )
        record_key = self.key_serde.deserialize(key[: len(key) - size])
        if seq:
            self._restore_duplicate(record_key, value, start, timestamp, seq[0])
            return
        self.put(
            record_key,
            None if value is None else self.value_serde.deserialize(value),
            start,
            timestamp,
        )
        self._dirty.clear()

    def _restore_duplicate(
        self, key: Any, value: bytes | None, start: int, timestamp: int, seq: int
    ) -> None:
        last_seq = max(self._seq, seq)
        if value is None:  # a duplicate taken out
            window = self._windows.get(start)
            found = None if window is None else window.get(key)
            if found:
                found[:] = [entry for entry in found if entry[2] != seq]
                if not found:
                    del window[key]  # type: ignore[union-attr]
        else:
            self.put(key, self.value_serde.deserialize(value), start, timestamp)
            window = self._windows.get(start)
            found = None if window is None else window.get(key)
            if found and found[-1][2] == self._seq:  # put it: keep its logged number
                last_value, last_timestamp, _ = found[-1]
                found[-1] = (last_value, last_timestamp, seq)
            self._dirty.clear()
        self._seq = last_seq

    def close(self) -> None:
        self._windows.clear()
        self._starts.clear()
