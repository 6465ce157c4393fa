"""Idempotent and transactional producer state of a partition, and its snapshot files.

Per producer id the log keeps the epoch and the metadata of the last five batches (Kafka's
``max.in.flight.requests.per.connection`` limit for idempotence): a retried batch whose epoch
and sequence range match one of them is a duplicate and is answered with its original offsets;
a batch that does not follow the last sequence is out of order. A transactional producer's
``current_txn_first_offset`` is the first offset of its open transaction (cleared by a control
batch): the smallest of them is the first unstable offset, the last stable offset's source.

Snapshot file ``<offset, 20 digits>.snapshot`` holds the state after every batch below
``offset`` (big-endian)::

    version                   int16   1
    crc                       uint32  CRC-32C of every byte after this field
    producer_count            int32
    producer_count times:
        producer_id               int64
        epoch                     int16
        last_timestamp            int64
        current_txn_first_offset  int64   -1 when no transaction is open
        batch_count               int8    0..5
        batch_count times:  first_seq int32, last_seq int32, first_offset int64,
                            last_offset int64, timestamp int64

Snapshots are written atomically at each segment roll and at a clean close; the newest three
are kept, and the one at the active segment's base. The log also asks, for each abort marker,
which transaction it ends (:meth:`ProducerStateManager.completed_txn`: the entry of the
aborted-transaction index). Crash behaviour: on open the newest snapshot at or below the
recovered log end is loaded (newer ones are stale and deleted, damaged ones skipped) and the
batch headers after it are replayed, so a crash loses nothing that the log kept. Not
thread-safe (owned by the log).

>>> from sluice.broker.records.batch import BatchHeader
>>> def batch(offset, seq, epoch=0, count=1):
...     return BatchHeader(offset, 100, 0, 2, 0, 0, count - 1, 0, 5, 42, epoch, seq, count)
>>> state = ProducerStateManager()
>>> state.check(batch(0, 0, count=3)) is None
True
>>> state.update(batch(0, 0, count=3))
>>> state.check(batch(0, 0, count=3))   # the retry of a written batch
DuplicateSequence(base_offset=0, last_offset=2, timestamp=5)
>>> state.check(batch(0, 7))  # doctest: +IGNORE_EXCEPTION_DETAIL
Traceback (most recent call last):
OutOfOrderSequenceError: producer 42 epoch 0: expected sequence 3, got 7
"""

from __future__ import annotations

import logging
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from sluice.broker.log.errors import (
    DuplicateSequence,
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from sluice.broker.log.files import (
    SNAPSHOT_SUFFIX,
    parse_base_offset,
    segment_name,
    write_atomically,
)
from sluice.broker.log.txn_index import AbortedTxn
from sluice.broker.records.batch import BatchHeader

__all__ = ["BatchMetadata", "ProducerState", "ProducerStateManager"]

log = logging.getLogger(__name__)

MAX_CACHED_BATCHES = 5
SNAPSHOTS_KEPT = 3
INT_MAX = 2**31 - 1
_VERSION = 1
_HEAD = struct.Struct(">hI")
_COUNT = struct.Struct(">i")
_PRODUCER = struct.Struct(">qhqqb")
_BATCH = struct.Struct(">iiqqq")


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """Sequence range and offsets of one written batch."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerState:
    """What the log remembers of one producer id."""

    producer_id: int
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))
    last_timestamp: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        """Last offset of the producer's last data batch (-1 if none is remembered)."""
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT_MAX)


