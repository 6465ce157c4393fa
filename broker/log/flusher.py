"""Flushing rolled segments off the event loop, and the recovery point that says how far it got.

A roll used to fsync the old segment before the new one took appends: on a disk that writes
~700 MB/s, a 1 GiB segment held the broker's only thread for over a second. As Kafka does
(``UnifiedLog.roll`` schedules ``flushUptoOffsetExclusive`` on the broker's scheduler), the log
now hands the rolled segment to a :class:`RollFlusher`, which fsyncs it (and writes its indexes)
on the executor it was given: one thread for the whole broker, so flushes run in the order of
the rolls. When a flush is done the log's **recovery point** — the base offset of the oldest
segment that may hold writes not yet on disk — moves to the next segment and is written to
``recovery-point`` in the partition directory. After an unclean shutdown
:mod:`sluice.broker.log.loader` recovers every segment from there on.

A flush that fails (EIO, or ENOSPC while writing an index) is logged; the recovery point stays
where it was, so that the next unclean start recovers that segment, and :meth:`wait` (called
before a clean close) flushes the failed ones again in the caller's thread. The log waits for
the pending flushes before it deletes or replaces segments, before a flush of its own (the
flush policy's promise covers every record appended before it) and before it closes.

Without an executor (tools, tests) a rolled segment is flushed at once, in the caller's thread.

>>> import tempfile, pathlib
>>> from sluice.broker.log.config import LogConfig
>>> from sluice.broker.log.segment import LogSegment
>>> directory = pathlib.Path(tempfile.mkdtemp())
>>> flusher = RollFlusher(directory, None)
>>> flusher.recovery_point, read_checkpoint(directory / RECOVERY_POINT)
(-1, None)
>>> segment = LogSegment.create(directory, 0, LogConfig.from_mapping({}))
>>> flusher.submit(segment, 10)
>>> flusher.recovery_point, read_checkpoint(directory / RECOVERY_POINT)
(10, [10])
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Executor, Future
from pathlib import Path

from sluice.broker.log.files import read_checkpoint, write_checkpoint
from sluice.broker.log.loader import RECOVERY_POINT
from sluice.broker.log.segment import LogSegment
from sluice.errors import StorageError

__all__ = ["RollFlusher"]

log = logging.getLogger(__name__)


class RollFlusher:
    """The background flushes of one log's rolled segments and its recovery point."""

    def __init__(self, directory: Path, executor: Executor | None) -> None:
        self.directory = directory
        self._executor = executor
        self._pending: list[Future[None]] = []
        self._failed: list[LogSegment] = []
        self._wanted = -1  # the recovery point once every submitted flush has succeeded
        self._lock = threading.Lock()
        saved = read_checkpoint(directory / RECOVERY_POINT)
        self.recovery_point = saved[0] if saved else -1
        """Base offset of the oldest segment that may hold unflushed writes (-1: unknown)."""

    def start_at(self, base_offset: int) -> None:
        """Every segment below ``base_offset`` is on disk (a log just opened or recovered; with
        one segment the log needs no file: without one, a restart recovers them all), and no
        flush is pending (the log waited: it may have been truncated below the recovery point)."""
        self._wanted = base_offset
        if base_offset != self.recovery_point:
            self._advance(base_offset)

    def submit(self, segment: LogSegment, end: int) -> None:
        """Flush the rolled ``segment`` (whose offsets end before ``end``)."""
        self._wanted = max(self._wanted, end)
        if self._executor is None:
            self._flush(segment, end)
            return
        self._pending = [f for f in self._pending if not f.done()]
        self._pending.append(self._executor.submit(self._flush, segment, end))

    def wait(self) -> None:
        """Return when every submitted flush is done; flush the failed ones again here (raises
        :class:`~sluice.errors.StorageError` if one fails again)."""
        if not self._pending and not self._failed:
            return  # the usual case: Log.flush() runs this before every flush of its own
        for future in self._pending:
            future.result()
        self._pending.clear()
        with self._lock:
            failed, self._failed = self._failed, []
        if failed:
            for segment in failed:
                segment.flush()
            self._advance(self._wanted)

    def _flush(self, segment: LogSegment, end: int) -> None:
        try:
            segment.flush()
        except StorageError as exc:
            log.error("%s (the recovery point stays at %d)", exc, self.recovery_point)
            with self._lock:
                self._failed.append(segment)
            return
        with self._lock:
            if self._failed:
                return  # an older segment is not on disk: the recovery point cannot pass it
        self._advance(end)

    def _advance(self, offset: int) -> None:
        """Write the recovery point; if that fails the old one stays (more is recovered)."""
        try:
            write_checkpoint(self.directory / RECOVERY_POINT, [offset])
        except OSError as exc:
            log.error("%s: recovery point %d not written: %s", self.directory, offset, exc)
            return
        self.recovery_point = offset
