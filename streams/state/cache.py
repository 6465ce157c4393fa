"""Record caches: the updates of a key between two commits go downstream as one record.

Kafka Streams puts a cache in front of the stores of aggregations and tables
(``CachingKeyValueStore``, ``CachingWindowStore``, ``CachingSessionStore``, each a
``NamedCache`` of the stream thread's ``ThreadCache``), sized by ``statestore.cache.max.bytes``:
an update is held in the cache, and the key's latest value goes downstream — with the value
downstream saw last as its old value (``TimestampedCacheFlushListener``) — when the task
commits, or earlier when the thread's caches are over their byte budget and one evicts. With a
budget of 0 nothing is cached: every update goes downstream at once.

Sluice's stores are written at every update (their own write buffer logs one changelog record
per dirty key per commit, :mod:`sluice.streams.state`), so a :class:`RecordCache` holds only
what the operator owning the store would have forwarded: per key, the latest value, its
timestamp and headers, and the old value downstream saw; at a flush they go downstream in the
order their keys were first updated (Kafka's order of dirty keys).

What a cache holds is measured in serialized bytes, key and value, plus :data:`ENTRY_OVERHEAD`
per entry, as Kafka measures its entries; the budget is shared by every cache of a
:class:`ThreadCache` (a stream thread, or a test driver). So that caching costs no
serialization per update while the budget is far, only the first new keys of a cache and then
one in :attr:`RecordCache.SAMPLE` are measured (the others count as the average of those
measured) until the caches hold half their budget; from there on every put is measured. When a
put takes the total over the budget, the cache written to *evicts*: as Kafka's ``NamedCache``
when its eldest entry is dirty, it forwards every entry it holds, and is empty again. A key
added and removed between two flushes (a session merged away before anyone saw it) forwards
nothing.

Not thread-safe: a cache belongs to one task, driven by one stream thread.

>>> from sluice.serde import STRING, INT64
>>> from sluice.streams.record import Change
>>> out = []
>>> cache = ThreadCache(1000).cache("counts", serialized_size(STRING), serialized_size(INT64))
>>> emit = cache.wrap(lambda k, v, ts, h: out.append((k, v, ts)))
>>> emit("a", Change(1, None), 5, ()); emit("a", Change(2, 1), 7, ())
>>> emit("b", Change(1, None), 6, ())
>>> out, len(cache)
([], 2)
>>> cache.flush(); out
[('a', Change(new=2, old=None), 7), ('b', Change(new=1, old=None), 6)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sluice.serde import Serde
from sluice.streams.record import Change, Headers, Record, Windowed

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ENTRY_OVERHEAD",
    "RecordCache",
    "ThreadCache",
    "flush_caches",
    "serialized_size",
    "windowed_size",
]

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
"""Kafka's default ``statestore.cache.max.bytes``: 10 MiB."""

ENTRY_OVERHEAD = 48
"""Bytes counted per entry besides its key and value (timestamp, old value reference, links)."""

Emit = Callable[[Any, Any, int, Headers], None]
Size = Callable[[Any], int]


def serialized_size(serde: Serde) -> Size:
    """The size of an object as ``serde`` writes it."""
    serialize = serde.serialize

    def size(value: Any) -> int:
        return len(serialize(value))

    return size


def windowed_size(serde: Serde, bounds: int = 16) -> Size:
    """The size of a :class:`~sluice.streams.record.Windowed` key: its key as ``serde`` writes
    it and ``bounds`` bytes of window bounds."""
    serialize = serde.serialize

    def size(key: Windowed | tuple[Any, int, int]) -> int:
        return len(serialize(key[0])) + bounds

    return size


class ThreadCache:
    """The byte budget the record caches of one stream thread (or test driver) share."""

    __slots__ = ("evictions", "max_bytes", "size")

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"a cache budget is 0 or more bytes, got {max_bytes}")
        self.max_bytes = max_bytes
        self.size = 0
        """Bytes the caches hold now."""
        self.evictions = 0
        """Times a cache forwarded early because the budget was exceeded."""

    @property
    def enabled(self) -> bool:
        """Whether anything is cached (a budget of 0 caches nothing)."""
        return self.max_bytes > 0

    def cache(
        self, name: str, key_size: Size, value_size: Size, *, windowed: bool = False
    ) -> RecordCache:
        """A new cache under this budget; ``key_size``/``value_size`` measure its entries;
        ``windowed``: its keys are :class:`~sluice.streams.record.Windowed`."""
        return RecordCache(name, self, key_size, value_size, windowed=windowed)


