"""The sparse offset index of a segment: offset → byte position of its batch in the ``.log``.

On disk (``<base offset>.index``), as Kafka's ``OffsetIndex``: 8-byte entries, no header::

    relative_offset  int32   last offset of an indexed batch minus the segment's base offset
    position         int32   byte position of that batch in the segment's .log file

One entry is added each time more than ``index.interval.bytes`` were appended since the last
one, so entries are sparse and both columns strictly increase. A lookup finds the last entry at
or below an offset; the batch holding the offset is at that position or after it, within about
``index.interval.bytes`` plus one batch. At most ``segment.index.bytes / 8`` entries: when full,
the segment is rolled.

Crash behaviour: written at flush, roll and close only; after an unclean shutdown the active
segment's index is rebuilt from its log, and any index that is missing, torn or out of order is
rebuilt too. Not thread-safe (owned by its segment).

>>> import pathlib, tempfile
>>> index = OffsetIndex(pathlib.Path(tempfile.mkdtemp()) / "x.index", 100, 1024)
>>> index.append(104, 0); index.append(130, 4096)
>>> index.lookup(99), index.lookup(120), index.lookup(500)
((100, 0), (104, 0), (130, 4096))
>>> index.floor_position(5000)
(130, 4096)
"""

from __future__ import annotations

import bisect
import struct
from array import array
from itertools import pairwise

from sluice.broker.log.index import AbstractIndex

__all__ = ["OffsetIndex"]


class OffsetIndex(AbstractIndex):
    """Sparse ``(relative offset, position)`` entries of one segment."""

    ENTRY = struct.Struct(">ii")
    KEY_TYPE = "i"
    VALUE_TYPE = "i"

    def _check(self, keys: array[int], values: array[int]) -> bool:
        return (not keys or keys[0] >= 0) and all(a < b for a, b in pairwise(values))

    def _last_fits(self, last: tuple[int, int] | None, log_size: int) -> bool:
        return last is None or (last[0] >= 0 and 0 <= last[1] < log_size)

    def append(self, offset: int, position: int) -> None:
        """Index the batch at ``position`` whose last offset is ``offset``."""
        self._append(offset - self.base_offset, position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """``(offset, position)`` of the last entry at or below ``offset``; the segment start
        ``(base_offset, 0)`` when there is none."""
        i = self._floor(offset - self.base_offset)
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._values[i]

    def floor_position(self, position: int) -> tuple[int, int]:
        """``(offset, position)`` of the last entry whose position is at or below ``position``."""
        self.load()
        i = bisect.bisect_right(self._values, position) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._keys[i], self._values[i]

    def last_entry(self) -> tuple[int, int]:
        """``(offset, position)`` of the last entry, or ``(base_offset, 0)``."""
        last = self.last()
        return (self.base_offset, 0) if last is None else (self.base_offset + last[0], last[1])
