"""Retention by time and size, and DeleteRecords."""

from __future__ import annotations

import pytest

from sluice.broker.log import OffsetOutOfRangeError

HOUR = 3_600_000


def _fill(log, batch, count, *, timestamp=lambda i: 1_000, size=100):
    for i in range(count):
        log.append(batch(b"v" * size, timestamp=timestamp(i)), now_ms=0)


def test_retention_ms_deletes_segments_whose_newest_record_is_too_old(open_log, batch, log_dir):
    log = open_log({"segment.bytes": 400, "retention.ms": HOUR})
    _fill(log, batch, 12, timestamp=lambda i: i * 10 * 60_000)  # one record every 10 minutes
    segments = [(s.base_offset, s.max_timestamp) for s in log.segments]
    now = 2 * HOUR

    expected = next(i for i, (_, ts) in enumerate(segments) if now - ts <= HOUR)
    assert log.enforce_retention(now) == expected > 0
    assert log.log_start_offset == segments[expected][0]
    assert len(list(log_dir.glob("*.log"))) == len(segments) - expected
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 1000)
    assert log.enforce_retention(now) == 0


def test_when_every_segment_expired_the_log_rolls_and_keeps_its_end(open_log, batch):
    log = open_log({"segment.bytes": 400, "retention.ms": HOUR})
    _fill(log, batch, 7)
    end = log.log_end_offset

    assert log.enforce_retention(10 * HOUR) >= 2
    assert log.segment_count == 1
    assert log.log_start_offset == log.log_end_offset == end
    assert bytes(log.read(end, 1000).data) == b""
    assert log.append(batch(b"next"), now_ms=0).base_offset == end
    assert log.enforce_retention(10 * HOUR) == 1
    assert log.log_start_offset == log.log_end_offset == end + 1


def test_retention_bytes_keeps_the_newest_segments_within_the_limit(open_log, batch):
    log = open_log({"segment.bytes": 400, "retention.bytes": 1_000, "retention.ms": -1})
    _fill(log, batch, 20)
    sizes = [s.size for s in log.segments]

    deleted = log.enforce_retention(0)
    assert deleted > 0
    assert sum(sizes[deleted:]) == log.size_in_bytes
    assert log.size_in_bytes >= 1_000, "never below retention.bytes"
    assert log.size_in_bytes - log.segments[0].size < 1_000, "the oldest kept one is needed"


def test_retention_is_disabled_by_minus_one_and_by_a_compact_only_policy(open_log, batch):
    log = open_log({"segment.bytes": 400, "retention.ms": -1, "retention.bytes": -1})
    _fill(log, batch, 10)
    assert log.enforce_retention(100 * HOUR) == 0

    log.update_config({"segment.bytes": 400, "retention.ms": 1, "cleanup.policy": ["compact"]})
    assert log.enforce_retention(100 * HOUR) == 0
    log.update_config(
        {"segment.bytes": 400, "retention.ms": 1, "cleanup.policy": ["compact", "delete"]}
    )
    assert log.enforce_retention(100 * HOUR) > 0


def test_delete_records_moves_the_log_start_and_drops_whole_segments(open_log, batch, log_dir):
    log = open_log({"segment.bytes": 400})
    _fill(log, batch, 12)
    bases = [s.base_offset for s in log.segments]
    cut = bases[2] + 1

    assert log.delete_records_before(cut) == cut
    assert log.log_start_offset == cut
    assert [s.base_offset for s in log.segments] == bases[2:]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(cut - 1, 1000)
    assert log.read(cut, 1000).data, "the batch holding the new start is still readable"
    assert log.delete_records_before(cut - 1) == cut, "the log start never moves back"
    log.close()

    reopened = open_log({"segment.bytes": 400})
    assert reopened.log_start_offset == cut, "the log start offset must be persisted"
    assert (log_dir / "log-start-offset").exists()


def test_delete_records_up_to_the_end_and_past_it(open_log, batch):
    log = open_log({"segment.bytes": 400})
    _fill(log, batch, 8)
    end = log.log_end_offset

    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(end + 1)
    assert log.delete_records_before(end) == end
    assert bytes(log.read(end, 1000).data) == b""
    assert log.append(batch(b"more"), now_ms=0).base_offset == end


def test_segments_below_the_log_start_go_at_retention_even_without_delete_policy(open_log, batch):
    log = open_log({"segment.bytes": 400, "cleanup.policy": ["compact"]})
    _fill(log, batch, 12)
    log.delete_records_before(log.segments[1].base_offset)
    assert log.enforce_retention(0) == 0, "delete_records_before already removed them"
    assert log.segments[0].base_offset == log.log_start_offset
