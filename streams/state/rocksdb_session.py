"""A session backend in RocksDB, segmented by session end (Kafka's ``RocksDBSessionStore``).

On disk (:mod:`sluice.streams.state.rocksdb_segments`): a session lives in the segment of its
end — sessions expire by their end — under its changelog key::

    serialized key | session start (8 bytes, big-endian) | session end (8 bytes, big-endian)

so the sessions of a key are contiguous within a segment, ordered by start: a lookup seeks to the
key's bytes in each segment that can hold a late enough end. The value is the entry's timestamp
(8 bytes, big-endian) then the value serde's bytes. Restoring writes changelog records as they
are. Puts wait in a write cache (per key, so that lookups see them) until :meth:`commit`.

>>> from sluice.serde import STRING, INT64
>>> from sluice.streams.state.base import StoreContext
>>> backend = RocksDBSessionBackend(STRING, INT64, retention_ms=120_000)
>>> backend.open(StoreContext(None, 0, print))
-1
>>> backend.put("a", 0, 10, (2, 10)); backend.commit(10); backend.put("a", 100, 130, (5, 130))
>>> backend.find("a", 5, 105)
[(0, 10, (2, 10)), (100, 130, (5, 130))]
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
from sluice.streams.state.session import RawSessionRecord, Session

__all__ = ["RocksDBSessionBackend"]

_BOUNDS = struct.Struct(">qq")
_TIMESTAMP = struct.Struct(">q")
_FIRST, _LAST = -(2**63), 2**63 - 1


class RocksDBSessionBackend:
    """See the module docstring; ``segment_interval_ms`` defaults to Kafka's."""

    persistent = True

    def __init__(
        self,
        key_serde: Serde,
        value_serde: Serde,
        retention_ms: int,
        *,
        segment_interval_ms: int | None = None,
    ) -> None:
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.segments = Segments(segment_interval_ms or segment_interval(retention_ms))
        self._dirty: dict[Any, dict[tuple[int, int], Entry | None]] = {}
        self._limit = _FIRST

    def open(self, context: StoreContext) -> int:
        directory = context.directory
        name = "session" if directory is None else directory.name
        return self.segments.open(directory, name)[0]

    def _decode(self, raw: bytes) -> Entry:
        return self.value_serde.deserialize(raw[8:]), _TIMESTAMP.unpack_from(raw)[0]

    def get(self, key: Any, start: int, end: int) -> Entry | None:
        if end <= self._limit:
            return None
        pending = self._dirty.get(key)
        if pending is not None and (start, end) in pending:
            return pending[(start, end)]
        segment = self.segments.get(self.segments.segment_id(end))
        if segment is None:
            return None
        raw = segment.get(self.key_serde.serialize(key) + _BOUNDS.pack(start, end))
        return None if raw is None else self._decode(raw)

    def put(self, key: Any, start: int, end: int, entry: Entry | None) -> None:
        pending = self._dirty.get(key)
        if pending is None:
            pending = self._dirty[key] = {}
        pending[(start, end)] = entry

    def find(self, key: Any, earliest_end: int, latest_start: int) -> list[Session]:
        earliest_end = max(earliest_end, self._limit + 1)
        found: dict[tuple[int, int], Entry] = {}
        prefix = self.key_serde.serialize(key)
        size = len(prefix) + _BOUNDS.size
        for segment in self.segments.covering(earliest_end, _LAST):
            for raw_key, raw_value in segment.items(prefix):
                if not raw_key.startswith(prefix):
                    break
                if len(raw_key) != size:
                    continue  # a longer key that starts with this one's bytes
                start, end = _BOUNDS.unpack_from(raw_key, len(prefix))
                if end >= earliest_end and start <= latest_start:
                    found[(start, end)] = self._decode(raw_value)
        pending = self._dirty.get(key)
        if pending:
            for (start, end), entry in pending.items():
                if end >= earliest_end and start <= latest_start:
                    if entry is None:
                        found.pop((start, end), None)
                    else:
                        found[(start, end)] = entry
        return [(start, end, found[(start, end)]) for start, end in sorted(found)]

    def all(self) -> Iterator[tuple[Any, int, int, Entry]]:
        self._write()
        size, limit = _BOUNDS.size, self._limit
        found = []
        for segment in self.segments.covering(limit + 1, _LAST):
            for raw_key, raw_value in segment.items():
                start, end = _BOUNDS.unpack_from(raw_key, len(raw_key) - size)
                if end > limit:
                    found.append((raw_key[: len(raw_key) - size], start, end, raw_value))
        found.sort()  # by key bytes, then start and end
        deserialize_key = self.key_serde.deserialize
        for raw_prefix, start, end, raw_value in found:
            yield deserialize_key(raw_prefix), start, end, self._decode(raw_value)

    def expire(self, limit: int) -> None:
        if limit > self._limit:
            self._limit = limit
            self.segments.drop_expired(limit)

    def _write(self) -> None:
        dirty, self._dirty = self._dirty, {}
        if not dirty:
            return
        serialize_key, serialize_value = self.key_serde.serialize, self.value_serde.serialize
        pack, pack_timestamp, segment_id = _BOUNDS.pack, _TIMESTAMP.pack, self.segments.segment_id
        batches: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for key, pending in dirty.items():
            prefix = serialize_key(key)
            for (start, end), entry in pending.items():
                if end <= self._limit:
                    continue
                raw_value = (
                    None if entry is None else pack_timestamp(entry[1]) + serialize_value(entry[0])
                )
                batches.setdefault(segment_id(end), []).append(
                    (prefix + pack(start, end), raw_value)
                )
        self.segments.write(batches)

    def commit(self, observed_time: int) -> None:
        self._write()
        self.segments.commit(observed_time, 0)

    def restore_raw(self, records: list[RawSessionRecord]) -> None:
        """Write changelog records as they are (restoration): bytes in, bytes stored."""
        self._write()
        pack_timestamp, segment_id = _TIMESTAMP.pack, self.segments.segment_id
        batches: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for raw_key, _, end, value, timestamp in records:
            raw_value = None if value is None else pack_timestamp(timestamp) + value
            batches.setdefault(segment_id(end), []).append((raw_key, raw_value))
        self.segments.write(batches)

    def close(self) -> None:
        self._dirty.clear()
        self.segments.close()

    def wipe(self) -> None:
        self._dirty.clear()
        self._limit = _FIRST
        self.segments.wipe()
