"""Leader epochs of a partition (KIP-101/279/320): the epoch it is led in, and its log's history
of epochs.

Every election of a partition leader starts a new *leader epoch*. The leader stamps it into each
batch it appends (``partition_leader_epoch``, outside the CRC), and every replica keeps the start
offset of each epoch in its log (:class:`LeaderEpochFileCache`, Kafka's class of that name). From
that history :meth:`LeaderEpochFileCache.end_offset_for` answers OffsetForLeaderEpoch: where the
log of an epoch ends, which is how a follower (KIP-101/279) or a consumer (KIP-320) finds the
point where its log diverges from the leader's.

On-disk format, in each partition directory::

    leader-epoch-checkpoint   Kafka's LeaderEpochCheckpointFile, text:
        0                       version
        2                       number of entries
        0 0                     "epoch start_offset", both increasing, one entry a line
        3 1500
    leader-epoch              Sluice's own: the partition's current leader epoch, one integer

Kafka keeps a partition's leader epoch in ZooKeeper's partition state
(``/brokers/topics/<t>/partitions/<p>/state``, ``"leader_epoch"``); a single node keeps it in
``leader-epoch``, beside ``partition.metadata``. A partition starts in epoch 0; a directory without
the file (written by a Sluice that did not stamp epochs) is in epoch 0 and gets the file at open.

Both files are replaced atomically (:func:`~.files.write_atomically`: temporary file, fsync,
rename, directory fsync), so a crash leaves the old or the new content. The checkpoint is written
*before* the batch that opens a new epoch is appended (as Kafka's ``UnifiedLog.append``), so after a
crash it may name epochs starting past the log end: :func:`load_leader_epochs` truncates them. A
missing checkpoint is rebuilt from the batches' ``partition_leader_epoch`` (batches stamped -1,
by an older Sluice, add nothing). A checkpoint or epoch file that does not parse is refused with
its path and line (:class:`LeaderEpochFileError`), as Kafka refuses a malformed checkpoint:
removing a damaged checkpoint makes the next start rebuild it.

>>> cache = LeaderEpochFileCache(None)
>>> cache.assign(0, 0), cache.assign(0, 5), cache.assign(2, 10), cache.assign(4, 30)
(True, False, True, True)
>>> cache.end_offset_for(2, log_end_offset=42), cache.end_offset_for(3, log_end_offset=42)
((2, 30), (2, 30))
>>> cache.end_offset_for(4, log_end_offset=42), cache.end_offset_for(7, log_end_offset=42)
((4, 42), (-1, -1))
>>> format_checkpoint(cache.entries).decode()
'0\\n3\\n0 0\\n2 10\\n4 30\\n'

Thread-safety: none; a cache belongs to one :class:`~.log.Log`, driven from the broker's loop.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sluice.broker.log.files import (
    format_kafka_checkpoint,
    kafka_checkpoint_entries,
    write_atomically,
)
from sluice.errors import StorageError

if TYPE_CHECKING:
    from sluice.broker.log.segment import LogSegment

__all__ = [
    "FENCED_LEADER_EPOCH",
    "LEADER_EPOCH",
    "LEADER_EPOCH_CHECKPOINT",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "UNKNOWN_LEADER_EPOCH",
    "EpochEntry",
    "LeaderEpochFileCache",
    "LeaderEpochFileError",
    "check_current_leader_epoch",
    "format_checkpoint",
    "load_leader_epochs",
    "parse_checkpoint",
    "read_leader_epoch",
    "write_leader_epoch",
]

log = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
LEADER_EPOCH = "leader-epoch"
VERSION = 0

UNDEFINED_EPOCH = -1
"""No epoch: what a batch written without one carries, and a request's "do not check"."""
UNDEFINED_EPOCH_OFFSET = -1
"""No end offset: the answer for an epoch the log does not know."""

FENCED_LEADER_EPOCH = 74
"""Kafka's error code for a request naming an older leader epoch than the partition's."""
UNKNOWN_LEADER_EPOCH = 75
"""Kafka's error code for a request naming a newer leader epoch than the partition's."""


class LeaderEpochFileError(StorageError):
    """A ``leader-epoch-checkpoint`` or ``leader-epoch`` file that cannot be read as written."""


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """An epoch and the offset of the first batch appended in it."""

    epoch: int
    start_offset: int


def check_current_leader_epoch(current_leader_epoch: int, leader_epoch: int) -> int:
    """Kafka's check of a request's ``current_leader_epoch`` (KIP-320) against the partition's
    ``leader_epoch``: 0 when they agree or the request sent -1 (no check), FENCED_LEADER_EPOCH
    (74) when the request's is older (its sender has stale metadata), UNKNOWN_LEADER_EPOCH (75)
    when it is newer (this broker has not learnt of the election yet).

    >>> check_current_leader_epoch(-1, 3), check_current_leader_epoch(3, 3)
    (0, 0)
    >>> check_current_leader_epoch(2, 3), check_current_leader_epoch(4, 3)
    (74, 75)
    """
    if current_leader_epoch in (UNDEFINED_EPOCH, leader_epoch):
        return 0
    return FENCED_LEADER_EPOCH if current_leader_epoch < leader_epoch else UNKNOWN_LEADER_EPOCH


