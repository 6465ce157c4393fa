"""Suppression (Kafka's ``KTable.suppress``): table updates wait in a buffer, and only a key's
latest one goes on — once its window closed, or once it waited long enough.

Two conditions, as Kafka's ``Suppressed``:

- *until the window closes* (``Suppressed.untilWindowCloses``): a windowed result waits until the
  task's stream time reaches its window's end plus grace, and is then emitted once, final; a
  tombstone (a session merged away) just leaves the buffer;
- *until a time limit* (``Suppressed.untilTimeLimit``): a key's updates wait until stream time
  is ``time_limit_ms`` past the timestamp of the first update buffered, and the latest goes on,
  as ``Change(latest, the value downstream saw before)``; tombstones go on too.

The buffer is a logged key-value store (a restarted task still emits what it held), keyed by the
table's key (windowed keys as 8-byte start, 8-byte end, then the key's bytes); an in-memory index
of buffer times, rebuilt from the store when the processor starts working, orders the emission.
A :class:`BufferConfig` bounds it by keys (``max_records``) and serialized bytes (``max_bytes``,
key and value); when a put takes it over a bound, it either emits its oldest keys early until it
is within bounds (``emit_early_when_full``, the default for a bounded buffer) or stops the
application with a :class:`~sluice.streams.errors.StreamsError` (``shut_down_when_full``, the
only choice for final results, which must never come early).

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
>>> BufferConfig.max_records(100).with_max_bytes(10_000).shut_down_when_full()
BufferConfig(records=100, bytes=10000, when_full='shut_down')
"""

from __future__ import annotations

import heapq
import itertools
import struct
from dataclasses import dataclass, replace
from typing import Any, Literal

from sluice.serde import Serde
from sluice.streams.errors import StreamsError
from sluice.streams.operators.base import StoreOperator
from sluice.streams.operators.serdes import change
from sluice.streams.record import Change, Record

__all__ = ["BufferConfig", "Suppress", "buffered"]

WhenFull = Literal["emit_early", "shut_down"]

_TIME = struct.Struct(">q")


@dataclass(frozen=True, slots=True)
class BufferConfig:
    """How much a suppression buffer holds, and what it does when full (Kafka's
    ``Suppressed.BufferConfig``): ``records`` keys and ``bytes`` serialized bytes at most
    (None: no bound); ``when_full`` is ``"emit_early"`` or ``"shut_down"``.

    >>> BufferConfig.unbounded()
    BufferConfig(records=None, bytes=None, when_full='shut_down')
    >>> BufferConfig.max_bytes(1_000_000).strict
    False
    """

    records: int | None = None
    bytes: int | None = None
    when_full: WhenFull = "shut_down"

    def __post_init__(self) -> None:
        for name, bound in (("max_records", self.records), ("max_bytes", self.bytes)):
            if bound is not None and (
                not isinstance(bound, int) or isinstance(bound, bool) or bound < 1
            ):
                raise StreamsError(
                    f"a suppression buffer's {name} must be 1 or more, got {bound!r}"
                )
        if self.when_full not in ("emit_early", "shut_down"):
            raise StreamsError(
                f"when_full must be 'emit_early' or 'shut_down', got {self.when_full!r}"
            )

    @classmethod
    def unbounded(cls) -> BufferConfig:
        """No bound (Kafka's ``BufferConfig.unbounded()``): strict, it never emits early."""
        return cls()

    @classmethod
    def max_records(cls, records: int) -> BufferConfig:
        """At most ``records`` keys; emits the oldest early when full (``maxRecords``)."""
        return cls(records=records, when_full="emit_early")

    @classmethod
    def max_bytes(cls, size: int) -> BufferConfig:
        """At most ``size`` bytes of keys and values; emits early when full (``maxBytes``)."""
        return cls(bytes=size, when_full="emit_early")

    def with_max_records(self, records: int) -> BufferConfig:
        """This buffer, with at most ``records`` keys (``withMaxRecords``)."""
        return replace(self, records=records)

    def with_max_bytes(self, size: int) -> BufferConfig:
        """This buffer, with at most ``size`` bytes (``withMaxBytes``)."""
        return replace(self, bytes=size)

    def with_no_bound(self) -> BufferConfig:
        """This buffer without bounds; strict (``withNoBound``)."""
        return BufferConfig()

    def emit_early_when_full(self) -> BufferConfig:
        """When full, emit the oldest keys before their time (``emitEarlyWhenFull``)."""
        return replace(self, when_full="emit_early")

    def shut_down_when_full(self) -> BufferConfig:
        """When full, stop the application with an error (``shutDownWhenFull``)."""
        return replace(self, when_full="shut_down")

    @property
    def strict(self) -> bool:
        """Whether the buffer never emits early (Kafka's ``StrictBufferConfig``)."""
        return self.when_full == "shut_down" or (self.records is None and self.bytes is None)

    @property
    def bounded(self) -> bool:
        """Whether any bound is set."""
        return self.records is not None or self.bytes is not None


def buffered(value_serde: Serde) -> Serde:
    """What a time-limited buffer stores per key: ``(buffer time, Change(latest, old))`` as an
    8-byte big-endian time, then the change (:func:`sluice.streams.operators.serdes.change`)."""
    changes = change(value_serde)

    def serialize(entry: tuple[int, Change]) -> bytes:
        return _TIME.pack(entry[0]) + changes.serialize(entry[1])

    def deserialize(data: bytes) -> tuple[int, Change]:
        return _TIME.unpack_from(data)[0], changes.deserialize(data[_TIME.size :])

    return Serde(serialize, deserialize, f"buffered({value_serde.name})")