class RecordCache:
    """The pending downstream records of one store of one task; see the module docstring."""

    __slots__ = (
        "_entries",
        "_forward",
        "_measured",
        "_measured_bytes",
        "budget",
        "key_size",
        "name",
        "size",
        "value_size",
        "windowed",
    )

    SAMPLE = 16
    """Far from the budget, one new entry in this many is measured (and the first ones)."""

    def __init__(
        self,
        name: str,
        budget: ThreadCache,
        key_size: Size,
        value_size: Size,
        *,
        windowed: bool = False,
    ) -> None:
        self.name = name
        self.windowed = windowed
        """Keys are ``Windowed``: held as plain tuples (which the garbage collector can stop
        tracking), made ``Windowed`` again when forwarded."""
        self.budget = budget
        self.key_size = key_size
        self.value_size = value_size
        self.size = 0
        # key → (latest, old downstream saw, timestamp, headers, bytes), in the order the keys
        # were first updated since the last flush: plain tuples, which the garbage collector
        # stops tracking when they hold no containers (a Change, a named tuple, it always tracks)
        self._entries: dict[Any, tuple[Any, Any, int, Headers, int]] = {}
        self._forward: Emit | None = None
        self._measured = 0
        self._measured_bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def wrap(self, downstream: Emit) -> Emit:
        """What the operator calls instead of ``downstream`` (``value`` is a ``Change``): the
        update waits here, and flushes and evictions call ``downstream``."""
        self._forward = downstream
        return self.put

    def wrap_records(self, forward: Callable[[Record], None]) -> Callable[[Record], None]:
        """:meth:`wrap` for an operator that forwards :class:`Record` objects."""

        def emit(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            forward(Record(key, value, timestamp, headers))

        self._forward = emit
        put = self.put

        def cached(record: Record) -> None:
            put(record.key, record.value, record.timestamp, record.headers)

        return cached

    def _measure(self, key: Any, new: Any) -> int:
        size = self.key_size(key) + ENTRY_OVERHEAD
        if new is not None:
            size += self.value_size(new)
        self._measured += 1
        self._measured_bytes += size
        return size

    def put(self, key: Any, change: Change, timestamp: int, headers: Headers) -> None:
        """Hold ``change`` of ``key``; the old value stays the one downstream saw last."""
        budget = self.budget
        entries = self._entries
        if self.windowed:
            key = (key[0], key[1], key[2])
        entry = entries.get(key)
        near = budget.size * 2 > budget.max_bytes
        if entry is None:
            if near or self._measured < self.SAMPLE or not len(entries) % self.SAMPLE:
                size = self._measure(key, change[0])
            else:  # the average of those measured
                size = self._measured_bytes // self._measured
            entries[key] = (change[0], change[1], timestamp, headers, size)
            grown = size
        else:
            size = entry[4]
            if near:  # near the budget: measure again
                size = self._measure(key, change[0])
            entries[key] = (change[0], entry[1], timestamp, headers, size)
            grown = size - entry[4]
        if grown:
            self.size += grown
            budget.size += grown
            if budget.size > budget.max_bytes:
                budget.evictions += 1
                self.flush()

    def flush(self) -> None:
        """Forward every held update (in the order the keys were first updated) and forget
        them."""
        entries = self._entries
        if not entries:
            return
        self._entries = {}
        self.budget.size -= self.size
        self.size = 0
        forward = self._forward
        if forward is None:
            raise RuntimeError(f"record cache {self.name!r} has nowhere to forward to")
        new_tuple = tuple.__new__  # Change(…) without the named tuple's Python-level __new__
        windowed = self.windowed
        for key, (new, old, timestamp, headers, _) in entries.items():
            if new is None and old is None:
                continue  # added and removed before downstream saw it
            forward(
                new_tuple(Windowed, key) if windowed else key,
                new_tuple(Change, (new, old)),
                timestamp,
                headers,
            )

    def drop(self) -> None:
        """Forget what is held without forwarding it (the task closes without a commit)."""
        self.budget.size -= self.size
        self.size = 0
        self._entries = {}


def flush_caches(caches: Iterable[RecordCache]) -> None:
    """Flush ``caches`` until none holds anything (what one forwards may land in another)."""
    pending = list(caches)
    while any(len(cache) for cache in pending):
        for cache in pending:
            cache.flush()
