"""The partition log: an append-only sequence of record batches in segments, as Kafka's.

A :class:`Log` owns one partition directory (layout in :mod:`sluice.broker.log.files`): ordered
segments of which the last is *active* (appended to), producer state, the log start offset.

>>> import tempfile, pathlib
>>> from sluice.broker.records.codec import Record, encode_batch
>>> def batch(*values):
...     records = [Record(i, 0, b"k", v) for i, v in enumerate(values)]
...     return bytearray(encode_batch(base_offset=0, records=records, compression=0,
...                                   base_timestamp=1_000, max_timestamp=1_000))
>>> log = Log.open(pathlib.Path(tempfile.mkdtemp()) / "orders-0", {"segment.bytes": 1 << 20})
>>> log.append(batch(b"a", b"b"), now_ms=2_000)  # doctest: +NORMALIZE_WHITESPACE
AppendResult(base_offset=0, last_offset=1, log_append_time_ms=-1, log_start_offset=0,
             duplicate=False)
>>> log.append(batch(b"c"), now_ms=2_000).base_offset, log.log_end_offset
(2, 3)
>>> result = log.read(2, max_bytes=1 << 20)
>>> len(result.data), result.high_watermark
(70, 3)
>>> log.close()

Segments that leave the log (retention, DeleteRecords, compaction) are *retired* as Kafka's
``asyncDeleteSegment`` does: closed, their files renamed ``*.deleted``, and removed by
:meth:`Log.remove_retired` once ``file.delete.delay.ms`` has passed (0: at once). On append,
CreateTime timestamps are checked against ``message.timestamp.before/after.max.ms``
(:func:`.timestamps.check_bounds`).

A log holds its segments and a :class:`~.producer_state.ProducerStateManager` (Kafka's
``UnifiedLog`` with its ``ProducerStateManager``): idempotent producers and transactions
(markers, the last stable offset, aborted transactions) are answered from those two, and the
producer state is rebuilt at open by :func:`.transactions.rebuild_producer_state`.

Thread-safety: none; the broker calls a log from its asyncio loop only, and only the flushes of
rolled segments run elsewhere (:mod:`sluice.broker.log.flusher`). Crash behaviour: see
:mod:`sluice.broker.log.loader` (what a restart repairs), :mod:`sluice.broker.log.segment`
(torn writes, failed writes) and :mod:`sluice.broker.log.truncation` (a truncation cut short).
Time is never read here: callers pass ``now_ms``.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import shutil
from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sluice.broker.log import cleaner, incoming, timestamps, truncation
from sluice.broker.log.config import LogConfig
from sluice.broker.log.epochs import (
    LeaderEpochFileCache,
    load_leader_epochs,
    read_leader_epoch,
    write_leader_epoch,
)
from sluice.broker.log.errors import OffsetOutOfRangeError
from sluice.broker.log.files import fsync_dir, read_checkpoint, write_atomically, write_checkpoint
from sluice.broker.log.flusher import RollFlusher
from sluice.broker.log.loader import CLEAN_SHUTDOWN, load_segments
from sluice.broker.log.markers import encode_marker
from sluice.broker.log.producer_state import ProducerState, ProducerStateManager
from sluice.broker.log.retention import deletable_segments
from sluice.broker.log.segment import LogSegment
from sluice.broker.log.transactions import collect_aborted_transactions, rebuild_producer_state
from sluice.broker.log.txn_index import AbortedTxn
from sluice.broker.records.batch import (
    BatchHeader,
    InvalidBatchError,
    read_header,
    set_base_offset,
    set_leader_epoch,
    set_log_append_time,
)
from sluice.errors import CorruptRecordError, StorageError

__all__ = ["AppendResult", "Log", "ReadResult"]

log = logging.getLogger(__name__)

LOG_START_OFFSET = "log-start-offset"


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an appended batch went (for a duplicate: where it went the first time)."""

    base_offset: int
    last_offset: int
    log_append_time_ms: int
    """The broker's timestamp under LogAppendTime, -1 otherwise."""
    log_start_offset: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class ReadResult:
    """Whole batches as stored (bytes for the socket) and the log's bounds at read time."""

    data: bytes | memoryview
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


