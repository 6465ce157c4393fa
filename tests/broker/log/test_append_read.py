"""Append and read: offsets, whole-batch cuts, bounds, the offset index."""

from __future__ import annotations

import warnings

import pytest

from sluice.broker.log import OffsetOutOfRangeError
from sluice.broker.records.batch import iter_headers, read_header, validate
from sluice.errors import CorruptRecordError


def test_offsets_are_assigned_in_order_and_bytes_read_back_as_written(open_log, batch):
    log = open_log()
    sent = [batch(b"a", b"b", b"c"), batch(b"d"), batch(b"e", b"f")]
    results = [log.append(b, now_ms=5_000) for b in sent]

    assert [(r.base_offset, r.last_offset) for r in results] == [(0, 2), (3, 3), (4, 5)]
    assert all(r.log_append_time_ms == -1 and not r.duplicate for r in results)
    assert log.log_end_offset == log.high_watermark == 6
    read = log.read(0, 1 << 20)
    assert bytes(read.data) == b"".join(sent), "the log must return the batches byte for byte"
    assert (read.high_watermark, read.log_start_offset, read.log_end_offset) == (6, 0, 6)


def test_read_starts_with_the_batch_holding_the_offset(open_log, batch, records_of):
    log = open_log()
    for values in ([b"a", b"b", b"c"], [b"d"], [b"e", b"f"]):
        log.append(batch(*values), now_ms=0)

    for offset, first in [(0, 0), (1, 0), (2, 0), (3, 3), (4, 4), (5, 4)]:
        got = records_of(log.read(offset, 1 << 20).data)
        assert got[0].offset == first, f"read({offset}) should start at batch {first}"
        assert got[-1].offset == 5


def test_max_bytes_cuts_at_batch_boundaries(open_log, batch):
    log = open_log()
    sizes = [len(b) for b in (batch(b"x" * 100), batch(b"y" * 200), batch(b"z" * 50))]
    for value in (b"x" * 100, b"y" * 200, b"z" * 50):
        log.append(batch(value), now_ms=0)

    for max_bytes, expected in [
        (sizes[0] + sizes[1] + sizes[2], 3),
        (sizes[0] + sizes[1] + sizes[2] - 1, 2),
        (sizes[0] + sizes[1], 2),
        (sizes[0] + 10, 1),
        (sizes[0], 1),
    ]:
        data = bytes(log.read(0, max_bytes).data)
        assert len(list(iter_headers(data))) == expected, f"max_bytes={max_bytes}"
        assert len(data) == sum(sizes[:expected])


def test_min_one_batch_returns_an_oversized_first_batch_whole(open_log, batch):
    log = open_log()
    big = batch(b"v" * 5_000)
    log.append(big, now_ms=0)
    log.append(batch(b"small"), now_ms=0)

    assert bytes(log.read(0, 100).data) == big
    assert bytes(log.read(0, 10, min_one_batch=True).data) == big
    assert bytes(log.read(0, 100, min_one_batch=False).data) == b""


def test_upper_bound_is_exclusive_and_never_splits_a_batch(open_log, batch, records_of):
    log = open_log()
    log.append(batch(b"a", b"b"), now_ms=0)  # 0-1
    log.append(batch(b"c", b"d"), now_ms=0)  # 2-3
    log.append(batch(b"e"), now_ms=0)  # 4

    def offsets(offset, bound):
        return [r.offset for r in records_of(log.read(offset, 1 << 20, upper_bound=bound).data)]

    assert offsets(0, 4) == [0, 1, 2, 3]
    assert offsets(0, 3) == [0, 1], "a batch straddling the bound must be left out"
    assert offsets(0, 2) == [0, 1]
    assert offsets(0, 1) == []
    assert offsets(2, 2) == []
    assert offsets(0, 99) == [0, 1, 2, 3, 4]


def test_reads_outside_the_log_are_refused_and_the_end_is_empty(open_log, batch):
    log = open_log()
    log.append(batch(b"a"), now_ms=0)

    assert bytes(log.read(1, 1000).data) == b""
    with pytest.raises(OffsetOutOfRangeError) as info:
        log.read(2, 1000)
    assert (info.value.code, info.value.log_end_offset) == (1, 1)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(-1, 1000)


def test_offset_index_finds_every_offset_across_many_batches(open_log, batch, records_of):
    log = open_log({"index.interval.bytes": 256, "segment.bytes": 8 * 1024})
    for i in range(400):
        log.append(batch(*[b"%d-%d" % (i, j) for j in range(i % 3 + 1)]), now_ms=0)

    assert log.segment_count > 1
    assert all(s.index.entries > 0 for s in log.segments[:-1]), "expected sparse index entries"
    for offset in range(log.log_end_offset):
        got = records_of(log.read(offset, 300).data)
        assert got[0].offset <= offset <= got[-1].offset, f"read({offset}) missed its batch"


def test_offset_index_is_sparse_by_index_interval_bytes(open_log, batch):
    log = open_log({"index.interval.bytes": 1000})
    for _ in range(100):
        log.append(batch(b"v" * 80), now_ms=0)
    segment = log.segments[-1]
    size = len(batch(b"v" * 80))

    expected = segment.size // (1000 // size * size + size)
    assert abs(segment.index.entries - expected) <= 1, (expected, segment.index.entries)


def test_log_append_time_stamps_the_batch_and_keeps_its_crc_valid(open_log, batch):
    log = open_log({"message.timestamp.type": "LogAppendTime"})
    result = log.append(batch(b"a", timestamp=1), now_ms=77_000)

    assert result.log_append_time_ms == 77_000
    data = bytes(log.read(0, 1000).data)
    header = read_header(data)
    validate(data, header)
    assert (header.log_append_time, header.max_timestamp) == (True, 77_000)


def test_a_batch_whose_length_disagrees_with_its_buffer_is_refused(open_log, batch):
    log = open_log()
    with pytest.raises(CorruptRecordError):
        log.append(batch(b"a") + b"extra", now_ms=0)
    with pytest.raises(CorruptRecordError):
        log.append(bytearray(b"\x00" * 30), now_ms=0)
    assert log.log_end_offset == 0


def test_batches_built_by_a_real_client_round_trip(open_log, records_of):
    with warnings.catch_warnings():  # kafka-python's package import warns on Python 3.11
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record.default_records import DefaultRecordBatchBuilder
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=1,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i in range(5):
        builder.append(i, timestamp=1_000 + i, key=b"k%d" % i, value=b"v%d" % i, headers=[])
    log = open_log()
    log.append(bytearray(builder.build()), now_ms=0)
    log.append(bytearray(builder.build()), now_ms=0)

    got = records_of(log.read(0, 1 << 20).data)
    assert [(r.offset, r.key, r.value) for r in got[:5]] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(5)
    ]
    assert [r.offset for r in got[5:]] == [5, 6, 7, 8, 9]


def test_read_after_reopen_returns_the_same_bytes(open_log, batch):
    log = open_log({"segment.bytes": 2048})
    for i in range(50):
        log.append(batch(b"value-%d" % i), now_ms=0)
    before = [bytes(log.read(o, 1 << 20).data) for o in range(50)]
    log.close()

    reopened = open_log({"segment.bytes": 2048})
    assert reopened.log_end_offset == 50
    assert [bytes(reopened.read(o, 1 << 20).data) for o in range(50)] == before
