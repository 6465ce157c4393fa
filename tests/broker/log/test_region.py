"""A segment file's region as a fetch sends it without ``sendfile``: whole, or in pieces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sluice.broker.log.region import FileRegion
from sluice.errors import StorageError


def _region(path: Path, data: bytes, position: int, size: int) -> FileRegion:
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        return FileRegion.of(fd, position, size)
    finally:
        os.close(fd)  # the region holds its own descriptor


@pytest.mark.parametrize("piece", [1, 7, 64, 100, 1000])
def test_the_pieces_are_the_region(tmp_path: Path, piece: int) -> None:
    data = bytes(range(256)) * 4
    region = _region(tmp_path / "00.log", data, 10, 500)
    try:
        pieces = list(region.read_pieces(piece))
        assert b"".join(pieces) == region.read() == data[10:510]
        assert all(len(p) <= piece for p in pieces)
        assert len(pieces) == -(-500 // piece)
    finally:
        region.close()


def test_a_file_cut_short_fails_at_the_piece_it_lacks(tmp_path: Path) -> None:
    path = tmp_path / "00.log"
    region = _region(path, b"x" * 1000, 0, 1000)
    try:
        os.truncate(path, 250)  # a follower's truncation, say, while the region waits
        pieces = region.read_pieces(100)
        assert [next(pieces), next(pieces)] == [b"x" * 100, b"x" * 100]
        with pytest.raises(StorageError, match="50 bytes short"):
            next(pieces)
        with pytest.raises(StorageError, match="750 bytes short"):
            region.read()
    finally:
        region.close()