class Log:
    """One partition's log. Open with :meth:`Log.open`."""

    def __init__(
        self,
        directory: Path,
        config: Mapping[str, Any],
        segments: list[LogSegment],
        log_start_offset: int,
        producers: ProducerStateManager,
        flushes: RollFlusher,
        epochs: LeaderEpochFileCache,
        leader_epoch: int,
    ) -> None:
        self.directory = directory
        self.config: Mapping[str, Any] = dict(config)
        """The topic config as given (Kafka key → typed value)."""
        self.settings = LogConfig.from_mapping(config)
        """The same, typed, with defaults filled in."""
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = log_start_offset
        self._producers = producers
        self._flushes = flushes
        self._epochs = epochs
        self._leader_epoch = leader_epoch
        self._high_watermark: int | None = None
        """Set by replication (:meth:`set_high_watermark`); None: the log end offset (one node)."""
        self._unflushed_messages = 0
        self._first_unflushed_ms: int | None = None
        self._retired: list[tuple[int | None, LogSegment]] = []
        """Segments out of the log whose ``*.deleted`` files go at the given time (None: at the
        next :meth:`remove_retired` plus ``file.delete.delay.ms``)."""
        self._closed = False

    @classmethod
    def open(
        cls, directory: Path, config: Mapping[str, Any], *, flusher: Executor | None = None
    ) -> Log:
        """Open the log in ``directory``, creating it or recovering it after a crash.

        Rolled segments are flushed on ``flusher`` (one thread for the broker: see
        :mod:`sluice.broker.log.flusher`), or at once without one."""
        directory = Path(directory)
        settings = LogConfig.from_mapping(config)
        segments = load_segments(directory, settings)
        pending = truncation.pending(directory)
        if pending is not None:
            log.warning("%s: finishing a truncation to offset %d", directory, pending)
            segments = truncation.cut(directory, segments, pending)
        saved = read_checkpoint(directory / LOG_START_OFFSET) or [0]
        log_start = max(saved[0], segments[0].base_offset if segments else 0)
        if segments and log_start > segments[-1].next_offset:
            log.warning("%s: log end below the log start offset, starting over", directory)
            for segment in segments:
                segment.delete()
            segments = []
        if not segments:
            segments = [LogSegment.create(directory, log_start, settings)]
            fsync_dir(directory)
        producers = ProducerStateManager(directory)
        flushes = RollFlusher(directory, flusher)
        end = segments[-1].next_offset  # finds (and recovers) a torn tail first
        epochs = load_leader_epochs(
            directory, segments, log_start_offset=log_start, log_end_offset=end
        )
        recorded = read_leader_epoch(directory)
        leader_epoch = max(recorded or 0, epochs.latest_epoch or 0)
        if recorded != leader_epoch:
            write_leader_epoch(directory, leader_epoch)
        epochs.assign(leader_epoch, end)  # led since the log end, as a leader elected now
        opened = cls(
            directory, config, segments, log_start, producers, flushes, epochs, leader_epoch
        )
        rebuild_producer_state(directory, opened._segments, producers, end)
        if len(segments) > 1 or pending is not None:
            flushes.start_at(segments[-1].base_offset)
        if pending is not None:
            truncation.finish(directory)
        return opened

    # -- state ---------------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        """The offset below which records are committed: the log end offset on one node; in a
        cluster, what replication last set (:meth:`set_high_watermark`)."""
        if self._high_watermark is None:
            return self.log_end_offset
        return max(self._high_watermark, self._log_start_offset)

    def set_high_watermark(self, offset: int) -> None:
        """Replication's high watermark from now on (a leader's from its in-sync replicas, a
        follower's from its leader's), kept within the log start and end offsets. Once set,
        the high watermark no longer follows appends; :meth:`truncate_to` lowers it with the
        log end."""
        self._high_watermark = min(max(offset, self._log_start_offset), self.log_end_offset)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segment_count(self) -> int:
        return len(self._segments)

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        """The segments, oldest first; the last one is active."""
        return tuple(self._segments)

    # -- leader epochs (see :mod:`.epochs`) ------------------------------------------------------

    @property
    def leader_epoch(self) -> int:
        """The partition's leader epoch, stamped into every batch appended."""
        return self._leader_epoch

    @property
    def leader_epochs(self) -> LeaderEpochFileCache:
        """The start offset of each epoch in the log (``leader-epoch-checkpoint``)."""
        return self._epochs

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """``(epoch, end offset)`` of ``epoch`` in this log: OffsetForLeaderEpoch's answer
        (:meth:`.epochs.LeaderEpochFileCache.end_offset_for`)."""
        return self._epochs.end_offset_for(epoch, self.log_end_offset)

    def become_leader(self, leader_epoch: int) -> None:
        """Lead the partition in ``leader_epoch`` (an election): the epoch is recorded in
        ``leader-epoch`` and starts at the log end. An epoch below the current one is refused
        (ValueError); the current one changes nothing."""
        if leader_epoch < self._leader_epoch:
            raise ValueError(
                f"{self.directory.name}: leader epoch {leader_epoch} is older than the "
                f"partition's {self._leader_epoch}"
            )
        if leader_epoch > self._leader_epoch:
            write_leader_epoch(self.directory, leader_epoch)
            self._leader_epoch = leader_epoch
        self._epochs.assign(leader_epoch, self.log_end_offset)

    def _floor(self, offset: int) -> int:
        return max(bisect.bisect_right(self._bases, offset) - 1, 0)

    # -- writing -------------------------------------------------------------------------------

    def append(self, records: bytearray | memoryview, *, now_ms: int) -> AppendResult:
        """Append one v2 batch (CRC already validated by the caller); see the package docs.

        ``records`` must be writable: its base offset (and under LogAppendTime its timestamp
        and CRC) is patched in place before the write."""
        try:
            header = read_header(records)
        except InvalidBatchError as exc:
            raise CorruptRecordError(exc.reason) from exc
        if header.size != len(records):
            raise CorruptRecordError(f"batch of {header.size} bytes in {len(records)} bytes")
        duplicate = self._producers.check(header)
        if duplicate is not None:
            return AppendResult(
                duplicate.base_offset, duplicate.last_offset, -1, self._log_start_offset, True
            )
        if self.settings.timestamps_bounded and not header.is_control:
            timestamps.check_bounds(
                records,
                header,
                now_ms=now_ms,
                before_max_ms=self.settings.timestamp_before_max_ms,
                after_max_ms=self.settings.timestamp_after_max_ms,
            )
        abort = incoming.is_abort(records, header)
        base_offset = self.log_end_offset
        last_offset = base_offset + header.last_offset_delta
        set_base_offset(records, 0, base_offset)
        set_leader_epoch(records, 0, self._leader_epoch)
        self._epochs.assign(self._leader_epoch, base_offset)  # written before the batch
        max_timestamp, append_time = header.max_timestamp, -1
        if self.settings.log_append_time:
            set_log_append_time(records, 0, now_ms)
            max_timestamp = append_time = now_ms
        self._write(records, header, base_offset, max_timestamp, abort=abort, now_ms=now_ms)
        return AppendResult(base_offset, last_offset, append_time, self._log_start_offset)

    def append_as_follower(self, records: bytes | bytearray | memoryview, *, now_ms: int) -> int:
        """Append record batches fetched from the partition leader as they are (Kafka's
        ``appendAsFollower``): their base offsets and partition leader epochs are kept, nothing
        is patched; returns the new log end offset.

        Every batch is checked before any is written: magic 2, whole, CRC-32C
        (:class:`~sluice.errors.CorruptRecordError`), the first starting at the log end offset
        and each following the one before without a gap
        (:class:`~sluice.broker.log.errors.UnexpectedAppendOffsetError`); a refused call
        leaves the log unchanged. Each batch then goes through the write :meth:`append` uses
        (roll, offset and time indexes, producer state, the aborted-transaction index for an
        abort marker, flush policy); a batch of a leader epoch newer than the cache's latest
        starts that epoch in the leader-epoch cache. Producer sequences are not checked (the
        leader did). Empty ``records``: nothing appended."""
        checked = incoming.follower_batches(records, self.log_end_offset, self.directory.name)
        view = memoryview(records)
        for header, abort in checked:
            epoch, latest = header.partition_leader_epoch, self._epochs.latest_epoch
            if epoch >= 0 and (latest is None or epoch > latest):
                self._epochs.assign(epoch, header.base_offset)  # written before the batch
            data = view[header.position : header.position + header.size]
            self._write(
                data, header, header.base_offset, header.max_timestamp, abort=abort, now_ms=now_ms
            )
        return self.log_end_offset

    def _write(
        self,
        records: bytes | bytearray | memoryview,
        header: BatchHeader,
        base_offset: int,
        max_timestamp: int,
        *,
        abort: bool,
        now_ms: int,
    ) -> None:
        """What both appends do with a batch whose offsets are final: roll when due, write it
        to the active segment, record an aborted transaction, update the producer state and
        apply the flush policy."""
        last_offset = base_offset + header.last_offset_delta
        segment = self._segments[-1]
        if segment.should_roll(len(records), last_offset, max_timestamp, now_ms, self.settings):
            segment = self.roll(now_ms)
        segment.append(records, last_offset, max_timestamp)
        if abort:
            aborted = self._producers.completed_txn(header.producer_id, base_offset)
            if aborted is not None:
                segment.txn_index.append(aborted)
        self._producers.update(header, base_offset, max_timestamp)
        self._unflushed_messages += max(header.record_count, 1)
        if self._first_unflushed_ms is None:
            self._first_unflushed_ms = now_ms
        if self._unflushed_messages >= self.settings.flush_messages:
            self.flush()

    def roll(self, now_ms: int) -> LogSegment:
        """Close the active segment (producer snapshot taken, its flush handed to the flusher)
        and start a new one."""
        old = self._segments[-1]
        if old.size == 0:
            return old
        old.seal()
        end = old.next_offset
        try:
            self._producers.take_snapshot(end)
        except OSError as exc:
            log.warning("%s: producer snapshot at %d not written: %s", self.directory, end, exc)
        new = LogSegment.create(self.directory, end, self.settings, now_ms=now_ms)
        with contextlib.suppress(OSError):
            fsync_dir(self.directory)
        self._segments.append(new)
        self._bases.append(end)
        self._flushes.submit(old, end)
        return new

    def flush(self) -> None:
        """fsync the active segment and its indexes, once the rolled ones are flushed."""
        self._flushes.wait()
        self._segments[-1].flush()
        self._unflushed_messages, self._first_unflushed_ms = 0, None

    def flush_if_due(self, now_ms: int) -> bool:
        """Flush when the oldest unflushed append is ``flush.ms`` old (the broker's timer)."""
        self.remove_retired(now_ms)
        first = self._first_unflushed_ms
        if first is None or now_ms - first < self.settings.flush_ms:
            return False
        self.flush()
        return True

    def update_config(self, config: Mapping[str, Any]) -> None:
        """Apply new topic settings (index sizes take effect from the next segment)."""
        self.config = dict(config)
        self.settings = LogConfig.from_mapping(config)
        self._segments[-1].index_interval_bytes = self.settings.index_interval_bytes

    # -- reading -------------------------------------------------------------------------------

    def _check_range(self, offset: int) -> None:
        if not self._log_start_offset <= offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                offset, log_start_offset=self._log_start_offset, log_end_offset=self.log_end_offset
            )

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        upper_bound: int | None = None,
        min_one_batch: bool = True,
    ) -> ReadResult:
        """Whole batches from the one holding ``offset``: at most ``max_bytes`` (but the first
        batch whole if ``min_one_batch``), none reaching ``upper_bound`` (exclusive)."""
        end = self.log_end_offset
        found = self.locate(offset, max_bytes, upper_bound=upper_bound, min_one_batch=min_one_batch)
        data = b"" if found is None else found[0].read_batch(found[1], found[2] - found[1])
        return ReadResult(data, self.high_watermark, self._log_start_offset, end)

    def locate(
        self,
        offset: int,
        max_bytes: int,
        *,
        upper_bound: int | None = None,
        min_one_batch: bool = True,
    ) -> tuple[LogSegment, int, int] | None:
        """Where the bytes :meth:`read` returns are: ``(segment, start, end)`` file positions,
        None when there are none. Nothing but batch headers is read; a fetch sends the range
        with :meth:`LogSegment.region <.segment.LogSegment.region>`, before the log changes
        (any append, roll or deletion may move or close the segment)."""
        self._check_range(offset)
        end = self.log_end_offset
        bound = end if upper_bound is None else min(upper_bound, end)
        if offset < bound:
            for segment in self._segments[self._floor(offset) :]:
                if segment.base_offset >= bound:
                    break
                found = segment.span(offset, max_bytes, bound, min_one_batch)
                if found is not None:
                    start, stop = found
                    return (segment, start, stop) if stop > start else None
        return None

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record whose timestamp is >= ``timestamp``
        (ListOffsets by time), or None if there is none."""
        return timestamps.offset_for_timestamp(self._segments, timestamp, self._log_start_offset)

    def max_timestamp(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the record with the largest timestamp (the first such),
        or None when the log holds no timestamps."""
        return timestamps.max_timestamp(self._segments)

    # -- producers and transactions ------------------------------------------------------------

    def producer_state(self, producer_id: int) -> ProducerState | None:
        """What the log knows of an idempotent producer (None: nothing)."""
        return self._producers.producers.get(producer_id)

    def producer_states(self) -> Mapping[int, ProducerState]:
        """Every producer id the log knows, with its state (read-only view)."""
        return MappingProxyType(self._producers.producers)

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction (None: none open)."""
        return self._producers.first_unstable_offset()

    @property
    def last_stable_offset(self) -> int:
        """The end of what read_committed consumers may read: the first offset of the oldest
        open transaction, or the high watermark when none is open (never below the log start)."""
        unstable = self._producers.first_unstable_offset()
        if unstable is None:
            return self.high_watermark
        return max(min(unstable, self.high_watermark), self._log_start_offset)

    def open_transactions(self) -> dict[int, int]:
        """Producer id → first offset of its open transaction on this partition."""
        return self._producers.open_transactions()

    def aborted_transactions(self, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
        """``(producer_id, first_offset)`` of every aborted transaction overlapping
        ``[start_offset, end_offset)``: what a read_committed Fetch of that range returns so
        that the consumer drops the aborted records."""
        return [
            (t.producer_id, t.first_offset)
            for t in self.collect_aborted_transactions(start_offset, end_offset)
        ]

    def collect_aborted_transactions(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """The aborted-transaction index entries overlapping ``[start_offset, end_offset)``
        (see :func:`.transactions.collect_aborted_transactions`)."""
        return collect_aborted_transactions(
            self._segments[self._floor(start_offset) :], start_offset, end_offset
        )

    def append_marker(
        self,
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

    # -- deleting ------------------------------------------------------------------------------

    def delete_records_before(self, offset: int, *, now_ms: int | None = None) -> int:
        """DeleteRecords: make ``offset`` the log start offset (persisted), delete the segments
        wholly below it; returns the log start offset."""
        if not 0 <= offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                offset, log_start_offset=self._log_start_offset, log_end_offset=self.log_end_offset
            )
        if offset > self._log_start_offset:
            write_checkpoint(self.directory / LOG_START_OFFSET, [offset])
            self._log_start_offset = offset
            count = 0
            while count + 1 < len(self._segments) and self._bases[count + 1] <= offset:
                count += 1
            self._delete_oldest(count, now_ms)
        return self._log_start_offset

    def truncate_to(self, offset: int) -> int:
        """Cut the log back so that it ends at ``offset`` (a follower's divergent tail,
        KIP-101/279); returns the new log end offset (below ``offset`` when it falls inside a
        batch: batches are never split; the log start offset when that batch holds the log
        start, the log then being empty). Segments, indexes, the leader-epoch cache and the
        producer state follow; crash-safe (see :mod:`.truncation`). An offset below the log
        start or above the log end raises
        :class:`~sluice.broker.log.errors.OffsetOutOfRangeError`.

        Cutting at the log end removes no batch, but epochs of the cache starting there go (as
        Kafka's ``truncateTo`` does): an epoch this replica started as leader without appending
        to it is not in the log the follower keeps."""
        self._check_range(offset)
        if offset == self.log_end_offset:
            self._epochs.truncate_from_end(offset)
            return offset
        self._flushes.wait()
        truncation.begin(self.directory, offset)
        self._segments = truncation.cut(self.directory, self._segments, offset)
        if self.log_end_offset < self._log_start_offset:  # the batch holding the start went
            for gone in self._segments:  # as an open finding the log below its start does
                gone.delete()
            start = LogSegment.create(self.directory, self._log_start_offset, self.settings)
            self._segments = [start]
            fsync_dir(self.directory)
        self._bases = [s.base_offset for s in self._segments]
        end = self.log_end_offset
        if self._high_watermark is not None:
            self._high_watermark = min(max(self._high_watermark, self._log_start_offset), end)
        self._epochs.truncate_from_end(end)
        rebuild_producer_state(self.directory, self._segments, self._producers, end)
        self._flushes.start_at(self._bases[-1])
        truncation.finish(self.directory)
        self._unflushed_messages, self._first_unflushed_ms = 0, None
        return end

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and start it over at ``offset``, which becomes its log start and end
        offset (Kafka's ``truncateFullyAndStartAt``: a follower whose log ends below the
        leader's log start offset). Every segment goes, with the producer state, its snapshots
        and the leader-epoch cache.

        Crash behaviour: the producer snapshots go first, then ``offset`` is written to
        ``log-start-offset``, then the segments are deleted newest first and the new one is
        created. A crash leaves either the old log (its producer state is rebuilt from the
        batches at open), or a prefix of it with the new log start offset, which the open then
        treats as it treats any log (one that ends below its log start starts over empty there;
        the fetcher finds its log behind the leader's start again and repeats this)."""
        if offset < 0:
            raise ValueError(f"{self.directory.name}: cannot start the log at offset {offset}")
        self._flushes.wait()
        self._producers.load(-1)  # no snapshot is at or below -1: all are deleted, state emptied
        write_checkpoint(self.directory / LOG_START_OFFSET, [offset])
        for gone in reversed(self._segments):
            gone.delete()
        self._segments = [LogSegment.create(self.directory, offset, self.settings)]
        fsync_dir(self.directory)
        self._bases = [offset]
        self._log_start_offset = offset
        self._epochs.truncate_from_end(0)
        if self._high_watermark is not None:
            self._high_watermark = offset
        self._flushes.start_at(offset)
        self._unflushed_messages, self._first_unflushed_ms = 0, None

    def enforce_retention(self, now_ms: int) -> int:
        """Delete segments past ``retention.ms``/``retention.bytes`` or below the log start
        offset; returns how many were deleted."""
        self.remove_retired(now_ms)
        count = deletable_segments(
            self._segments, self.settings, now_ms=now_ms, log_start_offset=self._log_start_offset
        )
        if count == len(self._segments):
            self.roll(now_ms)
        self._delete_oldest(count, now_ms)
        return count

    def _retire(self, segments: list[LogSegment], now_ms: int | None) -> None:
        """Take ``segments`` out of use: removed at once when ``file.delete.delay.ms`` is 0,
        else renamed ``*.deleted`` and removed by :meth:`remove_retired` after the delay."""
        delay = self.settings.file_delete_delay_ms
        for segment in segments:
            if delay <= 0:
                segment.delete()
            else:
                segment.retire()
                self._retired.append((None if now_ms is None else now_ms + delay, segment))

    def remove_retired(self, now_ms: int) -> int:
        """Remove the files of retired segments whose ``file.delete.delay.ms`` has passed;
        returns how many segments went (called by the broker's timers with its clock)."""
        due: list[tuple[int, LogSegment]] = []
        waiting: list[tuple[int | None, LogSegment]] = []
        for when, segment in self._retired:
            at = now_ms + self.settings.file_delete_delay_ms if when is None else when
            (due if at <= now_ms else waiting).append((at, segment))
        self._retired = waiting
        for _, segment in due:
            segment.delete()
        return len(due)

    def _delete_oldest(self, count: int, now_ms: int | None = None) -> None:
        if count:
            self._flushes.wait()
        self._retire(self._segments[:count], now_ms)
        del self._segments[:count], self._bases[:count]
        self._log_start_offset = max(self._log_start_offset, self._bases[0])
        self._epochs.truncate_from_start(self._log_start_offset)

    def replace_segments(
        self, old: list[LogSegment], new: LogSegment, *, now_ms: int | None = None
    ) -> None:
        """Put the cleaned ``new`` (files suffixed ``.swap``) in place of ``old`` (consecutive;
        retired as retention's are)."""
        first = self._segments.index(old[0])
        self._flushes.wait()
        self._retire(old, now_ms)
        new.change_suffix("")
        fsync_dir(self.directory)
        self._segments[first : first + len(old)] = [new]
        self._bases[first : first + len(old)] = [new.base_offset]

    def compact(self, now_ms: int) -> int:
        """Compact the non-active segments (cleanup.policy compact); returns records removed.
        See :mod:`sluice.broker.log.cleaner`."""
        return cleaner.clean(self, now_ms)

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush, write the producer snapshot and the clean-shutdown marker, close the files.
        Closing twice does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._flushes.wait()
            self._segments[-1].finalize()
            self._producers.take_snapshot(self.log_end_offset, keep=self._segments[-1].base_offset)
            write_atomically(self.directory / CLEAN_SHUTDOWN, b"")
        finally:
            for segment in self._segments:
                segment.close()

    def delete(self) -> None:
        """Close the files and remove the whole directory."""
        self._closed = True
        with contextlib.suppress(StorageError):  # the data goes anyway
            self._flushes.wait()
        for segment in self._segments:
            segment.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"Log({self.directory.name}, start={self._log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )
