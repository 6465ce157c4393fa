"""A window backend in RocksDB, segmented by window start (Kafka's ``RocksDBWindowStore``).

On disk (:mod:`sluice.streams.state.rocksdb_segments`): an entry lives in the segment of its
window start, under the changelog key, which is Kafka's ``WindowKeySchema`` layout::

    serialized key | window start (8 bytes, big-endian) [| sequence number (4 bytes, duplicates)]

so a key's windows are contiguous within a segment and ordered by start: a fetch seeks to
``key | time_from`` and reads forward. The value is the entry's timestamp (8 bytes, big-endian)
then the value serde's bytes. Restoring writes changelog records as they are, without decoding.

Puts wait in a write cache until :meth:`commit` (or a range read) writes one batch per segment;
recent point reads stay in a bounded read cache. Windows with
``start <= limit`` (:meth:`expire`) are filtered out of reads until their segment is dropped.

>>> from sluice.serde import STRING, INT64
>>> from sluice.streams.state.base import StoreContext
>>> backend = RocksDBWindowBackend(STRING, INT64, retention_ms=120_000)
>>> backend.open(StoreContext(None, 0, print))
(-1, 0)
>>> backend.put("a", 0, 0, (1, 5)); backend.put("a", 60_000, 0, (2, 60_001))
>>> backend.commit(60_000, 0); backend.put("b", 60_000, 0, (7, 60_002))
>>> list(backend.fetch("a", 0, 100_000)), backend.get("b", 60_000)
([(0, (1, 5)), (60000, (2, 60001))], (7, 60002))
>>> backend.close()
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from sluice.serde import Serde
from sluice.streams.state.base import StoreContext
from sluice.streams.state.keyvalue import Entry
from sluice.streams.state.rocksdb_segments import Segments, segment_interval
from sluice.streams.state.window import RawWindowRecord

__all__ = ["RocksDBWindowBackend"]

_START = struct.Struct(">q")
_START_SEQ = struct.Struct(">qi")
_TIMESTAMP = struct.Struct(">q")
_READ_CACHE = 50_000
_FIRST = -(2**63)
_MISSING = object()


class RocksDBWindowBackend:
    """See the module docstring; ``segment_interval_ms`` defaults to Kafka's."""

    persistent = True

    def __init__(
        self,
        key_serde: Serde,
        value_serde: Serde,
        retention_ms: int,
        *,
        retain_duplicates: bool = False,
        segment_interval_ms: int | None = None,
    ) -> None:
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.retain_duplicates = retain_duplicates
        self.segments = Segments(segment_interval_ms or segment_interval(retention_ms))
        self._layout = _START_SEQ if retain_duplicates else _START
        self._dirty: dict[tuple[Any, int, int], Entry | None] = {}
        self._clean: dict[tuple[Any, int], Entry | None] = {}
        self._limit = _FIRST
        self._stored_max = _FIRST
        """No window starting later is in the segments: a point read of one needs no RocksDB
        look-up (a new window, most of a windowed aggregation's reads)."""

    def open(self, context: StoreContext) -> tuple[int, int]:
        directory = context.directory
        position = self.segments.open(directory, "window" if directory is None else directory.name)
        last = self.segments.last_time()  # what was there before: anything up to its end
        self._stored_max = _FIRST if last is None else last
        return position

    def _decode(self, raw: bytes, seq: int) -> Entry:
        value = self.value_serde.deserialize(raw[8:])
        timestamp = _TIMESTAMP.unpack_from(raw)[0]
        return (value, timestamp, seq) if self.retain_duplicates else (value, timestamp)  # type: ignore[return-value]

    def get(self, key: Any, start: int) -> Entry | None:
        if start <= self._limit:
            return None
        if self.retain_duplicates:
            last = None
            for _, entry in self.fetch(key, start, start):
                last = entry
            return last
        pending = self._dirty.get((key, start, 0), _MISSING)
        if pending is not _MISSING:
            return pending  # type: ignore[return-value]
        clean = self._clean
        cached = (key, start)
        if cached in clean:
            return clean[cached]
        segment = None
        if start <= self._stored_max:
            segment = self.segments.get(self.segments.segment_id(start))
        raw = None
        if segment is not None:
            raw = segment.get(self.key_serde.serialize(key) + _START.pack(start))
        found = None if raw is None else self._decode(raw, 0)
        if len(clean) >= _READ_CACHE:
            clean.clear()
        clean[cached] = found
        return found

    def put(self, key: Any, start: int, seq: int, entry: Entry | None) -> None:
        self._dirty[(key, start, seq)] = entry
        if not self.retain_duplicates:
            self._clean.pop((key, start), None)

    def fetch(self, key: Any, time_from: int, time_to: int) -> Iterator[tuple[int, Entry]]:
        self._write()
        time_from = max(time_from, self._limit + 1)
        if time_from > time_to:
            return
        found: list[tuple[int, Entry]] = []
        prefix = self.key_serde.serialize(key)
        size, layout = len(prefix) + self._layout.size, self._layout
        interval = self.segments.interval_ms
        for segment in self.segments.covering(time_from, time_to):
            seek = prefix + _START.pack(max(time_from, segment.id * interval))
            for raw_key, raw_value in segment.items(seek):
                if not raw_key.startswith(prefix):
                    break
                if len(raw_key) != size:
                    continue  # a longer key that starts with this one's bytes
                start, *seq = layout.unpack_from(raw_key, len(prefix))
                if start > time_to:
                    break
                found.append((start, self._decode(raw_value, seq[0] if seq else 0)))
        yield from found  # read whole first: the caller may write while it iterates

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Any, int, Entry]]:
        self._write()
        time_from = max(time_from, self._limit + 1)
        if time_from > time_to:
            return
        layout, size = self._layout, self._layout.size
        deserialize_key = self.key_serde.deserialize
        found = []
        for segment in self.segments.covering(time_from, time_to):
            for raw_key, raw_value in segment.items():
                start, *seq = layout.unpack_from(raw_key, len(raw_key) - size)
                if time_from <= start <= time_to:
                    number = seq[0] if seq else 0
                    found.append((start, number, raw_key[: len(raw_key) - size], raw_value))
        found.sort()  # by start, then sequence number, then key bytes
        for start, number, raw_prefix, raw_value in found:
            yield deserialize_key(raw_prefix), start, self._decode(raw_value, number)

    def expire(self, limit: int) -> None:
        if limit > self._limit:
            self._limit = limit
            self.segments.drop_expired(limit)

    def _write(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if not dirty:
            return
        serialize_key, serialize_value = self.key_serde.serialize, self.value_serde.serialize
        pack, pack_timestamp, segment_id = (
            self._layout.pack,
            _TIMESTAMP.pack,
            self.segments.segment_id,
        )
        limit, duplicates = self._limit, self.retain_duplicates
        batches: dict[int, list[tuple[bytes, bytes | None]]] = {}
        clean = self._clean
        if len(clean) + len(dirty) > _READ_CACHE:
            clean.clear()
        cache = not duplicates and len(dirty) <= _READ_CACHE
        stored_max = self._stored_max
        for (key, start, seq), entry in dirty.items():
            if start <= limit:
                continue
            stored_max = max(stored_max, start)
            raw_key = serialize_key(key) + (pack(start, seq) if duplicates else pack(start))
            raw_value = (
                None if entry is None else pack_timestamp(entry[1]) + serialize_value(entry[0])
            )
            number = segment_id(start)
            batch = batches.get(number)
            if batch is None:
                batch = batches[number] = []
            batch.append((raw_key, raw_value))
        if cache:
            for (key, start, _), entry in dirty.items():
                clean[(key, start)] = entry
        self._stored_max = stored_max  # before the write: a failed one may have written some
        self.segments.write(batches)

    def commit(self, observed_time: int, seq: int) -> None:
        self._write()
        self.segments.commit(observed_time, seq)

    def restore_raw(self, records: list[RawWindowRecord]) -> None:
        """Write changelog records as they are (restoration): bytes in, bytes stored."""
        self._write()
        self._clean.clear()
        pack_timestamp, segment_id = _TIMESTAMP.pack, self.segments.segment_id
        batches: dict[int, list[tuple[bytes, bytes | None]]] = {}
        stored_max = self._stored_max
        for raw_key, start, _, value, timestamp in records:
            stored_max = max(stored_max, start)
            batch = batches.get(segment_id(start))
            if batch is None:
                batch = batches[segment_id(start)] = []
            batch.append((raw_key, None if value is None else pack_timestamp(timestamp) + value))
        self._stored_max = stored_max
        self.segments.write(batches)

    def close(self) -> None:
        self._dirty.clear()
        self._clean.clear()
        self.segments.close()

    def wipe(self) -> None:
        self._dirty.clear()
        self._clean.clear()
        self._limit = _FIRST
        self._stored_max = _FIRST
        self.segments.wipe()
