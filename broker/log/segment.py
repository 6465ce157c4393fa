"""One segment of a partition log: a ``.log`` file of record batches and its two indexes.

On disk, as Kafka's ``LogSegment``::

    <base offset, 20 digits>.log        v2 record batches back to back, exactly as produced
                                        (base offset patched in), no header, no padding
    <base offset, 20 digits>.index      sparse offset index  (see offset_index.py)
    <base offset, 20 digits>.timeindex  sparse time index    (see time_index.py)
    <base offset, 20 digits>.txnindex   aborted transactions (see txn_index.py)

Every batch of a segment has offsets at or above the base offset and below the next segment's
base offset, and offsets increase from batch to batch (compaction may leave gaps).

Appends write at the end with ``os.pwrite``; reads use ``os.pread`` (no shared file position), so
a read never sees a half-written batch: the segment's ``size`` only grows after a write
completed. Finding a position costs an index binary search plus a header scan of about
``index.interval.bytes``; the bytes of a fetch are never parsed: a fetch takes them as a
:class:`~.region.FileRegion` (sent with ``os.sendfile`` where it can be), :meth:`LogSegment.read`
with one ``pread``.

Crash behaviour: a write that fails (ENOSPC, EIO) is cut off again with ``ftruncate`` and raises
:class:`~sluice.errors.StorageError`, leaving the segment as it was. After an unclean shutdown
:meth:`LogSegment.recover` scans the file, validates each batch's CRC-32C and offsets, truncates
at the first torn or corrupt batch and rebuilds both indexes; an index that is missing or
damaged is rebuilt the same way. The aborted-transaction index needs the producer state to be
rebuilt, so the segment only flags it (``txn_index_stale``: missing, damaged, or the segment was
recovered) and the log rebuilds it. Not thread-safe: the owning log drives it from one thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
from collections.abc import Iterator
from pathlib import Path

from sluice.broker.log import scan
from sluice.broker.log.config import LogConfig
from sluice.broker.log.files import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_name,
)
from sluice.broker.log.index import CorruptIndexError
from sluice.broker.log.offset_index import OffsetIndex
from sluice.broker.log.region import FileRegion
from sluice.broker.log.time_index import TimeIndex
from sluice.broker.log.txn_index import TransactionIndex
from sluice.broker.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatchError,
    read_header,
    validate,
)
from sluice.errors import CorruptRecordError, StorageError

__all__ = ["LogSegment", "random_jitter"]

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1


def random_jitter(config: LogConfig) -> int:
    """A segment's share of ``segment.jitter.ms``: uniform in ``[0, min(jitter, segment.ms))``,
    drawn once per segment so that segments of many partitions do not all roll at once
    (Kafka's ``LogConfig.randomSegmentJitter``)."""
    if config.segment_jitter_ms <= 0:
        return 0
    return random.randrange(min(config.segment_jitter_ms, config.segment_ms))


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
        self.txn_index = TransactionIndex(self._path(TXN_INDEX_SUFFIX))
        self.txn_index_stale = False
        """The aborted-transaction index must be rebuilt by the log (see the module doc)."""
        self.index_interval_bytes = config.index_interval_bytes
        self.roll_jitter_ms = random_jitter(config)
        """Subtracted from ``segment.ms`` for this segment (``segment.jitter.ms``)."""
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
            for index in (segment.index, segment.time_index, segment.txn_index):
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
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        suffix: str = "",
        recover: bool = False,
    ) -> LogSegment:
        """An existing segment, trusted as written unless ``recover``; indexes that fail a
        sanity check are rebuilt."""
        segment = cls(directory, base_offset, config, suffix)
        segment._fd = os.open(segment.log_path, os.O_RDWR)
        segment.size = os.fstat(segment._fd).st_size
        if not segment.txn_index.is_sane():
            log.warning("%s: aborted-transaction index missing or damaged", segment.log_path)
            segment.txn_index_stale = True
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
        """Cheap checks at open (no index is read whole); see ``AbstractIndex.looks_sane``."""
        return self.index.looks_sane(self.size) and self.time_index.looks_sane(self.size)

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
                for _, fields in self._walk(position):
                    next_offset = scan.last_offset(fields) + 1
            except InvalidBatchError:
                self.recover()
                return self.next_offset
            self._next_offset = next_offset
        return self._next_offset

    @property
    def rolling_timestamp(self) -> int:
        """Max timestamp of the first batch (-1 if none): the clock of ``segment.ms``."""
        if self._rolling_timestamp is None:
            first = os.pread(self._fd, HEADER_SIZE, 0) if self.size >= HEADER_SIZE else b""
            self._rolling_timestamp = read_header(first).max_timestamp if first else -1
        return self._rolling_timestamp

    def largest_timestamp(self) -> int:
        """What retention.ms compares: the max timestamp, else the file's modification time."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.stat(self.log_path).st_mtime_ns // 1_000_000

    def should_roll(
        self, size: int, last_offset: int, max_timestamp: int, now_ms: int, config: LogConfig
    ) -> bool:
        """Whether a batch of ``size`` bytes up to ``last_offset`` must go to a new segment."""
        if self.created_ms is None:
            self.created_ms = now_ms
        if self.size == 0:
            return False
        if self.rolling_timestamp >= 0 and max_timestamp >= 0:
            waited = max_timestamp - self.rolling_timestamp
        else:
            waited = now_ms - self.created_ms
        return (
            self.size + size > config.segment_bytes
            or waited > config.max_segment_ms - self.roll_jitter_ms
            or self.index.is_full
            or self.time_index.is_full
            or last_offset - self.base_offset > INT_MAX
        )

    # -- writing -------------------------------------------------------------------------------

    def append(
        self, data: bytes | bytearray | memoryview, last_offset: int, max_timestamp: int
    ) -> None:
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
        self._account(position, len(data), last_offset, max_timestamp)
        self._dirty = True

    def _account(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        """Index bookkeeping for the batch now at ``position`` (as Kafka's LogSegment.append)."""
        if position == 0:
            self._rolling_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self.bytes_since_index > self.index_interval_bytes:
            self.index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self.bytes_since_index = 0
        self.bytes_since_index += size
        self.size = position + size
        self._next_offset = last_offset + 1

    def flush(self) -> None:
        """fsync the log and write + fsync the indexes."""
        try:
            if self._dirty:
                os.fsync(self._fd)
                self._dirty = False
            self.index.flush()
            self.time_index.flush()
            self.txn_index.flush()
        except OSError as exc:
            raise StorageError(f"cannot flush {self.log_path}: {exc.strerror or exc}") from exc

    def seal(self) -> None:
        """The segment stops being active: index its largest timestamp (flushed later)."""
        self._load_indexes()
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    def finalize(self) -> None:
        """:meth:`seal`, then flush."""
        self.seal()
        self.flush()

    # -- reading -------------------------------------------------------------------------------

    def _walk(self, position: int) -> Iterator[tuple[int, tuple[int, ...]]]:
        return scan.walk(self._fd, position, self.size)

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Turn a damaged batch header met while reading into :class:`CorruptRecordError`."""
        self._load_indexes()
        try:
            yield
        except InvalidBatchError as exc:
            raise CorruptRecordError(f"{self.log_path}: {exc.reason}") from exc

    def _locate(self, offset: int) -> tuple[int, tuple[int, ...]] | None:
        """Position and fields of the first batch whose last offset is >= ``offset``."""
        _, position = self.index.lookup(offset)
        return next((f for f in self._walk(position) if scan.last_offset(f[1]) >= offset), None)

    def read(
        self, offset: int, max_bytes: int, upper_bound: int, min_one_batch: bool
    ) -> bytes | None:
        """The bytes of :meth:`span` (one ``pread``); None when no batch reaches ``offset``."""
        found = self.span(offset, max_bytes, upper_bound, min_one_batch)
        if found is None:
            return None
        start, end = found
        return os.pread(self._fd, end - start, start) if end > start else b""

    def span(
        self, offset: int, max_bytes: int, upper_bound: int, min_one_batch: bool
    ) -> tuple[int, int] | None:
        """``(start, end)`` file positions of whole batches from the one holding ``offset``, at
        most ``max_bytes`` (or the first batch whole if ``min_one_batch``), none with offsets at
        or past ``upper_bound``; ``start == end`` when there is nothing to read.

        None when no batch of this segment reaches ``offset``. Only headers are read.
        """
        with self._reading():
            found = self._locate(offset)
            if found is None:
                return None
            start, first = found
            if scan.last_offset(first) >= upper_bound:
                return start, start
            limit = min(self.size, start + max(max_bytes, 0))
            if upper_bound < self.next_offset and (bound := self._locate(upper_bound)):
                limit = min(limit, bound[0])
            _, entry = self.index.floor_position(limit)
            end = max(entry, start)  # a batch boundary at or below the limit
            for position, fields in self._walk(end):
                if position + LOG_OVERHEAD + fields[scan.LENGTH] > limit:
                    break
                end = position + LOG_OVERHEAD + fields[scan.LENGTH]
        if end == start and min_one_batch:
            end = start + LOG_OVERHEAD + first[scan.LENGTH]
        return start, end

    def region(self, start: int, end: int) -> FileRegion:
        """Bytes ``[start, end)`` of the ``.log`` file as a :class:`FileRegion` (its own
        descriptor: it outlives this segment's closing)."""
        return FileRegion.of(self._fd, start, end - start)

    def find_by_timestamp(self, timestamp: int, min_offset: int) -> BatchHeader | None:
        """The first batch with max timestamp >= ``timestamp`` and offsets reaching
        ``min_offset``, found through the time index (``position``: in the file)."""
        with self._reading():
            _, offset = self.time_index.lookup(timestamp)
            _, entry = self.index.lookup(max(offset, min_offset))
            for position, fields in self._walk(entry):
                if fields[scan.MAX_TIMESTAMP] >= timestamp and (
                    scan.last_offset(fields) >= min_offset
                ):
                    return scan.make_header(fields, position)
        return None

    def headers(self, from_offset: int) -> Iterator[BatchHeader]:
        """Headers of the batches whose offsets reach ``from_offset``, in order (``position``:
        in the file)."""
        with self._reading():
            _, position = self.index.lookup(from_offset)
            for at, fields in self._walk(position):
                if scan.last_offset(fields) >= from_offset:
                    yield scan.make_header(fields, at)

    def read_batch(self, position: int, size: int) -> bytes:
        """The ``size`` bytes of the batch at ``position``."""
        return os.pread(self._fd, size, position)

    def batches(self, end: int | None = None) -> Iterator[tuple[int, BatchHeader, bytes]]:
        """Every whole batch up to ``end`` (default: ``size``); see :func:`.scan.batches`."""
        return scan.batches(self._fd, self.size if end is None else end)

    # -- recovery ------------------------------------------------------------------------------

    def recover(self) -> int:
        """Rebuild the indexes from the log, validating every batch; truncate the log at the
        first torn or corrupt batch. Returns the number of bytes truncated."""
        self.index.clear()
        self.time_index.clear()
        self.txn_index_stale = True
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
                self._account(position, header.size, header.last_offset, header.max_timestamp)
        except InvalidBatchError as exc:
            log.warning("%s: %s at byte %d", self.log_path, exc.reason, self.size)
        truncated = file_size - self.size
        if truncated:
            log.warning(
                "%s: truncating %d bytes after byte %d", self.log_path, truncated, self.size
            )
            os.ftruncate(self._fd, self.size)
        self._dirty = True  # what a crash left in the page cache may not be on disk yet
        self.flush()
        return truncated

    def truncate_to(self, offset: int) -> int:
        """Cut the segment before its first batch whose offsets reach ``offset`` (a batch is
        never split), then rebuild the indexes as :meth:`recover` does (the aborted-transaction
        index is flagged stale: the log rebuilds it). Returns the number of bytes cut."""
        cut = self.size
        with self._reading():
            _, position = self.index.lookup(offset)
            for at, fields in self._walk(position):
                if scan.last_offset(fields) >= offset:
                    cut = at
                    break
        if cut == self.size:
            return 0
        try:
            os.ftruncate(self._fd, cut)
        except OSError as exc:
            raise StorageError(f"cannot truncate {self.log_path}: {exc.strerror or exc}") from exc
        removed = self.size - cut
        self.recover()
        return removed

    # -- files ---------------------------------------------------------------------------------

    def change_suffix(self, suffix: str) -> None:
        """Rename the segment's files to carry ``suffix`` ('' for the plain names)."""
        self.suffix = suffix
        self.txn_index.rename(self._path(TXN_INDEX_SUFFIX))
        for index, kind in ((self.index, INDEX_SUFFIX), (self.time_index, TIME_INDEX_SUFFIX)):
            index.rename(self._path(kind))
        new_log = self._path(LOG_SUFFIX)
        os.replace(self.log_path, new_log)
        self.log_path = new_log

    def retire(self) -> None:
        """Close and rename every file to ``*.deleted``: the segment is out of the log, its
        files wait for ``file.delete.delay.ms`` before :meth:`delete` removes them (a restart
        removes them at once: :mod:`sluice.broker.log.loader`)."""
        self.close()
        self.change_suffix(DELETED_SUFFIX)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        """Close and remove the files (the log first, renamed ``.deleted``, so that a crash
        leaves only orphans that the next open removes)."""
        self.close()
        if self.log_path.exists() and self.suffix != DELETED_SUFFIX:
            doomed = self.log_path.with_name(self.log_path.name + DELETED_SUFFIX)
            os.replace(self.log_path, doomed)
            doomed.unlink()
        self.log_path.unlink(missing_ok=True)
        self.index.delete()
        self.time_index.delete()
        self.txn_index.delete()

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, size={self.size})"