def format_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    """The bytes of a ``leader-epoch-checkpoint`` holding ``entries`` (Kafka's format)."""
    return format_kafka_checkpoint(VERSION, [f"{e.epoch} {e.start_offset}" for e in entries])


def parse_checkpoint(text: str, path: Path) -> list[EpochEntry]:
    """The entries of a checkpoint's ``text``; :class:`LeaderEpochFileError` naming ``path`` and
    the line when it is not Kafka's format (version 0, a count, that many ``epoch offset``
    lines with both numbers increasing)."""

    def bad(number: int, what: str) -> LeaderEpochFileError:
        return LeaderEpochFileError(
            f"{path}: line {number}: {what}; remove the file to rebuild it from the log's batches"
        )

    entries: list[EpochEntry] = []
    for number, line in kafka_checkpoint_entries(text, VERSION, bad):
        fields = line.split()
        try:
            epoch, start = (int(f) for f in fields) if len(fields) == 2 else (-1, -1)
        except ValueError:
            epoch, start = -1, -1
        if epoch < 0 or start < 0:
            raise bad(number, f"expected 'epoch start_offset', found {line!r}")
        if entries and (epoch <= entries[-1].epoch or start < entries[-1].start_offset):
            previous = f"{entries[-1].epoch} {entries[-1].start_offset}"
            raise bad(
                number,
                f"entry {line!r} does not follow {previous!r} (epochs increase, start offsets "
                "do not decrease)",
            )
        entries.append(EpochEntry(epoch, start))
    return entries