class Suppress(StoreOperator):
    """Hold table updates in a buffer; see the module docstring.

    With ``time_limit_ms`` None, suppression until windows close (``grace_ms`` after the end of
    each windowed key; the store holds plain values); else until ``time_limit_ms`` after a key
    was first buffered (the store holds :func:`buffered` entries).
    """

    def __init__(
        self,
        store_name: str,
        grace_ms: int = 0,
        *,
        time_limit_ms: int | None = None,
        buffer: BufferConfig | None = None,
    ) -> None:
        self.store_name = store_name
        self.time_limit_ms = time_limit_ms
        self.wait_ms = grace_ms if time_limit_ms is None else time_limit_ms
        self.buffer = BufferConfig() if buffer is None else buffer
        if time_limit_ms is None and not self.buffer.strict:
            raise StreamsError(
                "suppression until windows close needs a strict buffer: unbounded, or "
                "bounded with shut_down_when_full() (final results never come early)"
            )
        self._times: dict[Any, int] | None = None  # key → buffer time
        self._queue: list[tuple[int, int, Any]] = []  # (buffer time, tie, key), stale kept
        self._tie = itertools.count()
        self._sizes: dict[Any, int] = {}
        self._bytes = 0

    # -- the index ----------------------------------------------------------------------------
    def _time_of(self, key: Any, stored: Any) -> int:
        return int(key.end) if self.time_limit_ms is None else int(stored[0])

    def _index(self) -> dict[Any, int]:
        times: dict[Any, int] = {}
        for key, stored in self.store.all():
            times[key] = self._time_of(key, stored)
            self._measure(key, stored)
        self._queue = [(time, next(self._tie), key) for key, time in times.items()]
        heapq.heapify(self._queue)
        return times

    def _measure(self, key: Any, stored: Any) -> None:
        if self.buffer.bytes is None:
            return
        store = self.store
        size = len(store.key_serde.serialize(key)) + len(store.value_serde.serialize(stored))
        self._bytes += size - self._sizes.get(key, 0)
        self._sizes[key] = size

    def _forget(self, key: Any, timestamp: int) -> None:
        assert self._times is not None
        self._times.pop(key, None)
        self._bytes -= self._sizes.pop(key, 0)
        self.store.delete(key, timestamp)

    # -- processing ---------------------------------------------------------------------------
    def process(self, record: Record) -> None:
        times = self._times
        if times is None:
            times = self._times = self._index()
        key = record.key
        update: Change = record.value
        if self.time_limit_ms is None:
            if update.new is None:
                if key in times:
                    self._forget(key, record.timestamp)
            else:
                self._put(key, update.new, key.end, record.timestamp)
        else:
            held = self.store.get(key)
            if held is None:
                self._put(key, (record.timestamp, update), record.timestamp, record.timestamp)
            else:  # keep the first buffer time and the old value downstream saw
                first, waiting = held
                self._put(key, (first, Change(update.new, waiting.old)), first, record.timestamp)
        self._emit_due(self.context.stream_time)
        self._enforce_bounds(record.key)

    def _put(self, key: Any, stored: Any, time: int, timestamp: int) -> None:
        assert self._times is not None
        if key not in self._times:
            self._times[key] = time
            heapq.heappush(self._queue, (time, next(self._tie), key))
        self.store.put(key, stored, timestamp)
        self._measure(key, stored)

    def _emit_due(self, stream_time: int) -> None:
        limit = stream_time - self.wait_ms
        queue = self._queue
        while queue and queue[0][0] <= limit:
            self._emit_oldest()

    def _emit_oldest(self) -> None:
        time, _, key = heapq.heappop(self._queue)
        assert self._times is not None
        if self._times.get(key) != time:
            return  # emitted or deleted since, maybe buffered again at another time
        entry = self.store.get_with_timestamp(key)
        if entry is None:
            self._times.pop(key, None)
            return
        self._forget(key, entry[1])
        if self.time_limit_ms is None:
            self.forward(Record(key, Change(entry[0], None), entry[1]))
        else:
            self.forward(Record(key, entry[0][1], entry[1]))

    def _enforce_bounds(self, key: Any) -> None:
        assert self._times is not None
        buffer = self.buffer
        if not buffer.bounded:
            return
        while self._over(buffer):
            if buffer.when_full == "shut_down":
                held = [
                    f"{used}/{bound} {unit}"
                    for used, bound, unit in (
                        (len(self._times), buffer.records, "records"),
                        (self._bytes, buffer.bytes, "bytes"),
                    )
                    if bound is not None
                ]
                raise StreamsError(
                    f"suppression buffer {self.store_name!r} exceeded its max capacity: "
                    f"{', '.join(held)} (putting key {key!r}); it was told to shut down when "
                    "full (BufferConfig.shut_down_when_full)"
                )
            self._emit_oldest()

    def _over(self, buffer: BufferConfig) -> bool:
        assert self._times is not None
        return (buffer.records is not None and len(self._times) > buffer.records) or (
            buffer.bytes is not None and self._bytes > buffer.bytes
        )
