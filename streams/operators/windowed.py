"""Windowed aggregations: time (tumbling, hopping), session and sliding windows.

A record updates every window it falls in unless the window is closed — its end plus grace is at
or before the task's stream time (before it, for sliding windows, whose end is inclusive; a
session closes once stream time passes its end + gap + grace) — in which case it is dropped and
counted in ``dropped``. Results are table updates keyed by
:class:`~sluice.streams.record.Windowed`; session results carry the session end as timestamp.
Time and session window results go through a record cache when ``caching`` and the task caches
(:mod:`sluice.streams.state.cache`, Kafka's ``CachingWindowStore`` and ``CachingSessionStore``):
one update per window and key per commit.

>>> from sluice.serde import STRING, INT64
>>> from sluice.streams.record import Record
>>> from sluice.streams.state.window import WindowStore
>>> from sluice.streams.windows import TimeWindows
>>> class Context:
...     stream_time = 0
>>> agg = WindowedAggregate("w", TimeWindows.of(10).grace(5), lambda: 0, lambda k, v, n: n + 1)
>>> agg.store = WindowStore(STRING, INT64, 15); agg.context = Context(); out = []
>>> agg.forward = out.append
>>> for ts in (1, 12, 3):
...     agg.context.stream_time = max(agg.context.stream_time, ts)
...     agg.process(Record("k", "x", ts))
>>> [(r.key.start, r.value.new) for r in out]
[(0, 1), (10, 1), (0, 2)]
>>> agg.context.stream_time = 20; agg.process(Record("k", "x", 4)); agg.dropped
1
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Any

from sluice.streams.operators.aggregate import Aggregator, Initializer
from sluice.streams.operators.base import Emit, FusedOperator, Operator
from sluice.streams.processor import ProcessorContext
from sluice.streams.record import Change, Headers, Record, Windowed
from sluice.streams.state.cache import RecordCache, serialized_size, windowed_size
from sluice.streams.state.session import SessionStore
from sluice.streams.state.window import WindowStore
from sluice.streams.windows import SessionWindows, SlidingWindows, TimeWindows

__all__ = ["SessionAggregate", "SlidingAggregate", "WindowedAggregate"]

Merger = Callable[[Any, Any, Any], Any]


class _WindowOperator(Operator):
    store_name: str
    dropped = 0
    caching = False
    cache: RecordCache | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = self.store = context.get_state_store(self.store_name)
        if self.caching:
            assert isinstance(store, WindowStore | SessionStore)
            self.cache = context.record_cache(
                self.store_name,
                windowed_size(store.key_serde),
                serialized_size(store.value_serde),
                windowed=True,
            )
        if self.cache is not None and not isinstance(self, FusedOperator):
            self.forward = self.cache.wrap_records(self.forward)


class WindowedAggregate(FusedOperator, _WindowOperator):
    """Aggregates per key and time window."""

    store: WindowStore

    def __init__(
        self,
        store_name: str,
        windows: TimeWindows,
        initializer: Initializer,
        aggregator: Aggregator,
        *,
        caching: bool = True,
    ) -> None:
        self.store_name = store_name
        self.windows = windows
        self.initializer = initializer
        self.aggregator = aggregator
        self.caching = caching

    def fuse(self, downstream: Emit) -> Emit:
        if self.cache is not None:
            downstream = self.cache.wrap(downstream)
        context, grace = self.context, self.windows.grace_ms
        windows_for = self.windows.windows_for
        fetch, put = self.store.accessors()  # the backend's get: no store frame between
        initializer, aggregator = self.initializer, self.aggregator
        new_tuple = tuple.__new__  # named tuples without their Python-level __new__ (hot path)

        def aggregate(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            if key is None or value is None:
                return
            close_time = context.stream_time - grace
            updated = False
            for start, end in windows_for(timestamp):
                if end <= close_time:
                    continue
                updated = True
                entry = fetch(key, start)
                if entry is None:
                    old = None
                    current = initializer()
                    result_time = timestamp
                else:
                    old = current = entry[0]
                    result_time = entry[1] if entry[1] > timestamp else timestamp
                new = aggregator(key, value, current)
                put(key, new, start, result_time)
                downstream(
                    new_tuple(Windowed, (key, start, end)),
                    new_tuple(Change, (new, old)),
                    result_time,
                    headers,
                )
            if not updated:
                self.dropped += 1

        return aggregate


class SessionAggregate(_WindowOperator):
    """Aggregates per key and session; sessions that a record bridges are merged."""

    store: SessionStore

    def __init__(
        self,
        store_name: str,
        windows: SessionWindows,
        initializer: Initializer,
        aggregator: Aggregator,
        merger: Merger,
        *,
        caching: bool = True,
    ) -> None:
        self.store_name = store_name
        self.windows = windows
        self.initializer = initializer
        self.aggregator = aggregator
        self.merger = merger
        self.caching = caching

    def process(self, record: Record) -> None:
        key = record.key
        if key is None or record.value is None:
            return
        timestamp = record.timestamp
        gap = self.windows.gap_ms
        # A session can still grow until stream time passes its end + gap + grace (Kafka's rule).
        close_time = self.context.stream_time - self.windows.grace_ms - gap
        overlapping = self.store.find_sessions(key, timestamp - gap, timestamp + gap)
        start = min([timestamp, *(s for s, _, _ in overlapping)])
        end = max([timestamp, *(e for _, e, _ in overlapping)])
        if end < close_time:
            self.dropped += 1
            return
        # Kafka's order: merge the sessions into the initial aggregate, then add the record.
        aggregate = self.initializer()
        for old_start, old_end, value in overlapping:
            aggregate = self.merger(key, aggregate, value)
            if (old_start, old_end) != (start, end):
                self.store.remove(key, old_start, old_end)
                self.forward(
                    Record(Windowed(key, old_start, old_end), Change(None, value), old_end)
                )
        aggregate = self.aggregator(key, record.value, aggregate)
        previous = next((v for s, e, v in overlapping if (s, e) == (start, end)), None)
        # Session results carry the session's end as timestamp, as in Kafka.
        self.store.put(key, start, end, aggregate, end)
        self.forward(Record(Windowed(key, start, end), Change(aggregate, previous), end))


class SlidingAggregate(_WindowOperator):
    """Aggregates over sliding windows ``[t - size, t]``, Kafka's definition.

    Windows exist where records define them: the *left* window of each record (ending at it) and
    the *right* window of each record (starting just after it) when another record falls in it.
    A record updates every window that contains it. The store keeps the records of each key (a
    window store with duplicates); each affected window is recomputed from them in time order,
    so an aggregator need not be invertible.
    """

    store: WindowStore

    def __init__(
        self,
        store_name: str,
        windows: SlidingWindows,
        initializer: Initializer,
        aggregator: Aggregator,
    ) -> None:
        self.store_name = store_name
        self.windows = windows
        self.initializer = initializer
        self.aggregator = aggregator
        self._emitted: dict[Any, dict[tuple[int, int], Any]] = {}

    def process(self, record: Record) -> None:
        key = record.key
        if key is None or record.value is None:
            return
        size = self.windows.size_ms
        t = record.timestamp
        close_time = self.context.stream_time - self.windows.grace_ms
        if t + size < close_time:  # even its right window has closed
            self.dropped += 1
            return
        self.store.put(key, record.value, t, t)
        horizon = self.context.stream_time - self.windows.retention_ms
        records = sorted(
            (ts, entry[0]) for ts, entry in self.store.fetch_entries(key, max(0, horizon), 2**62)
        )
        times = [ts for ts, _ in records]
        # Every window that can contain t: left windows of records in [t, t + size] (t's own
        # included) and right windows of records in [t - size, t).
        candidates: set[tuple[int, int]] = set()
        for ts in times[bisect.bisect_left(times, t) : bisect.bisect_right(times, t + size)]:
            candidates.add((max(0, ts - size), ts))
        for ts in times[bisect.bisect_left(times, t - size) : bisect.bisect_left(times, t)]:
            candidates.add((ts + 1, ts + 1 + size))
        if t + 1 <= t + size and any(t < ts <= t + size for ts in times):
            candidates.add((t + 1, t + 1 + size))  # t's right window, which has later records
        emitted = self._emitted.setdefault(key, {})
        for start, end in sorted(candidates):
            # bounds are inclusive: a window is open while its end is at or after close time
            if end < close_time:
                continue
            if not start <= t <= end and (start, end) in emitted:
                continue  # t's right window exists already and t is not in it: unchanged
            inside = records[bisect.bisect_left(times, start) : bisect.bisect_right(times, end)]
            if not inside:
                continue
            aggregate = self.initializer()
            for _, value in inside:
                aggregate = self.aggregator(key, value, aggregate)
            timestamp = inside[-1][0]
            old = emitted.get((start, end))
            emitted[(start, end)] = aggregate
            self.forward(Record(Windowed(key, start, end), Change(aggregate, old), timestamp))
        for bounds in [b for b in emitted if b[1] < horizon]:
            del emitted[bounds]
