"""Cutting a partition log back to an offset (a follower's divergent tail, KIP-101/279).

:meth:`~.log.Log.truncate_to` removes every batch whose offsets reach the target (a batch is
never split: the log may end below the target when it falls inside a batch, as Kafka's
``LogSegment.truncateTo``): the segments after it are deleted, the one holding it is cut at the
batch boundary and its indexes rebuilt (:meth:`.segment.LogSegment.truncate_to`), then the log
cuts its leader-epoch cache, rebuilds its producer state and aborted-transaction index from the
batches kept (:func:`.transactions.rebuild_producer_state`, which also deletes producer
snapshots past the new end) and moves the recovery point to the new active segment. When the
batch holding the log start offset goes (a DeleteRecords inside it), the log starts over empty
at its log start offset, as an open finding the log end below the log start does.

Crash behaviour: before anything is cut, the target offset is written (atomically, fsynced) to
``truncate-to`` in the partition directory, and that file is removed only once every step is
done. A kill -9 before it is written leaves the old log; after it, the next
:meth:`~.log.Log.open` finds it and finishes the truncation (:func:`pending`, :func:`cut` on the
loaded segments, the rest of the open rebuilding the epoch cache and producer state to the new
end), so the log that loads is the truncated one. Every step is idempotent: the segments after
the target are deleted newest first (a crash keeps a prefix of the log), and cutting a segment
already cut changes nothing. The high watermark and the last stable offset are derived from the
log end and the producer state, so they are clamped with them.

Thread-safety: none, as the log's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sluice.broker.log.files import fsync_dir, read_checkpoint, write_checkpoint
from sluice.broker.log.segment import LogSegment

__all__ = ["TRUNCATE_TO", "begin", "cut", "finish", "pending"]

TRUNCATE_TO = "truncate-to"


def begin(directory: Path, offset: int) -> None:
    """Record that the log in ``directory`` is being cut back to ``offset``."""
    write_checkpoint(directory / TRUNCATE_TO, [offset])


def pending(directory: Path) -> int | None:
    """The target of a truncation a crash interrupted (None: none)."""
    saved = read_checkpoint(directory / TRUNCATE_TO)
    return saved[0] if saved else None


def finish(directory: Path) -> None:
    """The truncation is complete: forget its target."""
    (directory / TRUNCATE_TO).unlink(missing_ok=True)
    fsync_dir(directory)


def cut(directory: Path, segments: Sequence[LogSegment], offset: int) -> list[LogSegment]:
    """Delete the segments whose base offset is above ``offset`` (newest first), cut the last
    one kept before its first batch reaching ``offset`` and flag its aborted-transaction index
    stale (the log rebuilds it); returns the segments kept."""
    kept = list(segments)
    while len(kept) > 1 and kept[-1].base_offset > offset:
        kept.pop().delete()
    if len(kept) < len(segments):
        fsync_dir(directory)
    if kept:
        kept[-1].truncate_to(offset)
        kept[-1].txn_index_stale = True  # entries past the cut may be on disk from before a crash
    return kept
