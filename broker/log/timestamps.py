"""Timestamps of the log: bounds on append, offsets by time (ListOffsets).

On append (``message.timestamp.type=CreateTime`` with ``message.timestamp.before.max.ms`` or
``after.max.ms`` set, or the legacy ``difference.max.ms``), :func:`check_bounds` decodes the
batch and refuses it with :class:`~.errors.RecordValidationError` (INVALID_TIMESTAMP) if a
record's timestamp lies outside ``[now - before, now + after]``, naming each bad record, as
Kafka's ``LogValidator.validateTimestamp``. With the defaults (no bound) nothing is decoded.

By time: the first record at or after a timestamp, the newest record.

Segments are found by their largest timestamp, the batch through the segment's time index
(:mod:`sluice.broker.log.time_index`), and only that one batch is decoded to name the exact
record, as Kafka does. Records below the log start offset are never answered. Read-only.
"""

from __future__ import annotations

from collections.abc import Sequence

from sluice.broker.log.errors import RecordValidationError
from sluice.broker.log.segment import LogSegment
from sluice.broker.records.batch import BatchHeader, InvalidBatchError, read_header
from sluice.broker.records.codec import decode_records
from sluice.errors import CorruptRecordError

__all__ = ["check_bounds", "max_timestamp", "offset_for_timestamp"]


def check_bounds(
    data: bytes | bytearray | memoryview,
    header: BatchHeader,
    *,
    now_ms: int,
    before_max_ms: int,
    after_max_ms: int,
) -> None:
    """Raise :class:`RecordValidationError` (INVALID_TIMESTAMP) if a record of the batch has a
    timestamp before ``now - before_max_ms`` or after ``now + after_max_ms``."""
    low, high = now_ms - before_max_ms, now_ms + after_max_ms
    if low <= header.base_timestamp and header.max_timestamp <= high and header.record_count == 1:
        return  # one record: its timestamp is the base timestamp
    try:
        records = decode_records(data, header)
    except InvalidBatchError as exc:
        raise CorruptRecordError(exc.reason) from exc
    errors = []
    for index, record in enumerate(records):
        timestamp = header.base_timestamp + record.timestamp_delta
        if not low <= timestamp <= high:
            errors.append(
                (
                    index,
                    f"Timestamp {timestamp} of message with offset {index} is out of range. "
                    f"The timestamp should be within [{low}, {high}]",
                )
            )
    if errors:
        raise RecordValidationError(errors, invalid_timestamp=True)


def offset_for_timestamp(
    segments: Sequence[LogSegment], timestamp: int, log_start_offset: int
) -> tuple[int, int] | None:
    """``(offset, timestamp)`` of the first record whose timestamp is >= ``timestamp``."""
    for segment in segments:
        if segment.max_timestamp < timestamp:
            continue
        min_offset = log_start_offset
        while header := segment.find_by_timestamp(timestamp, min_offset):
            for offset, ts in _record_times(segment, header.position, header.size):
                if ts >= timestamp and offset >= min_offset:
                    return offset, ts
            min_offset = header.next_offset
    return None


def max_timestamp(segments: Sequence[LogSegment]) -> tuple[int, int] | None:
    """``(offset, timestamp)`` of the first record holding the largest timestamp."""
    best: LogSegment | None = None
    for segment in segments:
        if segment.max_timestamp >= 0 and (
            best is None or segment.max_timestamp > best.max_timestamp
        ):
            best = segment
    if best is None or (header := next(best.headers(best.offset_of_max_timestamp), None)) is None:
        return None
    for offset, ts in _record_times(best, header.position, header.size):
        if ts == header.max_timestamp:
            return offset, ts
    return header.last_offset, header.max_timestamp


def _record_times(segment: LogSegment, position: int, size: int) -> list[tuple[int, int]]:
    """``(offset, timestamp)`` of each record of the batch at ``position``."""
    data = segment.read_batch(position, size)
    header = read_header(data)
    try:
        records = decode_records(data, header)
    except InvalidBatchError as exc:
        raise CorruptRecordError(f"{segment.log_path}: {exc.reason}") from exc
    if header.log_append_time:
        return [(header.base_offset + r.offset_delta, header.max_timestamp) for r in records]
    return [
        (header.base_offset + r.offset_delta, header.base_timestamp + r.timestamp_delta)
        for r in records
    ]
