"""Idempotent producers: duplicates, sequence gaps, epoch fencing, state across restarts."""

from __future__ import annotations

import pytest

from sluice.broker.log import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)

PID = 1_000


@pytest.fixture
def produce(batch):
    def produce_(log, seq, count=1, *, epoch=0, pid=PID, now_ms=0):
        values = [b"seq-%d" % (seq + i) for i in range(count)]
        data = batch(*values, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
        return log.append(data, now_ms=now_ms)

    return produce_


def test_a_retried_batch_gets_its_original_offsets_and_is_not_written_again(open_log, produce):
    log = open_log()
    first = produce(log, 0, 3)
    second = produce(log, 3, 2)
    end, size = log.log_end_offset, log.size_in_bytes

    for seq, count, original in [(0, 3, first), (3, 2, second)]:
        retry = produce(log, seq, count)
        assert retry.duplicate
        assert (retry.base_offset, retry.last_offset) == (
            original.base_offset,
            original.last_offset,
        )
    assert (log.log_end_offset, log.size_in_bytes) == (end, size), "a duplicate appends nothing"


def test_only_the_last_five_batches_are_remembered(open_log, produce):
    log = open_log()
    for seq in range(7):
        produce(log, seq)

    assert produce(log, 2).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 1)
    assert [b.first_seq for b in log.producer_state(PID).batches] == [2, 3, 4, 5, 6]


def test_a_sequence_gap_is_out_of_order(open_log, produce):
    log = open_log()
    produce(log, 0, 2)
    with pytest.raises(OutOfOrderSequenceError) as info:
        produce(log, 3)
    assert info.value.code == 45
    assert produce(log, 2).base_offset == 2


def test_an_older_epoch_is_fenced_and_a_newer_one_must_start_at_zero(open_log, produce):
    log = open_log()
    produce(log, 0, epoch=3)
    with pytest.raises(InvalidProducerEpochError) as info:
        produce(log, 1, epoch=2)
    assert info.value.code == 47
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 5, epoch=4)
    assert not produce(log, 0, epoch=4).duplicate
    assert log.producer_state(PID).epoch == 4
    with pytest.raises(InvalidProducerEpochError):
        produce(log, 1, epoch=3)


def test_an_unknown_producer_must_start_at_sequence_zero(open_log, produce):
    log = open_log()
    with pytest.raises(UnknownProducerIdError) as info:
        produce(log, 5)
    assert info.value.code == 59
    assert log.log_end_offset == 0
    produce(log, 0)


def test_sequence_numbers_wrap_around(open_log, produce):
    log = open_log()
    produce(log, 0)
    state = log.producer_state(PID)
    state.batches[-1] = type(state.batches[-1])(2**31 - 1, 2**31 - 1, 0, 0, 0)
    assert not produce(log, 0).duplicate


def test_producers_without_ids_are_never_checked(open_log, batch):
    log = open_log()
    log.append(batch(b"a"), now_ms=0)
    assert not log.append(batch(b"a"), now_ms=0).duplicate
    assert log.log_end_offset == 2


def test_producer_state_survives_a_clean_restart(open_log, produce):
    log = open_log({"segment.bytes": 300})
    for seq in range(0, 30, 3):
        produce(log, seq, 3)
    log.close()

    log = open_log({"segment.bytes": 300})
    assert produce(log, 27, 3).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        produce(log, 31)
    assert produce(log, 30).base_offset == 30


def test_producer_state_is_rebuilt_after_a_crash_from_snapshot_and_log(
    open_log, produce, crash, log_dir
):
    log = open_log({"segment.bytes": 300})
    for seq in range(0, 30, 3):
        produce(log, seq, 3)
    produce(log, 0, pid=PID + 1, epoch=2)
    crash(log)
    assert list(log_dir.glob("*.snapshot")), "rolls must have written snapshots"

    log = open_log({"segment.bytes": 300})
    assert produce(log, 27, 3).duplicate
    assert produce(log, 0, pid=PID + 1, epoch=2).duplicate
    assert log.producer_state(PID + 1).epoch == 2


def test_a_damaged_snapshot_is_ignored_and_the_log_replayed(open_log, produce, log_dir):
    log = open_log()
    produce(log, 0, 2)
    log.close()
    (snapshot,) = log_dir.glob("*.snapshot")
    snapshot.write_bytes(snapshot.read_bytes()[:-3] + b"bad")

    log = open_log()
    assert produce(log, 0, 2).duplicate
    assert produce(log, 2).base_offset == 2


def test_transactional_batches_set_the_first_unstable_offset(open_log, batch):
    log = open_log()
    log.append(batch(b"plain"), now_ms=0)
    log.append(
        batch(b"t1", producer_id=9, producer_epoch=0, base_sequence=0, transactional=True),
        now_ms=0,
    )
    assert log.first_unstable_offset() == 1
