"""The sparse time index of a segment: timestamp → the offset where it was first reached.

On disk (``<base offset>.timeindex``), as Kafka's ``TimeIndex``: 12-byte entries, no header::

    timestamp        int64   the largest batch max-timestamp of the segment so far
    relative_offset  int32   last offset of the batch that first reached it, minus the base

An entry is added beside each offset-index entry when the largest timestamp grew since the last
time-index entry, and once more when the segment stops being active (at roll and at close), so
the last entry of an inactive segment holds its largest timestamp. Timestamps strictly increase.
To find the first batch with a max timestamp >= T: take the last entry with timestamp <= T,
then scan batches from that entry's offset (the offset index gives the position).

Crash behaviour: as the offset index (written at flush/roll/close, rebuilt from the log when
missing, torn or after an unclean shutdown). Not thread-safe (owned by its segment).

>>> import pathlib, tempfile
>>> index = TimeIndex(pathlib.Path(tempfile.mkdtemp()) / "x.timeindex", 100, 1200)
>>> index.maybe_append(1_000, 104); index.maybe_append(900, 110); index.maybe_append(2_000, 130)
>>> index.lookup(500), index.lookup(1_500), index.last_entry()
((-1, 100), (1000, 104), (2000, 130))
"""

from __future__ import annotations

import struct
from array import array
from itertools import pairwise

from sluice.broker.log.index import AbstractIndex

__all__ = ["TimeIndex"]


class TimeIndex(AbstractIndex):
    """Sparse ``(timestamp, relative offset)`` entries of one segment."""

    ENTRY = struct.Struct(">qi")
    KEY_TYPE = "q"
    VALUE_TYPE = "i"

    def _check(self, keys: array[int], values: array[int]) -> bool:
        return (not values or values[0] >= 0) and all(a <= b for a, b in pairwise(values))

    def _last_fits(self, last: tuple[int, int] | None, log_size: int) -> bool:
        # A segment that stopped being active indexes its largest timestamp: an empty time
        # index beside a non-empty log was lost (or the log holds no timestamps at all).
        return last[1] >= 0 if last is not None else log_size == 0

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add ``(timestamp, offset)`` if the timestamp is larger than the last entry's."""
        last = self.last()
        if timestamp < 0 or (last is not None and timestamp <= last[0]):
            return
        self._append(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """``(timestamp, offset)`` of the last entry at or below ``timestamp``, or
        ``(-1, base_offset)`` when there is none."""
        i = self._floor(timestamp)
        if i < 0:
            return -1, self.base_offset
        return self._keys[i], self.base_offset + self._values[i]

    def last_entry(self) -> tuple[int, int]:
        """``(timestamp, offset)`` of the last entry, or ``(-1, base_offset)``."""
        last = self.last()
        return (-1, self.base_offset) if last is None else (last[0], self.base_offset + last[1])
