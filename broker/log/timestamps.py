"""Offsets by time (ListOffsets): the first record at or after a timestamp, the newest record.

Segments are found by their largest timestamp, the batch through the segment's time index
(:mod:`sluice.broker.log.time_index`), and only that one batch is decoded to name the exact
record, as Kafka does. Records below the log start offset are never answered. Read-only.
"""

from __future__ import annotations

from collections.abc import Sequence

from sluice.broker.log.segment import LogSegment
from sluice.broker.records.batch import InvalidBatchError, read_header
from sluice.broker.records.codec import decode_records
from sluice.errors import CorruptRecordError

__all__ = ["max_timestamp", "offset_for_timestamp"]


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
