"""Log compaction (``cleanup.policy=compact``): keep the latest record of every key.

One pass over a log, as Kafka's ``LogCleaner``:

1. The *cleanable* range runs from the log start to the first *uncleanable* offset: the base
   of the active segment, of the first segment holding a record newer than
   ``min.compaction.lag.ms``, or of the segment holding the first unstable offset (an open
   transaction), whichever is lowest. The part from ``cleaner-offset-checkpoint`` (the previous
   pass's end) on is *dirty*. The pass is skipped while dirty bytes are below
   ``min.cleanable.dirty.ratio`` of the cleanable bytes, unless the delete horizon of a kept
   tombstone has passed or the first dirty record is older than ``max.compaction.lag.ms``
   (whose deadline also rolls the active segment: ``LogConfig.max_segment_ms``).
2. A map key → latest offset is built from the dirty segments (records of aborted
   transactions left out, so they never shadow a committed record).
3. The cleanable segments are rewritten in groups (consecutive segments whose sum fits
   ``segment.bytes``) into one segment each. A record is kept if it has a key and no later
   offset for that key is in the map. Offsets never change: batches keep their base offset,
   last offset delta, compression, producer id/epoch/base sequence and transactional flag, and
   are re-encoded only when a record was removed. Records without a key are dropped, and so
   are the records of aborted transactions (as Kafka's ``CleanedTransactionMetadata``: a
   transactional batch is aborted when its producer's transaction, followed from the
   aborted-transaction index, has begun at or before it and its marker has not been passed).
4. Tombstones (null values) follow KIP-534: the first pass that keeps one sets its batch's
   delete horizon (``now + delete.retention.ms``, stored in the base timestamp with attribute
   bit 6); a pass after that horizon removes them.

Kept as Kafka keeps them: a batch left without records stays as an empty batch when it is the
last batch of its producer id (so idempotence survives compaction); other empty batches are
dropped. Control batches (transaction markers) are kept as they are, for ever (Kafka removes a
marker once its transaction holds no more data and ``delete.retention.ms`` has passed; Sluice
does not yet). The cleaned segment carries the aborted-transaction index entries of the
segments it replaces (they stay true: offsets do not change).

Crash safety: a group is written to ``<base>.log.cleaned`` (+ indexes) and fsynced, renamed to
``.swap``, the old segments deleted, then the swap renamed into place; a restart removes
``.cleaned`` leftovers and completes ``.swap`` ones (:mod:`sluice.broker.log.loader`).
Runs on the log's thread; a failed write raises :class:`~sluice.errors.StorageError` and leaves
the log as it was.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from sluice.broker.config import LONG_MAX
from sluice.broker.log.files import (
    CLEANED_SUFFIX,
    SWAP_SUFFIX,
    fsync_dir,
    read_checkpoint,
    write_checkpoint,
)
from sluice.broker.log.segment import INT_MAX, LogSegment
from sluice.broker.log.txn_index import AbortedTxn
from sluice.broker.records.batch import (
    DELETE_HORIZON_BIT,
    BatchHeader,
    InvalidBatchError,
    read_header,
)
from sluice.broker.records.codec import Record, decode_records, encode_batch
from sluice.errors import CorruptRecordError

if TYPE_CHECKING:
    from sluice.broker.log.log import Log

__all__ = ["CHECKPOINT", "clean"]

CHECKPOINT = "cleaner-offset-checkpoint"
"""Two integers: the first dirty offset and the earliest pending delete horizon (-1: none)."""


def clean(log: Log, now_ms: int) -> int:
    """Run one compaction pass over ``log``; returns the number of records removed."""
    config = log.settings
    if not config.compact:
        return 0
    segments = list(log.segments)
    saved = read_checkpoint(log.directory / CHECKPOINT) or [log.log_start_offset, -1]
    first_dirty = min(max(saved[0], log.log_start_offset), log.log_end_offset)
    horizon = saved[1] if len(saved) > 1 else -1
    end = _first_uncleanable(log, segments, first_dirty, now_ms)
    cleanable = [s for s in segments[:-1] if s.base_offset < end]
    if not cleanable:
        return 0
    dirty = [s for s in cleanable if s.next_offset > first_dirty]
    total = sum(s.size for s in cleanable)
    dirty_bytes = sum(s.size for s in dirty)
    if (
        (not total or dirty_bytes / total < config.min_cleanable_dirty_ratio)
        and not (0 <= horizon <= now_ms)
        and not _past_max_lag(dirty, config.max_compaction_lag_ms, now_ms)
    ):
        return 0
    latest: dict[bytes, int] = {}
    if dirty:
        tracker = _AbortedTracker(log.collect_aborted_transactions(dirty[0].base_offset, end))
        for segment in dirty:
            for header, records in _decoded(segment, tracker):
                for record in records:
                    if record.key is not None:
                        latest[record.key] = header.base_offset + record.offset_delta
    producer_ends = {pid: s.last_offset for pid, s in log.producer_states().items()}
    removed, horizons = 0, []
    tracker = _AbortedTracker(log.collect_aborted_transactions(cleanable[0].base_offset, end))
    for group in _groups(cleanable, config.segment_bytes):
        count, group_horizons = _clean_group(
            log, group, latest, producer_ends, tracker=tracker, now_ms=now_ms
        )
        removed += count
        horizons += group_horizons
    write_checkpoint(log.directory / CHECKPOINT, [end, min(horizons, default=-1)])
    return removed


def _past_max_lag(dirty: list[LogSegment], max_lag_ms: int, now_ms: int) -> bool:
    """Whether the first dirty record waited longer than ``max.compaction.lag.ms`` (the
    first batch's timestamp of the first dirty segment, as Kafka's
    ``LogCleanerManager.maxCompactionDelay``)."""
    if not dirty or max_lag_ms >= LONG_MAX:
        return False
    first = dirty[0].rolling_timestamp
    return first >= 0 and now_ms - first > max_lag_ms


def _first_uncleanable(log: Log, segments: list[LogSegment], first_dirty: int, now_ms: int) -> int:
    end = segments[-1].base_offset
    lag = log.settings.min_compaction_lag_ms
    for segment in segments[:-1]:
        if (
            lag > 0
            and segment.next_offset > first_dirty
            and segment.largest_timestamp() > now_ms - lag
        ):
            end = min(end, segment.base_offset)
            break
    unstable = log.first_unstable_offset()
    if unstable is not None:
        end = min(
            end, max((s.base_offset for s in segments if s.base_offset <= unstable), default=0)
        )
    return end


def _groups(segments: list[LogSegment], max_bytes: int) -> list[list[LogSegment]]:
    groups: list[list[LogSegment]] = []
    for segment in segments:
        group = groups[-1] if groups else None
        if (
            group is not None
            and sum(s.size for s in group) + segment.size <= max_bytes
            and segment.next_offset - 1 - group[0].base_offset <= INT_MAX
        ):
            group.append(segment)
        else:
            groups.append([segment])
    return groups


class _AbortedTracker:
    """Follows, batch by batch in offset order, which producers are inside an aborted
    transaction (Kafka's ``CleanedTransactionMetadata``)."""

    def __init__(self, aborted: Sequence[AbortedTxn]) -> None:
        self._pending = sorted(aborted, key=lambda t: t.first_offset, reverse=True)
        self._ongoing: set[int] = set()

    def is_aborted(self, header: BatchHeader) -> bool:
        """Whether the batch (read in offset order) holds aborted data; a control batch ends
        its producer's transaction."""
        while self._pending and self._pending[-1].first_offset <= header.last_offset:
            self._ongoing.add(self._pending.pop().producer_id)
        if header.is_control:
            self._ongoing.discard(header.producer_id)
            return False
        return header.is_transactional and header.producer_id in self._ongoing


def _decoded(
    segment: LogSegment, tracker: _AbortedTracker
) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """The records of each data batch of ``segment`` (control batches and aborted data
    skipped)."""
    try:
        for _, header, buffer in segment.batches():
            if not tracker.is_aborted(header) and not header.is_control:
                yield header, decode_records(buffer, header)
    except InvalidBatchError as exc:
        raise CorruptRecordError(f"{segment.log_path}: {exc.reason}") from exc


def _clean_group(
    log: Log,
    group: list[LogSegment],
    latest: dict[bytes, int],
    producer_ends: dict[int, int],
    *,
    tracker: _AbortedTracker,
    now_ms: int,
) -> tuple[int, list[int]]:
    """Rewrite ``group`` into one segment; returns (records removed, pending delete horizons)."""
    base = group[0].base_offset
    out = LogSegment.create(log.directory, base, log.settings, suffix=CLEANED_SUFFIX)
    removed, horizons, changed = 0, [], len(group) > 1
    try:
        for segment in group:
            for _, header, buffer in segment.batches():
                data = memoryview(buffer)[header.position : header.position + header.size]
                aborted = tracker.is_aborted(header)
                if not header.is_control:
                    kept, count, horizon = _filter(
                        data,
                        header,
                        latest,
                        producer_ends,
                        now_ms=now_ms,
                        delete_retention_ms=log.settings.delete_retention_ms,
                        aborted=aborted,
                    )
                    removed += count
                    changed = changed or kept is not data
                    if horizon >= 0:
                        horizons.append(horizon)
                    if kept is None:
                        continue
                    data = memoryview(kept)
                written = read_header(data)
                out.append(data, written.last_offset, written.max_timestamp)
            for entry in segment.txn_index.entries:
                out.txn_index.append(entry)
        if not changed:
            out.delete()
            return 0, horizons
        out.finalize()
        out.change_suffix(SWAP_SUFFIX)
        fsync_dir(log.directory)
    except BaseException:
        with contextlib.suppress(OSError):
            out.delete()
        raise
    log.replace_segments(group, out, now_ms=now_ms)
    return removed, horizons


def _filter(
    data: memoryview,
    header: BatchHeader,
    latest: dict[bytes, int],
    producer_ends: dict[int, int],
    *,
    now_ms: int,
    delete_retention_ms: int,
    aborted: bool = False,
) -> tuple[memoryview | bytes | None, int, int]:
    """The batch to keep (``data`` itself when unchanged, None to drop), the number of records
    removed, and its delete horizon if it keeps tombstones (-1 otherwise). Every record of an
    ``aborted`` batch goes."""
    header = dataclasses.replace(header, position=0)
    try:
        records = decode_records(data, header)
    except InvalidBatchError as exc:
        raise CorruptRecordError(f"batch at offset {header.base_offset}: {exc.reason}") from exc
    horizon = header.base_timestamp if header.attributes & DELETE_HORIZON_BIT else -1
    kept: list[Record] = []
    tombstones = False
    for record in records:
        if record.key is None or aborted:
            continue
        if header.base_offset + record.offset_delta < latest.get(record.key, -1):
            continue
        if record.value is None:
            if 0 <= horizon <= now_ms:
                continue
            tombstones = True
        kept.append(record)
    new_horizon = horizon if horizon >= 0 else (now_ms + delete_retention_ms if tombstones else -1)
    removed = len(records) - len(kept)
    pending = new_horizon if tombstones else -1
    if removed == 0 and new_horizon == horizon:
        return data, 0, pending
    if not kept and producer_ends.get(header.producer_id) != header.last_offset:
        return None, removed, -1
    return _encode(header, kept, new_horizon), removed, pending


def _encode(header: BatchHeader, records: Sequence[Record], horizon: int) -> bytes:
    base_timestamp = header.base_timestamp if horizon < 0 else horizon
    shift = header.base_timestamp - base_timestamp
    if shift:
        records = [
            dataclasses.replace(r, timestamp_delta=r.timestamp_delta + shift) for r in records
        ]
    max_timestamp = header.max_timestamp
    if records and not header.log_append_time:
        max_timestamp = base_timestamp + max(r.timestamp_delta for r in records)
    return encode_batch(
        base_offset=header.base_offset,
        records=records,
        compression=header.compression,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
        last_offset_delta=header.last_offset_delta,
        log_append_time=header.log_append_time,
        delete_horizon=horizon >= 0,
    )
