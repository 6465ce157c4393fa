"""Transactions on a partition log: rebuilding producer state at open, and the aborted
transactions of a range.

A transactional producer's data batches open a transaction on the partition
(:mod:`.producer_state` keeps its first offset); :meth:`~.log.Log.append_marker` writes the
commit or abort marker that closes it, an abort also recording the transaction in the segment's
aborted-transaction index (:mod:`.txn_index`). :attr:`~.log.Log.last_stable_offset` stops at the
oldest open transaction; a read_committed Fetch reads up to it (``read(..., upper_bound=lso)``)
and returns :meth:`~.log.Log.aborted_transactions` of the range read.

The :class:`~.log.Log` holds the segments and a
:class:`~.producer_state.ProducerStateManager`; the two functions here work on exactly those
(as Kafka's ``UnifiedLog.rebuildProducerState`` and ``LocalLog.collectAbortedTransactions``):
:func:`rebuild_producer_state` loads the newest producer snapshot and replays the batch headers
after it, rebuilding the aborted-transaction indexes flagged stale from their control batches;
:func:`collect_aborted_transactions` searches the indexes.

>>> import tempfile, pathlib
>>> from sluice.broker.log.log import Log
>>> from sluice.broker.records.codec import Record, encode_batch
>>> log = Log.open(pathlib.Path(tempfile.mkdtemp()) / "payments-0", {})
>>> def txn(value, seq):
...     return bytearray(encode_batch(base_offset=0, records=[Record(0, 0, b"k", value)],
...         compression=0, base_timestamp=1_000, max_timestamp=1_000, producer_id=7,
...         producer_epoch=0, base_sequence=seq, is_transactional=True))
>>> log.append(txn(b"x", 0), now_ms=2_000).base_offset, log.last_stable_offset
(0, 0)
>>> log.append_marker(producer_id=7, producer_epoch=0, commit=False, coordinator_epoch=0,
...                   now_ms=2_000)
1
>>> log.last_stable_offset, log.aborted_transactions(0, 2), log.open_transactions()
(2, [(7, 0)], {})
>>> log.close()

Thread-safety: none, as the log's. Time is never read here.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from sluice.broker.log.markers import decode_marker
from sluice.broker.log.producer_state import ProducerStateManager
from sluice.broker.log.segment import LogSegment
from sluice.broker.log.txn_index import AbortedTxn
from sluice.broker.records.batch import BatchHeader, InvalidBatchError
from sluice.errors import StorageError

__all__ = ["collect_aborted_transactions", "rebuild_producer_state"]

log = logging.getLogger(__name__)


def rebuild_producer_state(
    directory: Path, segments: Sequence[LogSegment], producers: ProducerStateManager, end: int
) -> None:
    """Load the newest producer snapshot into ``producers`` and replay the batch headers after
    it, up to ``end`` (the log end offset). Segments whose aborted-transaction index is flagged
    stale (missing, damaged, or the segment was recovered after a crash) get it rebuilt from
    their control batches: the replay then starts at the newest snapshot at or below the first
    of them (or the log start)."""
    while True:
        stale = [s for s in segments if s.txn_index_stale]
        target = stale[0].base_offset if stale else end
        loaded = producers.load(end, at_most=target)
        replay_from = max(loaded, segments[0].base_offset)
        if stale:
            log.info(
                "%s: rebuilding %d aborted-transaction index(es) from offset %d",
                directory,
                len(stale),
                replay_from,
            )
        for segment in stale:
            segment.txn_index.clear()
        bases = [s.base_offset for s in segments]
        first = max(bisect.bisect_right(bases, replay_from) - 1, 0)
        for segment in segments[first:]:
            for header in segment.headers(replay_from):
                if header.is_control and segment.txn_index_stale:
                    _replay_marker(segment, header, producers)
                producers.update(header)
        if all(s in stale for s in segments if s.txn_index_stale):
            break  # else a segment was recovered during the replay: once more
    for segment in stale:
        try:
            segment.txn_index.flush()
        except OSError as exc:
            raise StorageError(f"cannot write {segment.txn_index.path}: {exc}") from exc
        segment.txn_index_stale = False


def _replay_marker(
    segment: LogSegment, header: BatchHeader, producers: ProducerStateManager
) -> None:
    data = segment.read_batch(header.position, header.size)
    try:
        marker = decode_marker(data, dataclasses.replace(header, position=0))
    except InvalidBatchError as exc:
        log.warning(
            "%s: control batch at offset %d skipped: %s",
            segment.log_path,
            header.base_offset,
            exc.reason,
        )
        return
    if not marker.commit:
        aborted = producers.completed_txn(header.producer_id, header.base_offset)
        if aborted is not None:
            segment.txn_index.append(aborted)


def collect_aborted_transactions(
    segments: Sequence[LogSegment], start_offset: int, end_offset: int
) -> list[AbortedTxn]:
    """The aborted-transaction index entries overlapping ``[start_offset, end_offset)``
    (last offset >= start, first offset < end), in marker order, as Kafka's
    ``collectAbortedTransactions``; ``segments`` start with the one holding ``start_offset``."""
    found: list[AbortedTxn] = []
    if start_offset >= end_offset:
        return found
    for segment in segments:
        entries, complete = segment.txn_index.collect(start_offset, end_offset)
        found += entries
        if complete:
            break
    return found
