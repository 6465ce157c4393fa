"""Transactions and producer state of a partition log, mixed into :class:`~.log.Log`.

A transactional producer's data batches open a transaction on the partition
(:mod:`.producer_state` keeps its first offset); :meth:`Log.append_marker` writes the commit or
abort marker that closes it, an abort also recording the transaction in the segment's
aborted-transaction index (:mod:`.txn_index`). :attr:`Log.last_stable_offset` stops at the oldest
open transaction; a read_committed Fetch reads up to it (``read(..., upper_bound=lso)``) and
returns :meth:`Log.aborted_transactions` of the range read. Opening a log loads the newest
producer snapshot and replays the batch headers after it, rebuilding the aborted-transaction
indexes flagged stale from their control batches (:meth:`LogTransactions._load_producer_state`).

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

Thread-safety: none, as the log's. Time is never read here: callers pass ``now_ms``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from sluice.broker.log.markers import decode_marker, encode_marker
from sluice.broker.log.producer_state import ProducerState, ProducerStateManager
from sluice.broker.log.segment import LogSegment
from sluice.broker.log.txn_index import AbortedTxn
from sluice.broker.records.batch import BatchHeader, InvalidBatchError
from sluice.errors import StorageError

if TYPE_CHECKING:
    from sluice.broker.log.log import AppendResult

__all__ = ["LogTransactions"]

log = logging.getLogger(__name__)


class _Log(Protocol):
    directory: Path
    _segments: list[LogSegment]
    _log_start_offset: int
    _producers: ProducerStateManager

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int: ...

    def _floor(self, offset: int) -> int: ...

    def _replay_marker(self, segment: LogSegment, header: BatchHeader) -> None: ...

    def collect_aborted_transactions(
        self, start_offset: int, end_offset: int
    ) -> list[AbortedTxn]: ...

    def append(self, records: bytearray | memoryview, *, now_ms: int) -> AppendResult: ...


class LogTransactions:
    """The producer-state and transaction half of :class:`~.log.Log`."""

    def _load_producer_state(self: _Log) -> None:
        """Load the newest producer snapshot and replay the batch headers after it. Segments
        whose aborted-transaction index is flagged stale (missing, damaged, or the segment was
        recovered after a crash) get it rebuilt from their control batches: the replay then
        starts at the newest snapshot at or below the first of them (or the log start)."""
        end = self.log_end_offset  # finds (and recovers) a torn tail first
        while True:
            stale = [s for s in self._segments if s.txn_index_stale]
            target = stale[0].base_offset if stale else end
            loaded = self._producers.load(end, at_most=target)
            replay_from = max(loaded, self._segments[0].base_offset)
            if stale:
                log.info(
                    "%s: rebuilding %d aborted-transaction index(es) from offset %d",
                    self.directory,
                    len(stale),
                    replay_from,
                )
            for segment in stale:
                segment.txn_index.clear()
            for segment in self._segments[self._floor(replay_from) :]:
                for header in segment.headers(replay_from):
                    if header.is_control and segment.txn_index_stale:
                        self._replay_marker(segment, header)
                    self._producers.update(header)
            if all(s in stale for s in self._segments if s.txn_index_stale):
                break  # else a segment was recovered during the replay: once more
        for segment in stale:
            try:
                segment.txn_index.flush()
            except OSError as exc:
                raise StorageError(f"cannot write {segment.txn_index.path}: {exc}") from exc
            segment.txn_index_stale = False

    def _replay_marker(self: _Log, segment: LogSegment, header: BatchHeader) -> None:
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
            aborted = self._producers.completed_txn(header.producer_id, header.base_offset)
            if aborted is not None:
                segment.txn_index.append(aborted)

    # -- producers and transactions ------------------------------------------------------------

    def producer_state(self: _Log, producer_id: int) -> ProducerState | None:
        """What the log knows of an idempotent producer (None: nothing)."""
        return self._producers.producers.get(producer_id)

    def producer_states(self: _Log) -> Mapping[int, ProducerState]:
        """Every producer id the log knows, with its state (read-only view)."""
        return MappingProxyType(self._producers.producers)

    def first_unstable_offset(self: _Log) -> int | None:
        """First offset of the oldest open transaction (None: none open)."""
        return self._producers.first_unstable_offset()

    @property
    def last_stable_offset(self: _Log) -> int:
        """The end of what read_committed consumers may read: the first offset of the oldest
        open transaction, or the high watermark when none is open (never below the log start)."""
        unstable = self._producers.first_unstable_offset()
        if unstable is None:
            return self.high_watermark
        return max(min(unstable, self.high_watermark), self._log_start_offset)

    def open_transactions(self: _Log) -> dict[int, int]:
        """Producer id → first offset of its open transaction on this partition."""
        return self._producers.open_transactions()

    def aborted_transactions(
        self: _Log, start_offset: int, end_offset: int
    ) -> list[tuple[int, int]]:
        """``(producer_id, first_offset)`` of every aborted transaction overlapping
        ``[start_offset, end_offset)``: what a read_committed Fetch of that range returns so
        that the consumer drops the aborted records."""
        return [
            (t.producer_id, t.first_offset)
            for t in self.collect_aborted_transactions(start_offset, end_offset)
        ]

    def collect_aborted_transactions(
        self: _Log, start_offset: int, end_offset: int
    ) -> list[AbortedTxn]:
        """The aborted-transaction index entries overlapping ``[start_offset, end_offset)``
        (last offset >= start, first offset < end), in marker order; searched from the segment
        holding ``start_offset`` on, as Kafka's ``collectAbortedTransactions``."""
        found: list[AbortedTxn] = []
        if start_offset >= end_offset:
            return found
        for segment in self._segments[self._floor(start_offset) :]:
            entries, complete = segment.txn_index.collect(start_offset, end_offset)
            found += entries
            if complete:
                break
        return found

    def append_marker(
        self: _Log,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
    ) -> int:
        """Write a commit or abort marker (a control batch, see :mod:`.markers`) ending the
        producer's open transaction on this partition; returns the marker's offset.

        An abort records the transaction in the aborted-transaction index of the segment holding
        the marker. A marker for a producer without an open transaction here is written too
        (a coordinator retry) but records nothing. Raises
        :class:`~sluice.broker.log.errors.InvalidProducerEpochError` when ``producer_epoch`` is
        older than the producer's, :class:`~sluice.errors.StorageError` when the disk fails.
        """
        marker = encode_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=now_ms,
        )
        return self.append(bytearray(marker), now_ms=now_ms).base_offset