class LeaderEpochFileCache:
    """The start offset of each leader epoch in a log (Kafka's ``LeaderEpochFileCache``), kept
    in ``leader-epoch-checkpoint`` (``path``; None: in memory only).

    Entries are ordered by epoch, and their start offsets never decrease. Every change is
    written to the file before the method returns; a write that fails raises
    :class:`~sluice.errors.StorageError` and leaves the cache as it was on disk.
    """

    def __init__(self, path: Path | None, entries: Iterable[EpochEntry] = ()) -> None:
        self.path = path
        self._entries = list(entries)
        self._epochs = [e.epoch for e in self._entries]

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        """Every entry, oldest epoch first."""
        return tuple(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        """The newest epoch the log knows (None: none)."""
        return self._epochs[-1] if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset`` (a leader's first append in it, or
        its election at the log end); returns whether the cache changed.

        Nothing changes when ``epoch`` is already the latest and starts at or before
        ``start_offset``. Otherwise entries of epochs at or above ``epoch``, or starting at or
        after ``start_offset``, are removed first (Kafka's rule: the history stays monotonic).

        >>> cache = LeaderEpochFileCache(None, [EpochEntry(0, 0), EpochEntry(1, 10)])
        >>> cache.assign(1, 12), cache.assign(1, 8), cache.entries
        (False, True, (EpochEntry(epoch=0, start_offset=0), EpochEntry(epoch=1, start_offset=8)))
        >>> cache.assign(3, 5), cache.entries
        (True, (EpochEntry(epoch=0, start_offset=0), EpochEntry(epoch=3, start_offset=5)))
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry: epoch {epoch} at {start_offset}")
        latest = self.latest_entry
        if latest is not None and latest.epoch == epoch and latest.start_offset <= start_offset:
            return False
        kept = list(self._entries)
        while kept and (kept[-1].epoch >= epoch or kept[-1].start_offset >= start_offset):
            kept.pop()
        removed = len(self._entries) - len(kept)
        if removed > 1 or (removed == 1 and self._entries[-1].start_offset != start_offset):
            log.warning(
                "%s: epoch %d at offset %d replaces %s",
                self.path,
                epoch,
                start_offset,
                self._entries[len(kept) :],
            )
        kept.append(EpochEntry(epoch, start_offset))
        self._replace(kept)
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end offset)`` answering OffsetForLeaderEpoch for ``epoch`` (Kafka's
        ``endOffsetFor``):

        * ``epoch`` is the latest: it and the log end offset;
        * an older epoch the log knows, or one between two it knows: the largest known epoch at
          or below it, and the start offset of the next known epoch (where its log ends);
        * older than every known epoch: ``epoch`` itself and the start offset of the first
          known one (the log before it is gone);
        * -1, newer than every known epoch, or none known: ``(-1, -1)``.

        >>> cache = LeaderEpochFileCache(None, [EpochEntry(1, 5), EpochEntry(3, 9)])
        >>> [cache.end_offset_for(e, 20) for e in (0, 1, 2, 3, 4, -1)]
        [(0, 5), (1, 9), (1, 9), (3, 20), (-1, -1), (-1, -1)]
        """
        if epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._epochs and self._epochs[-1] == epoch:
            return epoch, log_end_offset
        higher = bisect.bisect_right(self._epochs, epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        end = self._entries[higher].start_offset
        if higher == 0:
            return epoch, end
        return self._entries[higher - 1].epoch, end

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was appended in (None: before every known epoch).

        >>> LeaderEpochFileCache(None, [EpochEntry(1, 5), EpochEntry(3, 9)]).epoch_for_offset(8)
        1
        """
        found: int | None = None
        for entry in self._entries:
            if entry.start_offset > offset:
                break
            found = entry.epoch
        return found

    def truncate_from_end(self, end_offset: int) -> bool:
        """Forget the epochs starting at or after ``end_offset`` (the log was cut there);
        returns whether the cache changed."""
        kept = [e for e in self._entries if e.start_offset < end_offset]
        if end_offset < 0 or len(kept) == len(self._entries):
            return False
        self._replace(kept)
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset`` (retention, DeleteRecords): the epochs that
        started at or before it collapse into the last of them, which now starts there; returns
        whether the cache changed.

        >>> entries = [EpochEntry(0, 0), EpochEntry(1, 5), EpochEntry(2, 9)]
        >>> cache = LeaderEpochFileCache(None, entries)
        >>> cache.truncate_from_start(7), cache.entries
        (True, (EpochEntry(epoch=1, start_offset=7), EpochEntry(epoch=2, start_offset=9)))
        """
        removed = [e for e in self._entries if e.start_offset <= start_offset]
        if not removed or removed == [EpochEntry(removed[-1].epoch, start_offset)]:
            return False
        kept = [EpochEntry(removed[-1].epoch, start_offset), *self._entries[len(removed) :]]
        self._replace(kept)
        return True

    def _replace(self, entries: Sequence[EpochEntry]) -> None:
        if self.path is not None:
            try:
                write_atomically(self.path, format_checkpoint(entries))
            except OSError as exc:
                raise StorageError(f"cannot write {self.path}: {exc}") from exc
        self._entries = list(entries)
        self._epochs = [e.epoch for e in entries]

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.path}, {self._entries})"


def load_leader_epochs(
    directory: Path,
    segments: Sequence[LogSegment],
    *,
    log_start_offset: int,
    log_end_offset: int,
) -> LeaderEpochFileCache:
    """The cache of the log in ``directory``: read from its checkpoint, or rebuilt from the
    batches of ``segments`` when there is none; then cut to ``[log_start_offset,
    log_end_offset)`` (what a crash or a retention left beyond the log)."""
    path = directory / LEADER_EPOCH_CHECKPOINT
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        text = None
    except (OSError, UnicodeDecodeError) as exc:
        raise LeaderEpochFileError(f"{path}: cannot read: {exc}") from exc
    if text is not None:
        cache = LeaderEpochFileCache(path, parse_checkpoint(text, path))
    else:
        cache = LeaderEpochFileCache(path)
        rebuilt = _epochs_of_batches(segments)
        if rebuilt:
            log.info("%s: rebuilding %s from the batches", directory, LEADER_EPOCH_CHECKPOINT)
            cache._replace(rebuilt)
    cache.truncate_from_end(log_end_offset)
    cache.truncate_from_start(log_start_offset)
    return cache


def _epochs_of_batches(segments: Sequence[LogSegment]) -> list[EpochEntry]:
    """The first offset of each epoch stamped in the batches (as the cache's ``assign`` would
    have recorded them)."""
    scratch = LeaderEpochFileCache(None)
    for segment in segments:
        for header in segment.headers(segment.base_offset):
            if header.partition_leader_epoch >= 0:
                scratch.assign(header.partition_leader_epoch, header.base_offset)
    return list(scratch.entries)


def read_leader_epoch(directory: Path) -> int | None:
    """The partition's leader epoch recorded in ``directory`` (None: no ``leader-epoch``)."""
    path = directory / LEADER_EPOCH
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise LeaderEpochFileError(f"{path}: cannot read: {exc}") from exc
    stripped = text.strip()
    if not stripped.isdigit():
        raise LeaderEpochFileError(
            f"{path}: line 1: expected the partition's leader epoch (an integer >= 0), "
            f"found {text!r}"
        )
    return int(stripped)


def write_leader_epoch(directory: Path, epoch: int) -> None:
    """Record the partition's leader epoch in ``directory`` (atomically)."""
    path = directory / LEADER_EPOCH
    try:
        write_atomically(path, f"{epoch}\n".encode("ascii"))
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc
