"""Opening a partition directory: finish or undo what a crash interrupted, then load segments.

What a restart finds and does, in order (Kafka's ``LogLoader``):

1. ``*.tmp`` (a small file being replaced), ``*.deleted`` (a segment being deleted) and
   ``*.cleaned`` (a segment the cleaner was still writing): removed.
2. ``<base>.log.swap`` with its indexes: a cleaned segment that was complete but not yet in
   place. It is recovered (CRC scan), every segment whose base offset lies in the swap's offset
   range is deleted, and the swap files are renamed to their plain names.
3. Index files without their ``.log`` (or ``.log.swap``): removed.
4. Each ``.log`` is opened; a missing or damaged index is rebuilt from its log (the
   ``.txnindex`` is only flagged: the log rebuilds it while replaying producer state).
5. Unless ``clean-shutdown`` was present (written by a clean close), every segment from the one
   holding the ``recovery-point`` on is recovered: batches validated, a torn or corrupt tail
   truncated, indexes rebuilt (the ``.txnindex`` by the log, from the control batches), the
   result fsynced. The recovery point is the base offset of the oldest segment that may hold
   writes not yet fsynced (:mod:`sluice.broker.log.log` moves it when a rolled segment's
   background flush is done); without the file every segment is recovered. A segment whose tail
   had to be cut ends the log: the segments after it, written later and never fsynced either,
   are deleted (as Kafka's ``LogLoader.recoverLog`` does), since their offsets would follow a
   gap.

After a clean shutdown the last segment is trusted without a CRC scan (as Kafka does), but its
batch headers after the last index entry are walked to find the log end: bytes that do not end
on a batch boundary there (a tail torn after the close) still trigger the recovery.

The marker is removed before the log is used, so a crash after opening is never taken for a
clean shutdown. The log then loads its leader epochs (:func:`.epochs.load_leader_epochs`): the
checkpoint is cut to what the recovered log holds, or rebuilt from the batches when missing.
"""

from __future__ import annotations

import bisect
import logging
from pathlib import Path

from sluice.broker.log.config import LogConfig
from sluice.broker.log.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TMP_SUFFIX,
    TXN_INDEX_SUFFIX,
    fsync_dir,
    parse_base_offset,
    read_checkpoint,
    segment_name,
)
from sluice.broker.log.segment import LogSegment

__all__ = ["CLEAN_SHUTDOWN", "RECOVERY_POINT", "load_segments"]

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN = "clean-shutdown"
RECOVERY_POINT = "recovery-point"


def load_segments(directory: Path, config: LogConfig) -> list[LogSegment]:
    """The segments of ``directory`` (created if missing), recovered as needed, in order."""
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / CLEAN_SHUTDOWN
    clean = marker.exists()
    for path in directory.iterdir():
        if path.name.endswith((TMP_SUFFIX, DELETED_SUFFIX, CLEANED_SUFFIX)):
            path.unlink()
    for base in _bases(directory, LOG_SUFFIX + SWAP_SUFFIX):
        _complete_swap(directory, base, config)
    for path in directory.glob(f"*{SWAP_SUFFIX}"):  # indexes renamed before their log was
        path.unlink()
    bases = set(_bases(directory, LOG_SUFFIX))
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        for base in _bases(directory, suffix):
            if base not in bases:
                (directory / segment_name(base, suffix)).unlink()
    ordered = sorted(bases)
    first = len(ordered) if clean else _first_unflushed(directory, ordered)
    segments = [LogSegment.open(directory, base, config) for base in ordered[:first]]
    if first < len(ordered):
        log.info(
            "%s: unclean shutdown, recovering %d segment(s) from offset %d",
            directory,
            len(ordered) - first,
            ordered[first],
        )
    for index in range(first, len(ordered)):
        path = directory / segment_name(ordered[index], LOG_SUFFIX)
        size = path.stat().st_size
        segment = LogSegment.open(directory, ordered[index], config, recover=True)
        segments.append(segment)
        if segment.size < size and index + 1 < len(ordered):
            log.warning(
                "%s: segment %d was cut short, deleting the %d segment(s) after it",
                directory,
                ordered[index],
                len(ordered) - index - 1,
            )
            for base in ordered[index + 1 :]:
                LogSegment(directory, base, config, "").delete()
            fsync_dir(directory)
            break
    if clean:
        marker.unlink()
        fsync_dir(directory)
    return segments


def _first_unflushed(directory: Path, bases: list[int]) -> int:
    """Index in ``bases`` of the first segment to recover: the one holding the recovery point."""
    saved = read_checkpoint(directory / RECOVERY_POINT)
    if not saved:
        return 0
    return max(bisect.bisect_right(bases, saved[0]) - 1, 0)


def _bases(directory: Path, suffix: str) -> list[int]:
    found = []
    for path in directory.iterdir():
        base = parse_base_offset(path.name)
        if base is not None and path.name == segment_name(base, suffix):
            found.append(base)
    return sorted(found)


def _complete_swap(directory: Path, base: int, config: LogConfig) -> None:
    swap = LogSegment.open(directory, base, config, suffix=SWAP_SUFFIX, recover=True)
    last = max(base, swap.next_offset - 1)
    for old in _bases(directory, LOG_SUFFIX):
        if base <= old <= last:
            log.info("%s: replacing segment %d by its cleaned swap", directory, old)
            LogSegment(directory, old, config, "").delete()
    swap.change_suffix("")
    swap.close()
    fsync_dir(directory)
