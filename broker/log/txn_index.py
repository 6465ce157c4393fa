"""The aborted-transaction index of a segment: which transactions were aborted, by offsets.

On disk (``<base offset>.txnindex``), as Kafka's ``TransactionIndex``: 34-byte big-endian entries,
no header, one per abort marker written in the segment, in the order of the markers::

    version             int16   0
    producer_id         int64
    first_offset        int64   first offset of the aborted transaction (maybe in an older segment)
    last_offset         int64   offset of its abort marker (in this segment)
    last_stable_offset  int64   the partition's last stable offset once the abort was written

``last_offset`` strictly increases from entry to entry. A read_committed fetch of ``[start, end)``
asks every segment from the one holding ``start`` for the entries overlapping that range (see
:meth:`TransactionIndex.collect`); the consumer then drops those producers' records in those
ranges. An entry whose ``last_stable_offset`` reaches ``end`` proves that no later segment holds
an overlapping one (every transaction still open then began at or after it), which ends the search.

Unlike Kafka the file exists for every segment (empty without aborts), so that a missing file
means a lost one. The entries live in memory (loaded and validated when the segment is opened);
new ones reach the file at flush, roll and close, as the other indexes. Crash behaviour: after an
unclean shutdown the active segment's index, and any index missing, torn or out of order, is
rebuilt by the log from its control batches and the producer state (:meth:`Log.open
<sluice.broker.log.log.Log.open>`). Not thread-safe (owned by its segment).

>>> import pathlib, tempfile
>>> index = TransactionIndex(pathlib.Path(tempfile.mkdtemp()) / "x.txnindex")
>>> index.append(AbortedTxn(producer_id=7, first_offset=10, last_offset=15, last_stable_offset=16))
>>> index.append(AbortedTxn(producer_id=8, first_offset=12, last_offset=20, last_stable_offset=21))
>>> [(t.producer_id, t.first_offset) for t in index.collect(16, 30)[0]]
[(8, 12)]
>>> index.collect(0, 11)
([AbortedTxn(producer_id=7, first_offset=10, last_offset=15, last_stable_offset=16)], True)
"""

from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from sluice.broker.log.index import CorruptIndexError

__all__ = ["AbortedTxn", "TransactionIndex"]

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction of one producer on this partition."""

    producer_id: int
    first_offset: int
    last_offset: int
    """Offset of the abort marker."""
    last_stable_offset: int
    """The partition's last stable offset right after the abort was written."""


class TransactionIndex:
    """The aborted transactions whose markers a segment holds, persisted in ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: list[AbortedTxn] = []
        self._last_offsets: list[int] = []
        self._loaded = False
        self._persisted = 0
        """Entries already in the file; -1 when the file must be rewritten whole."""

    # -- loading -------------------------------------------------------------------------------

    def load(self) -> None:
        """Read and validate the file (missing: empty); raise :class:`CorruptIndexError`."""
        if self._loaded:
            return
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        if len(data) % ENTRY_SIZE:
            raise CorruptIndexError(f"{self.path.name}: size {len(data)} is not whole entries")
        entries: list[AbortedTxn] = []
        for version, pid, first, last, lso in ENTRY.iter_unpack(data):
            if version != VERSION or not 0 <= first <= last or lso < 0:
                raise CorruptIndexError(f"{self.path.name}: bad entry at {len(entries)}")
            if entries and last <= entries[-1].last_offset:
                raise CorruptIndexError(f"{self.path.name}: entries out of order")
            entries.append(AbortedTxn(pid, first, last, lso))
        self._entries = entries
        self._last_offsets = [e.last_offset for e in entries]
        self._persisted = len(entries)
        self._loaded = True

    def is_sane(self) -> bool:
        """Whether the file exists and loads (checked when the segment opens)."""
        if not self.path.exists():
            return False
        try:
            self.load()
        except (CorruptIndexError, OSError):
            return False
        return True

    # -- entries -------------------------------------------------------------------------------

    @property
    def entries(self) -> tuple[AbortedTxn, ...]:
        self.load()
        return tuple(self._entries)

    def append(self, entry: AbortedTxn) -> None:
        """Add the entry of an abort marker written after every earlier one."""
        self.load()
        if self._entries and entry.last_offset <= self._entries[-1].last_offset:
            raise ValueError(
                f"aborted transaction ending at {entry.last_offset} does not follow "
                f"{self._entries[-1].last_offset}"
            )
        self._entries.append(entry)
        self._last_offsets.append(entry.last_offset)

    def collect(self, start_offset: int, end_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping ``[start_offset, end_offset)`` (last offset >= start, first offset
        < end), and whether the search is complete (an entry's last stable offset >= end)."""
        self.load()
        found = []
        for entry in self._entries[bisect.bisect_left(self._last_offsets, start_offset) :]:
            if entry.first_offset < end_offset:
                found.append(entry)
            if entry.last_stable_offset >= end_offset:
                return found, True
        return found, False

    def clear(self) -> None:
        """Drop every entry (before a rebuild); the file is rewritten at the next flush."""
        self._entries, self._last_offsets = [], []
        self._loaded = True
        self._persisted = -1

    # -- persistence ---------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the entries added since the last flush and fsync (nothing new: no I/O)."""
        if not self._loaded or self._persisted == len(self._entries):
            return
        start = max(self._persisted, 0)
        data = b"".join(
            ENTRY.pack(VERSION, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
            for e in self._entries[start:]
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if self._persisted < 0:
                os.ftruncate(fd, 0)
            view, position = memoryview(data), start * ENTRY_SIZE
            while view:
                written = os.pwrite(fd, view, position)
                view, position = view[written:], position + written
            os.fsync(fd)
        finally:
            os.close(fd)
        self._persisted = len(self._entries)

    def rename(self, path: Path) -> None:
        """Move the file (if written) to ``path``."""
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
