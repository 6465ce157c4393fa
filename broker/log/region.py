"""A byte range of a segment file held open for sending: what a fetch answers with.

A :class:`FileRegion` is ``size`` bytes at ``position`` of a ``.log`` file, through a file
descriptor of its own (an ``os.dup`` of the segment's): the bytes stay readable while the
response waits for the socket even if the segment is retired, deleted or closed meanwhile (the
open descriptor keeps the file's data, as Kafka's ``FileRecords`` slice keeps its channel). The
region is sent as it is — ``os.sendfile`` on a plaintext socket, read
(:meth:`FileRegion.read`, :meth:`FileRegion.read_pieces`) otherwise — and must be closed once
sent or dropped.

Not thread-safe; one owner (the connection sending it) closes it, exactly once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from sluice.errors import StorageError

__all__ = ["FileRegion"]


class FileRegion:
    """``size`` bytes at ``position`` of the file open as ``fd`` (owned: :meth:`close`)."""

    __slots__ = ("_fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self._fd = fd
        self.position = position
        self.size = size

    @classmethod
    def of(cls, fd: int, position: int, size: int) -> FileRegion:
        """A region of the file open as ``fd`` (not owned: the region holds a duplicate)."""
        return cls(os.dup(fd), position, size)

    @property
    def fd(self) -> int:
        """The region's own descriptor (-1 once closed)."""
        return self._fd

    def read(self) -> bytes:
        """The region's bytes (one ``pread``); :class:`StorageError` if the file is shorter."""
        return self._pread(self.position, self.size)

    def read_pieces(self, piece: int) -> Iterator[bytes]:
        """The region's bytes in pieces of at most ``piece`` bytes, each read (one ``pread``)
        when asked for; :class:`StorageError` when the file turns out shorter."""
        end = self.position + self.size
        for at in range(self.position, end, piece):
            yield self._pread(at, min(piece, end - at))

    def _pread(self, position: int, size: int) -> bytes:
        data = os.pread(self._fd, size, position)
        if len(data) != size:
            raise StorageError(
                f"segment file ended {size - len(data)} bytes short of a fetched region"
            )
        return data

    def close(self) -> None:
        """Close the descriptor (once; later calls do nothing)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"FileRegion(fd={self._fd}, position={self.position}, size={self.size})"
