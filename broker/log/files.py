"""File names of a partition directory and crash-safe writes of its small files.

A partition directory (``<topic>-<partition>/``) holds, as Kafka's does::

    00000000000000000000.log         segment: record batches as the producers sent them
    00000000000000000000.index       its sparse offset index
    00000000000000000000.timeindex   its sparse time index
    00000000000000000000.txnindex    its aborted-transaction index
    00000000000000001234.snapshot    idempotent-producer state at offset 1234
    log-start-offset                 the log start offset after DeleteRecords (text)
    leader-epoch                     the partition's leader epoch (text, see epochs)
    leader-epoch-checkpoint          start offset of each leader epoch (Kafka's text format)
    cleaner-offset-checkpoint        where the dirty part of a compacted log begins (text)
    recovery-point                   base offset of the oldest segment that may not be on disk
    clean-shutdown                   present only while the log is closed cleanly

Names carry the base offset on 20 digits so that they sort like the offsets. A segment being
rewritten by the cleaner carries a ``.cleaned`` then a ``.swap`` suffix; a segment being deleted
a ``.deleted`` one (see :mod:`sluice.broker.log.loader` for what a restart makes of them).

Small files are replaced atomically: written to ``<name>.tmp``, fsynced, renamed over the old
one, and the directory fsynced; a crash leaves either the old or the new content.

>>> segment_name(1234, LOG_SUFFIX)
'00000000000000001234.log'
>>> parse_base_offset("00000000000000001234.log"), parse_base_offset("notes.txt")
(1234, None)
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = [
    "CLEANED_SUFFIX",
    "DELETED_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "SWAP_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "fsync_dir",
    "parse_base_offset",
    "read_checkpoint",
    "segment_name",
    "write_atomically",
    "write_checkpoint",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
TMP_SUFFIX = ".tmp"


def segment_name(offset: int, suffix: str) -> str:
    """The file name of the segment (or snapshot) file for ``offset``."""
    return f"{offset:020d}{suffix}"


def parse_base_offset(name: str) -> int | None:
    """The offset a file name starts with, or None if it does not start with 20 digits."""
    head = name[:20]
    if len(head) == 20 and head.isdigit() and name[20:21] == ".":
        return int(head)
    return None


def fsync_dir(directory: Path) -> None:
    """Make renames and creations in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content."""
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    fsync_dir(path.parent)


def write_checkpoint(path: Path, values: list[int]) -> None:
    """Atomically write integers, one per line."""
    write_atomically(path, "".join(f"{v}\n" for v in values).encode())


def read_checkpoint(path: Path) -> list[int] | None:
    """The integers of a checkpoint file, or None if it is missing or unreadable."""
    try:
        return [int(line) for line in path.read_text().split()]
    except (OSError, ValueError):
        return None


def format_kafka_checkpoint(version: int, entries: Sequence[str]) -> bytes:
    """Kafka's ``CheckpointFile`` format: a version line, a count line, one line per entry.

    >>> format_kafka_checkpoint(0, ["3 120"])
    b'0\\n1\\n3 120\\n'
    """
    lines = [str(version), str(len(entries)), *entries]
    return "".join(f"{line}\n" for line in lines).encode("utf-8")


def kafka_checkpoint_entries(
    text: str, version: int, bad: Callable[[int, str], Exception]
) -> list[tuple[int, str]]:
    """The entry lines of a ``CheckpointFile``'s ``text``, with their line numbers; raises
    ``bad(line number, what is wrong)`` when the version or the count is not right.

    >>> kafka_checkpoint_entries("0\\n1\\n3 120\\n", 0, ValueError)
    [(3, '3 120')]
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != str(version):
        found = repr(lines[0]) if lines else "an empty file"
        raise bad(1, f"expected version {version}, found {found}")
    try:
        count = int(lines[1]) if len(lines) > 1 else -1
    except ValueError:
        count = -1
    if count < 0:
        found = lines[1] if len(lines) > 1 else ""
        raise bad(2, f"expected the number of entries, found {found!r}")
    if len(lines) - 2 != count:
        raise bad(2, f"{count} entries announced, {len(lines) - 2} found")
    return list(enumerate(lines[2:], start=3))
