"""Time segments of a RocksDB store: one database per segment, dropped whole when it expires.

As Kafka's ``KeyValueSegments`` (under ``RocksDBSegmentedBytesStore``): a record with time ``t``
lives in segment ``t // interval``; the segment is a RocksDB database in
``<store dir>/<store name>.<segment id * interval>`` (Kafka's directory names). When stream
time passes retention, every segment whose whole time range is expired is closed and its
directory deleted — expiry costs one ``rmtree`` per segment, never a scan or a tombstone per
entry. Records of the one segment that is partly expired stay on disk until it goes; readers
filter them out by time. Kafka's default interval is ``max(retention / 2, 60 s)``
(:func:`segment_interval`), so at most three segments are open.

``<store dir>/.position`` (JSON ``{"observed": t, "seq": n}``) keeps the largest time put and the
last sequence number across a clean restart, written at every :meth:`Segments.commit`. After a
crash it may be behind the segments: the runtime then restores the changelog's tail over them
(at-least-once), or wipes the store (exactly-once), as for key-value stores.

Not thread-safe: one stream thread owns the store. Without a directory (the test driver) the
segments live in a temporary directory removed on close.

>>> segments = Segments(interval_ms=100)
>>> segments.open(None, "counts")
(-1, 0)
>>> segments.write({1: [(b"a@150", b"1")], 2: [(b"a@250", b"2")]})
>>> [s.id for s in segments.covering(0, 1000)], segments.get(2).get(b"a@250")
([1, 2], b'2')
>>> segments.drop_expired(199); [s.id for s in segments.covering(0, 1000)]
[2]
>>> segments.close()
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import cast

from rocksdict import BlockBasedOptions, Cache, Options, Rdict, WriteBatch

__all__ = ["Segment", "Segments", "segment_interval"]

POSITION_FILE = ".position"
_MIN_INTERVAL = 60_000
WRITE_BUFFER_BYTES = 8 << 20
"""Memtable size of a segment (two at most: one filling, one being flushed)."""
BLOCK_CACHE_BYTES = 8 << 20
"""Block cache shared by the segments of one store."""


def _options() -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_write_buffer_size(WRITE_BUFFER_BYTES)
    options.set_max_write_buffer_number(2)
    table = BlockBasedOptions()
    table.set_block_cache(Cache(BLOCK_CACHE_BYTES))
    options.set_block_based_table_factory(table)
    return options


def segment_interval(retention_ms: int) -> int:
    """Kafka's default segment interval: ``max(retention / 2, 60 000 ms)``.

    >>> segment_interval(86_400_000), segment_interval(10_000)
    (43200000, 60000)
    """
    return max(retention_ms // 2, _MIN_INTERVAL)


class Segment:
    """One RocksDB database holding the records of one time range; keys in byte order."""

    def __init__(self, segment_id: int, path: Path, options: Options) -> None:
        self.id = segment_id
        self.path = path
        self._db = Rdict(str(path), options)

    def get(self, key: bytes) -> bytes | None:
        """The value stored under ``key``, or None."""
        return cast("bytes | None", self._db.get(key))

    def write(self, records: list[tuple[bytes, bytes | None]]) -> None:
        """Put (or with None, delete) every record in one atomic batch."""
        batch = WriteBatch(raw_mode=True)
        for key, value in records:
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        self._db.write(batch)

    def items(self, from_key: bytes = b"") -> Iterator[tuple[bytes, bytes]]:
        """``(key, value)`` from ``from_key`` on, in byte order (stop iterating to stop reading)."""
        iterator = self._db.iter()
        iterator.seek(from_key)
        while iterator.valid():
            yield cast(bytes, iterator.key()), cast(bytes, iterator.value())
            iterator.next()

    def close(self) -> None:
        """Release the database."""
        self._db.close()

    def destroy(self) -> None:
        """Close and delete the segment's files."""
        self._db.close()
        Rdict.destroy(str(self.path))
        shutil.rmtree(self.path, ignore_errors=True)


