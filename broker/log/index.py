"""What the offset index and the time index share: sorted fixed-size entries, searched by key.

An index file is a plain array of big-endian entries (no header), each ``key`` then ``value``,
keys strictly increasing. In memory the entries live in two :class:`array.array` columns so that
:func:`bisect.bisect_right` searches them in C; the file is loaded lazily on first use and is
written only by :meth:`AbstractIndex.flush` (at flush, roll and close), which appends the entries
added since the last flush and fsyncs. Unlike Kafka the file is not preallocated, so a clean file
is always exactly ``entries * entry_size`` bytes.

After a crash the file may lack the last entries, end in a torn entry, or disagree with its
segment: :meth:`AbstractIndex.load` raises :class:`CorruptIndexError` on a torn size or keys out
of order, and the segment then rebuilds both of its indexes from the log.

Not thread-safe: one owner (the segment) drives it.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array
from itertools import pairwise
from pathlib import Path
from typing import ClassVar

__all__ = ["AbstractIndex", "CorruptIndexError"]


class CorruptIndexError(Exception):
    """An index file that cannot be trusted; the segment rebuilds it from the log."""


class AbstractIndex:
    """Sorted ``(key, value)`` entries of a segment, persisted in ``path``."""

    ENTRY: ClassVar[struct.Struct]
    KEY_TYPE: ClassVar[str]
    VALUE_TYPE: ClassVar[str]

    def __init__(self, path: Path, base_offset: int, max_index_bytes: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self.ENTRY.size)
        self._keys: array[int] = array(self.KEY_TYPE)
        self._values: array[int] = array(self.VALUE_TYPE)
        self._loaded = False
        self._persisted = 0
        """Entries already in the file; -1 when the file must be rewritten whole."""

    # -- loading -------------------------------------------------------------------------------

    def load(self) -> None:
        """Read the file (missing: empty); raise :class:`CorruptIndexError` if it is damaged."""
        if self._loaded:
            return
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        if len(data) % self.ENTRY.size:
            raise CorruptIndexError(f"{self.path.name}: size {len(data)} is not whole entries")
        keys, values = array(self.KEY_TYPE), array(self.VALUE_TYPE)
        for key, value in self.ENTRY.iter_unpack(data):
            keys.append(key)
            values.append(value)
        if any(a >= b for a, b in pairwise(keys)) or not self._check(keys, values):
            raise CorruptIndexError(f"{self.path.name}: entries out of order")
        self._keys, self._values = keys, values
        self._persisted = len(keys)
        self._loaded = True

    def _check(self, keys: array[int], values: array[int]) -> bool:
        """Whether loaded entries are consistent beyond sorted keys (subclasses add rules)."""
        return True

    def looks_sane(self, log_size: int) -> bool:
        """Cheap check at open: the file exists, holds whole entries (none beside an empty log)
        and its last entry fits a log of ``log_size`` bytes."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return False
        if size % self.ENTRY.size or (log_size == 0 and size):
            return False
        last = self.last_on_disk()
        return self._last_fits(last, log_size)

    def _last_fits(self, last: tuple[int, int] | None, log_size: int) -> bool:
        """Whether the last entry on disk fits the log (subclasses)."""
        return True

    def last_on_disk(self) -> tuple[int, int] | None:
        """The last entry of the file without loading it all (a cheap sanity check at open)."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return None
        if size == 0 or size % self.ENTRY.size:
            return None
        with self.path.open("rb") as f:
            f.seek(size - self.ENTRY.size)
            key, value = self.ENTRY.unpack(f.read(self.ENTRY.size))
        return int(key), int(value)

    # -- entries -------------------------------------------------------------------------------

    @property
    def entries(self) -> int:
        self.load()
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def last(self) -> tuple[int, int] | None:
        """The last ``(key, value)``, or None when empty."""
        self.load()
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def _append(self, key: int, value: int) -> None:
        self.load()
        if self._keys and key <= self._keys[-1]:
            raise ValueError(f"index key {key} does not follow {self._keys[-1]}")
        self._keys.append(key)
        self._values.append(value)

    def _floor(self, key: int) -> int:
        """Position in the entries of the last one whose key is <= ``key``; -1 if none."""
        self.load()
        return bisect.bisect_right(self._keys, key) - 1

    def clear(self) -> None:
        """Drop every entry (before a rebuild); the file is rewritten at the next flush."""
        self._keys, self._values = array(self.KEY_TYPE), array(self.VALUE_TYPE)
        self._loaded = True
        self._persisted = -1

    # -- persistence ---------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the entries added since the last flush and fsync (nothing to do: no I/O)."""
        if not self._loaded or self._persisted == len(self._keys):
            return
        start = max(self._persisted, 0)
        data = b"".join(
            self.ENTRY.pack(k, v)
            for k, v in zip(self._keys[start:], self._values[start:], strict=True)
        )
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            if self._persisted < 0:
                os.ftruncate(fd, 0)
            view = memoryview(data)
            position = start * self.ENTRY.size
            while view:
                written = os.pwrite(fd, view, position)
                view, position = view[written:], position + written
            os.fsync(fd)
        finally:
            os.close(fd)
        self._persisted = len(self._keys)

    def rename(self, path: Path) -> None:
        """Move the file (if written) to ``path``."""
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
