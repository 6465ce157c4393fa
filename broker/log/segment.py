"""One segment of a partition log: a ``.log`` file of record batches and its two indexes.

On disk, as Kafka's ``LogSegment``::

    <base offset, 20 digits>.log        v2 record batches back to back, exactly as produced
                                        (base offset patched in), no header, no padding
    <base offset, 20 digits>.index      sparse offset index  (see offset_index.py)
    <base offset, 20 digits>.timeindex  sparse time index    (see time_index.py)

Every batch of a segment has offsets at or above the base offset and below the next segment's
base offset, and offsets increase from batch to batch (compaction may leave gaps).

Appends write at the end with ``os.pwrite``; reads use ``os.pread`` (no shared file position), so
a read never sees a half-written batch: the segment's ``size`` only grows after a write
completed. Finding a position costs an index binary search plus a header scan of about
``index.interval.bytes``; the bytes of a fetch are read with one ``pread``, never parsed.

Crash behaviour: a write that fails (ENOSPC, EIO) is cut off again with ``ftruncate`` and raises
:class:`~sluice.errors.StorageError`, leaving the segment as it was. After an unclean shutdown
:meth:`LogSegment.recover` scans the file, validates each batch's CRC-32C and offsets, truncates
at the first torn or corrupt batch and rebuilds both indexes; an index that is missing or
damaged is rebuilt the same way. Not thread-safe: the owning log drives it from one thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from sluice.broker.log.config import LogConfig
from sluice.broker.log.files import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    segment_name,
)
from sluice.broker.log.index import CorruptIndexError
from sluice.broker.log.offset_index import OffsetIndex
from sluice.broker.log.time_index import TimeIndex
from sluice.broker.records.batch import (
    HEADER_SIZE,
    BatchHeader,
    InvalidBatchError,
    iter_headers,
    read_header,
    validate,
)
from sluice.errors import CorruptRecordError, StorageError

__all__ = ["LogSegment"]

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1
_BLOCK = 64 * 1024
"""Bytes read at once when scanning headers on the read path."""
_CHUNK = 4 * 1024 * 1024
"""Bytes read at once when scanning whole batches (recovery, cleaning)."""


class LogSegment:
    """A ``.log`` file of batches from ``base_offset`` with its offset and time index."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, suffix: str) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.suffix = suffix
        self.log_path = directory / (segment_name(base_offset, LOG_SUFFIX) + suffix)
        self.index = OffsetIndex(self._path(INDEX_SUFFIX), base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(
            self._path(TIME_INDEX_SUFFIX), base_offset, config.segment_index_bytes
        )
        self.index_interval_bytes = config.index_interval_bytes
        self.size = 0
        self.created_ms: int | None = None
        self.bytes_since_index = 0
        self.max_timestamp = -1
        """Largest batch max timestamp in the segment (-1: none)."""
        self.offset_of_max_timestamp = -1
        """Last offset of the first batch that reached ``max_timestamp``."""
        self._next_offset: int | None = None
        self._rolling_timestamp: int | None = None
        self._dirty = False
        self._fd = -1

    def _path(self, kind: str) -> Path:
        return self.directory / (segment_name(self.base_offset, kind) + self.suffix)

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        suffix: str = "",
        now_ms: int | None = None,
    ) -> LogSegment:
        """A new empty segment (existing files of that name are emptied)."""
        segment = cls(directory, base_offset, config, suffix)
        try:
            segment._fd = os.open(segment.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
            for index in (segment.index, segment.time_index):
                index.clear()
                index.flush()
        except OSError as exc:
            segment.delete()
            raise StorageError(f"cannot create segment {segment.log_path}: {exc}") from exc
        segment._next_offset = base_offset
        segment.created_ms = now_ms
        return segment

    @classmethod
    def open(
        cls, directory: Path, base_offset: int, config: LogConfig, *, suffix: str = "",
        recover: bool = False,
    ) -> LogSegment:
        """An existing segment, trusted as written unless ``recover``; indexes that fail a
        sanity check are rebuilt."""
        segment = cls(directory, base_offset, config, suffix)
        segment._fd = os.open(segment.log_path, os.O_RDWR)
        segment.size = os.fstat(segment._fd).st_size
        if recover:
            segment.recover()
        elif segment._sane():
            segment.max_timestamp, offset = segment.time_index.last_on_disk() or (-1, -1)
            segment.offset_of_max_timestamp = base_offset + offset if offset >= 0 else -1
        else:
            log.warning("%s: indexes missing or damaged, rebuilding", segment.log_path)
            segment.recover()
        return segment

    def _sane(self) -> bool:
        """Cheap checks at open: index files present, whole entries, last entries in bounds."""
        for index in (self.index, self.time_index):
            if not index.path.exists() or index.path.stat().st_size % index.ENTRY.size:
                return False
            if self.size == 0 and index.path.stat().st_size:
                return False
        last = self.index.last_on_disk()
        if last is not None and not (last[0] >= 0 and 0 <= last[1] < self.size):
            return False
        # A segment that stopped being active indexes its largest timestamp: an empty time
        # index beside a non-empty log was lost (or the log holds no timestamps at all).
        last_time = self.time_index.last_on_disk()
        if last_time is None:
            return self.size == 0
        return last_time[1] >= 0

    def _load_indexes(self) -> None:
        try:
            self.index.load()
            self.time_index.load()
        except CorruptIndexError as exc:
            log.warning("%s, rebuilding", exc)
            self.recover()

    # -- state ---------------------------------------------------------------------------------

    @property
    def next_offset(self) -> int:
        """One past the last offset in the segment (the base offset when empty)."""
        if self._next_offset is None:
            self._load_indexes()
        if self._next_offset is None:
            _, position = self.index.last_entry()
            next_offset = self.base_offset
            try:
                for _, header in self._walk(position):
                    next_offset = header.next_offset
            except InvalidBatchError:
                self.recover()
                return self.next_offset
            self._next_offset = next_offset
        return self._next_offset

    @property
    def rolling_timestamp(self) -> int:
        """Max timestamp of the first batch (-1 if none): the clock of ``segment.ms``."""
        if self._rolling_timestamp is None:
            self._rolling_timestamp = -1
            if self.size >= HEADER_SIZE:
                self._rolling_timestamp = read_header(
                    os.pread(self._fd, HEADER_SIZE, 0)
                ).max_timestamp
        return self._rolling_timestamp

    def largest_timestamp(self) -> int:
        """What retention.ms compares: the max timestamp, else the file's modification time."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def should_roll(self, header: BatchHeader, size: int, now_ms: int, config: LogConfig) -> bool:
        """Whether a batch of ``size`` bytes with offsets assigned must go to a new segment."""
        if self.created_ms is None:
            self.created_ms = now_ms
        if self.size == 0:
            return False
        if self.rolling_timestamp >= 0 and header.max_timestamp >= 0:
            waited = header.max_timestamp - self.rolling_timestamp
        else:
            waited = now_ms - self.created_ms
        return (
            self.size + size > config.segment_bytes
            or waited > config.segment_ms
            or self.index.is_full
            or self.time_index.is_full
            or header.last_offset - self.base_offset > INT_MAX
        )

    # -- writing -------------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, header: BatchHeader) -> None:
        """Write one batch (offsets assigned) at the end; on failure cut it off and raise."""
        position = self.size
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(self._fd, view, position + len(data) - len(view))
                view = view[written:]
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, position)
            raise StorageError(f"cannot write to {self.log_path}: {exc.strerror or exc}") from exc
        self._account(header, position)
        self._dirty = True

    def _account(self, header: BatchHeader, position: int) -> None:
        """Index bookkeeping for the batch now at ``position`` (as Kafka's LogSegment.append)."""
        if position == 0:
            self._rolling_timestamp = header.max_timestamp
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.last_offset
        if self.bytes_since_index > self.index_interval_bytes:
            self.index.append(header.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = 0
        self.bytes_since_index += header.size
        self.size = position + header.size
        self._next_offset = header.next_offset

    def flush(self) -> None:
        """fsync the log and write + fsync the indexes."""
        try:
            if self._dirty:
                os.fsync(self._fd)
                self._dirty = False
            self.index.flush()
            self.time_index.flush()
        except OSError as exc:
            raise StorageError(f"cannot flush {self.log_path}: {exc.strerror or exc}") from exc

    def finalize(self) -> None:
        """The segment stops being active: index its largest timestamp, then flush."""
        self._load_indexes()
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        self.flush()

    # -- reading -------------------------------------------------------------------------------

    def _walk(self, position: int) -> Iterator[tuple[int, BatchHeader]]:
        """``(position, header)`` of each batch from ``position`` (a batch start) to the end."""
        size, block, block_start = self.size, b"", 0
        while position < size:
            at = position - block_start
            if at < 0 or at + HEADER_SIZE > len(block):
                block, block_start, at = (
                    os.pread(self._fd, min(_BLOCK, size - position), position),
                    position,
                    0,
                )
            header = read_header(block, at)
            yield position, header
            position += header.size

    def _locate(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        _, position = self.index.lookup(offset)
        for found in self._walk(position):
            if found[1].last_offset >= offset:
                return found
        return None

    def read(
        self, offset: int, max_bytes: int, upper_bound: int, min_one_batch: bool
    ) -> bytes | None:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` (or the first
        batch whole if ``min_one_batch``), none with offsets at or past ``upper_bound``.

        None when no batch of this segment reaches ``offset``.
        """
        self._load_indexes()
        try:
            found = self._locate(offset)
            if found is None:
                return None
            start, first = found
            if first.last_offset >= upper_bound:
                return b""
            limit = min(self.size, start + max(max_bytes, 0))
            if upper_bound < self.next_offset and (bound := self._locate(upper_bound)):
                limit = min(limit, bound[0])
            _, entry = self.index.floor_position(limit)
            end = max(entry, start)  # a batch boundary at or below the limit
            for position, header in self._walk(end):
                if position + header.size > limit:
                    break
                end = position + header.size
        except InvalidBatchError as exc:
            raise CorruptRecordError(f"{self.log_path}: {exc.reason} reading {offset}") from exc
        if end == start:
            if not min_one_batch:
                return b""
            end = start + first.size
        return os.pread(self._fd, end - start, start)

    def find_by_timestamp(self, timestamp: int, min_offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch with max timestamp >= ``timestamp`` and offsets reaching
        ``min_offset``, found through the time index."""
        self._load_indexes()
        _, offset = self.time_index.lookup(timestamp)
        _, entry = self.index.lookup(max(offset, min_offset))
        try:
            for position, header in self._walk(entry):
                if header.max_timestamp >= timestamp and header.last_offset >= min_offset:
                    return position, header
        except InvalidBatchError as exc:
            raise CorruptRecordError(f"{self.log_path}: {exc.reason}") from exc
        return None

    def locate(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``."""
        self._load_indexes()
        try:
            return self._locate(offset)
        except InvalidBatchError as exc:
            raise CorruptRecordError(f"{self.log_path}: {exc.reason}") from exc

    def headers(self, from_offset: int) -> Iterator[BatchHeader]:
        """Headers of the batches whose offsets reach ``from_offset``, in order."""
        self._load_indexes()
        _, position = self.index.lookup(from_offset)
        try:
            for _, header in self._walk(position):
                if header.last_offset >= from_offset:
                    yield header
        except InvalidBatchError as exc:
            raise CorruptRecordError(f"{self.log_path}: {exc.reason}") from exc

    def read_batch(self, position: int, size: int) -> bytes:
        """The ``size`` bytes of the batch at ``position``."""
        return os.pread(self._fd, size, position)

    def batches(self, end: int | None = None) -> Iterator[tuple[int, BatchHeader, bytes]]:
        """Every whole batch up to ``end`` (default: ``size``) as ``(file position, header,
        buffer)``, the header's ``position`` pointing into the buffer. Stops at a torn tail;
        raises :class:`~sluice.broker.records.batch.InvalidBatchError` at a bad header."""
        end = self.size if end is None else end
        position = 0
        while end - position >= HEADER_SIZE:
            chunk = os.pread(self._fd, min(_CHUNK, end - position), position)
            consumed = 0
            for header in iter_headers(chunk):
                yield position + header.position, header, chunk
                consumed = header.position + header.size
            if consumed == 0:
                header = read_header(chunk)
                if position + header.size > end:
                    return
                chunk = os.pread(self._fd, header.size, position)
                yield position, header, chunk
                consumed = header.size
            position += consumed

    # -- recovery ------------------------------------------------------------------------------

    def recover(self) -> int:
        """Rebuild the indexes from the log, validating every batch; truncate the log at the
        first torn or corrupt batch. Returns the number of bytes truncated."""
        self.index.clear()
        self.time_index.clear()
        self.max_timestamp = self.offset_of_max_timestamp = -1
        self._rolling_timestamp, self.bytes_since_index = None, 0
        self._next_offset, self.size = self.base_offset, 0
        file_size = os.fstat(self._fd).st_size
        try:
            for position, header, buffer in self.batches(file_size):
                validate(buffer, header)
                if (
                    header.base_offset < self._next_offset
                    or header.last_offset_delta < 0
                    or header.last_offset - self.base_offset > INT_MAX
                ):
                    raise InvalidBatchError(f"offset {header.base_offset} out of order")
                self._account(header, position)
        except InvalidBatchError as exc:
            log.warning("%s: %s at byte %d", self.log_path, exc.reason, self.size)
        truncated = file_size - self.size
        if truncated:
            log.warning(
                "%s: truncating %d bytes after byte %d", self.log_path, truncated, self.size
            )
            os.ftruncate(self._fd, self.size)
            self._dirty = True
        self.flush()
        return truncated

    # -- files ---------------------------------------------------------------------------------

    def change_suffix(self, suffix: str) -> None:
        """Rename the segment's files to carry ``suffix`` ('' for the plain names)."""
        self.suffix = suffix
        for index, kind in ((self.index, INDEX_SUFFIX), (self.time_index, TIME_INDEX_SUFFIX)):
            index.rename(self._path(kind))
        new_log = self._path(LOG_SUFFIX)
        os.replace(self.log_path, new_log)
        self.log_path = new_log

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        """Close and remove the files (the log first, renamed ``.deleted``, so that a crash
        leaves only orphans that the next open removes)."""
        self.close()
        if self.log_path.exists():
            doomed = self.log_path.with_name(self.log_path.name + DELETED_SUFFIX)
            os.replace(self.log_path, doomed)
            doomed.unlink()
        self.index.delete()
        self.time_index.delete()

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, size={self.size})"