class Segments:
    """The open segments of one store, by id; see the module docstring."""

    def __init__(self, interval_ms: int) -> None:
        if interval_ms <= 0:
            raise ValueError(f"segment interval must be positive, got {interval_ms}")
        self.interval_ms = interval_ms
        self._segments: dict[int, Segment] = {}
        self._directory: Path | None = None
        self._temporary: str | None = None
        self._name = ""
        self._position: tuple[int, int] = (-1, 0)
        self._options = _options()

    def open(self, directory: Path | None, name: str) -> tuple[int, int]:
        """Open the segments found in ``directory``; returns the saved ``(observed time, seq)``."""
        if directory is None:
            self._temporary = tempfile.mkdtemp(prefix="sluice-segments-")
            directory = Path(self._temporary)
        directory.mkdir(parents=True, exist_ok=True)
        self._directory, self._name = directory, name
        for child in directory.iterdir():
            prefix, dot, start = child.name.rpartition(".")
            if dot and prefix == name and child.is_dir():
                with contextlib.suppress(ValueError):
                    segment_id = int(start) // self.interval_ms
                    self._segments[segment_id] = Segment(segment_id, child, self._options)
        try:
            saved = json.loads((directory / POSITION_FILE).read_text())
            self._position = (int(saved["observed"]), int(saved["seq"]))
        except (OSError, ValueError, KeyError, TypeError):
            self._position = (-1, 0)
        return self._position

    def last_time(self) -> int | None:
        """The largest time the open segments can hold (the end of the newest), or None when
        there is none."""
        if not self._segments:
            return None
        return (max(self._segments) + 1) * self.interval_ms - 1

    def segment_id(self, timestamp: int) -> int:
        """The segment a record with this time belongs to."""
        return timestamp // self.interval_ms

    def get(self, segment_id: int) -> Segment | None:
        """The segment, if it exists."""
        return self._segments.get(segment_id)

    def covering(self, time_from: int, time_to: int) -> list[Segment]:
        """The existing segments that may hold times in ``[time_from, time_to]``, oldest first."""
        low, high = time_from // self.interval_ms, time_to // self.interval_ms
        segments = dict(self._segments)  # a copy: a query thread may read while segments go
        return [segments[i] for i in sorted(segments) if low <= i <= high]

    def write(self, records: dict[int, list[tuple[bytes, bytes | None]]]) -> None:
        """Write records per segment id, creating segments as needed."""
        for segment_id, batch in records.items():
            segment = self._segments.get(segment_id)
            if segment is None:
                if all(value is None for _, value in batch):
                    continue  # deletions in a segment that is gone already
                assert self._directory is not None, "segments used before open()"
                path = self._directory / f"{self._name}.{segment_id * self.interval_ms}"
                segment = self._segments[segment_id] = Segment(segment_id, path, self._options)
            segment.write(batch)

    def drop_expired(self, limit: int) -> None:
        """Delete the segments whose every time is ``<= limit``."""
        for segment_id in [i for i in self._segments if (i + 1) * self.interval_ms - 1 <= limit]:
            self._segments.pop(segment_id).destroy()

    def commit(self, observed_time: int, seq: int) -> None:
        """Save the position (see the module docstring) if it moved."""
        if (observed_time, seq) == self._position or self._directory is None:
            return
        temporary = self._directory / (POSITION_FILE + ".tmp")
        temporary.write_text(json.dumps({"observed": observed_time, "seq": seq}))
        os.replace(temporary, self._directory / POSITION_FILE)
        self._position = (observed_time, seq)

    def close(self) -> None:
        """Close every segment (the temporary directory, if any, is deleted)."""
        for segment in self._segments.values():
            segment.close()
        self._segments.clear()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def wipe(self) -> None:
        """Delete every segment and the saved position."""
        for segment in self._segments.values():
            segment.destroy()
        self._segments.clear()
        self._position = (-1, 0)
        if self._directory is not None:
            (self._directory / POSITION_FILE).unlink(missing_ok=True)
