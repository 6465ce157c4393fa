"""Scanning the batches of a segment file: headers only (reads) or whole batches (recovery).

Both read a ``.log`` file through a file descriptor with ``os.pread`` in blocks, never one
system call per batch; the file layout is that of :mod:`sluice.broker.log.segment`.

* :func:`walk` yields each batch's raw header fields (one ``struct`` unpack, no object per
  batch): the fetch path scans at most about ``index.interval.bytes`` of headers with it.
* :func:`batches` yields whole batches with their bytes, for CRC validation and the cleaner.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from sluice.broker.records.batch import (
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    InvalidBatchError,
    iter_headers,
    read_header,
)

__all__ = ["LENGTH", "MAX_TIMESTAMP", "batches", "last_offset", "make_header", "walk"]

BLOCK = 32 * 1024
"""Bytes read at once when walking headers."""
CHUNK = 4 * 1024 * 1024
"""Bytes read at once when scanning whole batches."""
BASE_OFFSET, LENGTH, MAGIC, LAST_OFFSET_DELTA, MAX_TIMESTAMP = 0, 1, 3, 6, 8
"""Positions in the fields of :data:`~sluice.broker.records.batch.HEADER`."""


def last_offset(fields: tuple[int, ...]) -> int:
    """The last offset of the batch whose header ``fields`` are given."""
    return fields[BASE_OFFSET] + fields[LAST_OFFSET_DELTA]


def make_header(fields: tuple[int, ...], position: int) -> BatchHeader:
    """The :class:`BatchHeader` of raw fields (only for the batch a caller asked for)."""
    return BatchHeader(*fields[:13], position=position)  # type: ignore[misc]


def walk(fd: int, position: int, end: int) -> Iterator[tuple[int, tuple[int, ...]]]:
    """``(position, raw header fields)`` of each batch from ``position`` (a batch start) to
    ``end``; raises :class:`InvalidBatchError` where no batch header is or a batch runs past
    ``end`` (how a clean open notices a torn tail without checking CRCs)."""
    block, block_start = b"", 0
    while position < end:
        at = position - block_start
        if at < 0 or at + HEADER_SIZE > len(block):
            block = os.pread(fd, min(BLOCK, end - position), position)
            block_start, at = position, 0
            if len(block) < HEADER_SIZE:
                raise InvalidBatchError("truncated batch header", corrupt=True)
        fields = HEADER.unpack_from(block, at)
        if fields[MAGIC] != MAGIC_V2 or fields[LENGTH] < HEADER_SIZE - LOG_OVERHEAD:
            raise InvalidBatchError(f"no batch header at byte {position}", corrupt=True)
        if position + LOG_OVERHEAD + fields[LENGTH] > end:
            raise InvalidBatchError(f"the batch at byte {position} runs past the end", corrupt=True)
        yield position, fields
        position += LOG_OVERHEAD + fields[LENGTH]


def batches(fd: int, end: int) -> Iterator[tuple[int, BatchHeader, bytes]]:
    """Every whole batch in the first ``end`` bytes as ``(file position, header, buffer)``, the
    header's ``position`` pointing into ``buffer``. Stops at a torn tail (a batch running past
    ``end``); raises :class:`InvalidBatchError` at a bad header."""
    position = 0
    while end - position >= HEADER_SIZE:
        chunk = os.pread(fd, min(CHUNK, end - position), position)
        consumed = 0
        for header in iter_headers(chunk):
            yield position + header.position, header, chunk
            consumed = header.position + header.size
        if consumed == 0:
            header = read_header(chunk)
            if position + header.size > end:
                return
            chunk = os.pread(fd, header.size, position)
            yield position, header, chunk
            consumed = header.size
        position += consumed
