"""Segments: rolling by size, time and full index; the time index and timestamp lookups."""

from __future__ import annotations

import os


def test_roll_by_segment_bytes_names_segments_by_base_offset(open_log, batch, log_dir):
    log = open_log({"segment.bytes": 1000})
    one = len(batch(b"v" * 100))
    for _ in range(30):
        log.append(batch(b"v" * 100), now_ms=0)

    per_segment = 1000 // one
    assert log.segment_count == -(-30 // per_segment)
    assert all(s.size <= 1000 for s in log.segments)
    bases = [s.base_offset for s in log.segments]
    assert bases == list(range(0, 30, per_segment))
    names = sorted(p.name for p in log_dir.glob("*.log"))
    assert names == [f"{b:020d}.log" for b in bases]
    assert sorted(p.name for p in log_dir.glob("*.index")) == [f"{b:020d}.index" for b in bases]


def test_a_batch_larger_than_segment_bytes_gets_a_segment_of_its_own(open_log, batch):
    log = open_log({"segment.bytes": 100})
    log.append(batch(b"small"), now_ms=0)
    log.append(batch(b"x" * 500), now_ms=0)
    log.append(batch(b"small"), now_ms=0)

    assert [s.base_offset for s in log.segments] == [0, 1, 2]


def test_roll_by_segment_ms_uses_the_record_timestamps(open_log, batch):
    log = open_log({"segment.ms": 1_000})
    log.append(batch(b"a", timestamp=10_000), now_ms=0)
    log.append(batch(b"b", timestamp=10_900), now_ms=0)
    assert log.segment_count == 1
    log.append(batch(b"c", timestamp=11_001), now_ms=0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_by_segment_ms_without_timestamps_uses_the_clock_passed_in(open_log, batch):
    log = open_log({"segment.ms": 1_000})
    log.append(batch(b"a", timestamp=-1), now_ms=50_000)
    log.append(batch(b"b", timestamp=-1), now_ms=50_900)
    assert log.segment_count == 1
    log.append(batch(b"c", timestamp=-1), now_ms=51_001)
    assert log.segment_count == 2


def test_roll_when_the_offset_index_is_full(open_log, batch):
    log = open_log({"segment.index.bytes": 24, "index.interval.bytes": 0})  # 3 entries
    for _ in range(10):
        log.append(batch(b"v"), now_ms=0)

    assert log.segment_count > 1
    assert all(s.index.entries <= 3 for s in log.segments)


def test_a_rolled_segment_is_flushed_and_snapshots_producer_state(open_log, batch, log_dir):
    log = open_log({"segment.bytes": 200})
    log.append(batch(b"x" * 100, producer_id=7, producer_epoch=0, base_sequence=0), now_ms=0)
    log.append(batch(b"y" * 100, producer_id=7, producer_epoch=0, base_sequence=1), now_ms=0)

    assert (log_dir / f"{1:020d}.snapshot").exists()
    first = log.segments[0]
    assert first.time_index.last_entry() == (1_000, 0), "an inactive segment indexes its max"


def test_offset_for_timestamp_finds_the_first_record_at_or_after(open_log, batch):
    log = open_log({"segment.bytes": 300, "index.interval.bytes": 0})
    for i in range(20):  # batch i: offsets 2i, 2i+1 with timestamps 1000+100i, 1000+100i+50
        log.append(batch(b"a", b"b", timestamps=[1_000 + 100 * i, 1_050 + 100 * i]), now_ms=0)
    assert log.segment_count > 2

    assert log.offset_for_timestamp(0) == (0, 1_000)
    assert log.offset_for_timestamp(1_000) == (0, 1_000)
    assert log.offset_for_timestamp(1_001) == (1, 1_050)
    assert log.offset_for_timestamp(1_051) == (2, 1_100)
    assert log.offset_for_timestamp(1_000 + 100 * 13 + 7) == (27, 1_000 + 100 * 13 + 50)
    assert log.offset_for_timestamp(1_000 + 100 * 19 + 50) == (39, 2_950)
    assert log.offset_for_timestamp(2_951) is None


def test_offset_for_timestamp_with_timestamps_out_of_order(open_log, batch):
    log = open_log({"index.interval.bytes": 0})
    log.append(batch(b"a", timestamp=5_000), now_ms=0)  # 0
    log.append(batch(b"b", timestamp=3_000), now_ms=0)  # 1
    log.append(batch(b"c", timestamp=6_000), now_ms=0)  # 2

    assert log.offset_for_timestamp(4_000) == (0, 5_000)
    assert log.offset_for_timestamp(5_500) == (2, 6_000)


def test_offset_for_timestamp_skips_records_below_the_log_start(open_log, batch):
    log = open_log()
    log.append(batch(b"a", b"b", b"c", timestamps=[1_000, 2_000, 3_000]), now_ms=0)
    log.delete_records_before(2)

    assert log.offset_for_timestamp(0) == (2, 3_000)


def test_max_timestamp_names_the_record_holding_it(open_log, batch):
    log = open_log({"segment.bytes": 200})
    assert log.max_timestamp() is None
    log.append(batch(b"a", b"b", timestamps=[1_000, 9_000]), now_ms=0)
    log.append(batch(b"c" * 150, timestamp=2_000), now_ms=0)
    log.append(batch(b"d", b"e", timestamps=[9_000, 3_000]), now_ms=0)

    assert log.segment_count > 1
    assert log.max_timestamp() == (1, 9_000)


def test_timestamps_survive_reopen(open_log, batch):
    config = {"segment.bytes": 300, "index.interval.bytes": 100}
    log = open_log(config)
    for i in range(20):
        log.append(batch(b"v", timestamp=1_000 + i), now_ms=0)
    expected = [log.offset_for_timestamp(1_000 + i) for i in range(21)], log.max_timestamp()
    log.close()

    log = open_log(config)
    assert ([log.offset_for_timestamp(1_000 + i) for i in range(21)], log.max_timestamp()) == (
        expected
    )


def test_flush_messages_fsyncs_after_that_many_records(open_log, batch, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    log = open_log({"flush.messages": 3})
    synced.clear()  # creating the log's files fsyncs them
    log.append(batch(b"a", b"b"), now_ms=0)
    assert not synced, "two records are below flush.messages"
    log.append(batch(b"c"), now_ms=0)
    assert synced, "the third record must trigger an fsync"


def test_flush_if_due_follows_flush_ms(open_log, batch):
    log = open_log({"flush.ms": 1_000})
    assert not log.flush_if_due(5_000), "nothing to flush"
    log.append(batch(b"a"), now_ms=10_000)
    log.append(batch(b"b"), now_ms=10_600)
    assert not log.flush_if_due(10_999)
    assert log.flush_if_due(11_000)
    assert not log.flush_if_due(20_000)


def test_delete_removes_the_directory(open_log, batch, log_dir):
    log = open_log()
    log.append(batch(b"a"), now_ms=0)
    log.delete()
    assert not log_dir.exists()
