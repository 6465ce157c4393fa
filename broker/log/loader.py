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
5. Unless ``clean-shutdown`` was present (written by a clean close), the last segment, the only
   one written since its last fsync (a roll fsyncs the old segment before creating the new one),
   is recovered: batches validated, a torn or corrupt tail truncated, indexes rebuilt (its
   ``.txnindex`` by the log, from the control batches).

After a clean shutdown the last segment is trusted without a CRC scan (as Kafka does), but its
batch headers after the last index entry are walked to find the log end: bytes that do not end
on a batch boundary there (a tail torn after the close) still trigger the recovery.

The marker is removed before the log is used, so a crash after opening is never taken for a
clean shutdown.
"""

from __future__ import annotations

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
    segment_name,
)
from sluice.broker.log.segment import LogSegment

__all__ = ["CLEAN_SHUTDOWN", "load_segments"]

log = logging.getLogger(__name__)

CLEAN_SHUTDOWN = "clean-shutdown"


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
    if ordered and not clean:
        log.info("%s: unclean shutdown, recovering segment %d", directory, ordered[-1])
    segments = [
        LogSegment.open(directory, base, config, recover=not clean and base == ordered[-1])
        for base in ordered
    ]
    if clean:
        marker.unlink()
        fsync_dir(directory)
    return segments


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