class ProducerStateManager:
    """Producer states of one partition, checked before and updated after each append."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.producers: dict[int, ProducerState] = {}

    # -- appends -------------------------------------------------------------------------------

    def check(self, header: BatchHeader) -> DuplicateSequence | None:
        """Validate a batch about to be appended: the duplicate it repeats, or None to append.

        Raises the producer errors of :mod:`sluice.broker.log.errors`.
        """
        pid, epoch, seq = header.producer_id, header.producer_epoch, header.base_sequence
        if pid < 0:
            return None
        state = self.producers.get(pid)
        if state is not None and epoch < state.epoch:
            raise InvalidProducerEpochError(
                f"producer {pid}: epoch {epoch} is older than the current {state.epoch}"
            )
        if header.is_control or seq < 0:
            return None
        if state is None:
            if seq != 0:
                raise UnknownProducerIdError(
                    f"producer {pid} is unknown and its first sequence is {seq}, not 0"
                )
            return None
        if epoch > state.epoch:
            if seq != 0:
                raise OutOfOrderSequenceError(
                    f"producer {pid}: a new epoch {epoch} must start at sequence 0, got {seq}"
                )
            return None
        duplicate = state.find_duplicate(seq, header.last_sequence)
        if duplicate is not None:
            return DuplicateSequence(
                duplicate.first_offset, duplicate.last_offset, duplicate.timestamp
            )
        if not _in_sequence(state.last_seq, seq):
            raise OutOfOrderSequenceError(
                f"producer {pid} epoch {epoch}: expected sequence "
                f"{(state.last_seq + 1) % (INT_MAX + 1)}, got {seq}"
            )
        return None

    def update(
        self, header: BatchHeader, base_offset: int | None = None, max_timestamp: int | None = None
    ) -> None:
        """Record a written batch (also used to replay the log); ``base_offset`` and
        ``max_timestamp`` override the header's when the log assigned them after reading it."""
        pid = header.producer_id
        if pid < 0:
            return
        base = header.base_offset if base_offset is None else base_offset
        timestamp = header.max_timestamp if max_timestamp is None else max_timestamp
        state = self.producers.get(pid)
        if state is None:
            state = self.producers[pid] = ProducerState(pid, header.producer_epoch)
        elif header.producer_epoch > state.epoch:
            state.epoch = header.producer_epoch
            state.batches.clear()
        state.last_timestamp = max(state.last_timestamp, timestamp)
        if header.is_control:
            state.current_txn_first_offset = -1
            return
        if header.base_sequence >= 0:
            state.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    base,
                    base + header.last_offset_delta,
                    timestamp,
                )
            )
        if header.is_transactional and state.current_txn_first_offset < 0:
            state.current_txn_first_offset = base

    def completed_txn(self, producer_id: int, marker_offset: int) -> AbortedTxn | None:
        """The entry a marker at ``marker_offset`` would end (call before :meth:`update`): the
        producer's open transaction with the last stable offset once it is closed (the first
        offset of the oldest other open transaction, else one past the marker); None when the
        producer has no open transaction here."""
        state = self.producers.get(producer_id)
        if state is None or state.current_txn_first_offset < 0:
            return None
        others = [
            s.current_txn_first_offset
            for s in self.producers.values()
            if s.current_txn_first_offset >= 0 and s.producer_id != producer_id
        ]
        return AbortedTxn(
            producer_id,
            state.current_txn_first_offset,
            marker_offset,
            min(others, default=marker_offset + 1),
        )

    def open_transactions(self) -> dict[int, int]:
        """Producer id → first offset of its open transaction."""
        return {
            s.producer_id: s.current_txn_first_offset
            for s in self.producers.values()
            if s.current_txn_first_offset >= 0
        }

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction, or None when none is open."""
        open_txns = [
            s.current_txn_first_offset
            for s in self.producers.values()
            if s.current_txn_first_offset >= 0
        ]
        return min(open_txns, default=None)

    # -- snapshots -----------------------------------------------------------------------------

    def snapshot_offsets(self) -> list[int]:
        """Offsets of the snapshot files present, ascending."""
        assert self.directory is not None
        offsets = []
        for path in self.directory.glob(f"*{SNAPSHOT_SUFFIX}"):
            offset = parse_base_offset(path.name)
            if offset is not None and path.name.endswith(SNAPSHOT_SUFFIX):
                offsets.append(offset)
        return sorted(offsets)

    def _snapshot_path(self, offset: int) -> Path:
        assert self.directory is not None
        return self.directory / segment_name(offset, SNAPSHOT_SUFFIX)

    def take_snapshot(self, offset: int, *, keep: int = -1) -> None:
        """Write the state (covering every batch below ``offset``) and prune old snapshots,
        except the one at ``keep`` (the active segment's base, where a rebuild of its
        aborted-transaction index replays from after a crash)."""
        body = bytearray(_COUNT.pack(len(self.producers)))
        for s in self.producers.values():
            body += _PRODUCER.pack(
                s.producer_id,
                s.epoch,
                s.last_timestamp,
                s.current_txn_first_offset,
                len(s.batches),
            )
            for b in s.batches:
                body += _BATCH.pack(
                    b.first_seq, b.last_seq, b.first_offset, b.last_offset, b.timestamp
                )
        write_atomically(self._snapshot_path(offset), _HEAD.pack(_VERSION, crc32c(body)) + body)
        for old in self.snapshot_offsets()[:-SNAPSHOTS_KEPT]:
            if old != keep:
                self._snapshot_path(old).unlink(missing_ok=True)

    def load(self, log_end_offset: int, at_most: int | None = None) -> int:
        """Load the newest usable snapshot at or below ``log_end_offset`` (and ``at_most``,
        where the log must start replaying); return its offset (the log replays batches from
        there) or -1 when there is none. Snapshots past the log end are stale and deleted."""
        self.producers = {}
        limit = log_end_offset if at_most is None else min(at_most, log_end_offset)
        for offset in reversed(self.snapshot_offsets()):
            path = self._snapshot_path(offset)
            if offset > log_end_offset:
                path.unlink(missing_ok=True)
                continue
            if offset > limit:
                continue
            try:
                self.producers = _decode(path.read_bytes())
                return offset
            except (OSError, ValueError, struct.error) as exc:
                log.warning("%s: unusable producer snapshot (%s), deleted", path, exc)
                path.unlink(missing_ok=True)
        return -1


def _decode(data: bytes) -> dict[int, ProducerState]:
    version, crc = _HEAD.unpack_from(data)
    if version != _VERSION or crc32c(data[_HEAD.size :]) != crc:
        raise ValueError("bad version or CRC")
    (count,) = _COUNT.unpack_from(data, _HEAD.size)
    at = _HEAD.size + _COUNT.size
    producers = {}
    for _ in range(count):
        pid, epoch, last_ts, txn_first, n = _PRODUCER.unpack_from(data, at)
        at += _PRODUCER.size
        state = ProducerState(
            pid, epoch, last_timestamp=last_ts, current_txn_first_offset=txn_first
        )
        for _ in range(n):
            state.batches.append(BatchMetadata(*_BATCH.unpack_from(data, at)))
            at += _BATCH.size
        producers[pid] = state
    if at != len(data):
        raise ValueError("trailing bytes")
    return producers
