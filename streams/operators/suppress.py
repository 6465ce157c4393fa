"""``suppress_until_window_closes``: one final result per window.

Updates of windowed aggregates wait in a buffer (a logged key-value store, so a restarted task
still emits them) keyed by the windowed key; when the task's stream time reaches a window's end
plus grace, its last value is emitted and forgotten. A tombstone (a session merged away) just
leaves the buffer. The in-memory index of window ends is rebuilt from the store when the
processor starts working, so it holds after a restore.

>>> from sluice.serde import INT64
>>> from sluice.streams.record import Change, Record, Windowed
>>> from sluice.streams.state.keyvalue import KeyValueStore
>>> from sluice.streams.operators.serdes import windowed_binary
>>> class Context:
...     stream_time = 0
>>> op = Suppress("buffer", grace_ms=5); op.context = Context()
>>> op.store = KeyValueStore(windowed_binary(INT64), INT64); out = []; op.forward = out.append
>>> for ts, n in ((1, 1), (3, 2), (16, 1)):
...     op.context.stream_time = ts
...     op.process(Record(Windowed(7, (ts // 10) * 10, (ts // 10) * 10 + 10), Change(n, None), ts))
>>> [(r.key.start, r.value.new) for r in out]
[(0, 2)]
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from sluice.streams.operators.base import StoreOperator
from sluice.streams.record import Change, Record, Windowed

__all__ = ["Suppress"]


class Suppress(StoreOperator):
    """Hold windowed updates until their window closes; emit the final one."""

    def __init__(self, store_name: str, grace_ms: int) -> None:
        self.store_name = store_name
        self.grace_ms = grace_ms
        self._ends: list[tuple[int, int, Any]] | None = None
        self._tie = itertools.count()

    def _index(self) -> list[tuple[int, int, Any]]:
        ends = [(key.end, next(self._tie), key) for key, _ in self.store.all()]
        heapq.heapify(ends)
        return ends

    def process(self, record: Record) -> None:
        if self._ends is None:
            self._ends = self._index()
        key: Windowed = record.key
        change: Change = record.value
        if change.new is None:
            self.store.delete(key, record.timestamp)
        else:
            if self.store.get(key) is None:
                heapq.heappush(self._ends, (key.end, next(self._tie), key))
            self.store.put(key, change.new, record.timestamp)
        self._emit(self.context.stream_time)

    def _emit(self, stream_time: int) -> None:
        ends = self._ends
        assert ends is not None
        limit = stream_time - self.grace_ms
        while ends and ends[0][0] <= limit:
            _, _, key = heapq.heappop(ends)
            entry = self.store.get_with_timestamp(key)
            if entry is None:
                continue  # deleted, or a duplicate index entry
            self.store.delete(key, entry[1])
            self.forward(Record(key, Change(entry[0], None), entry[1]))
