"""Rolled segments flushed off the caller's thread, and recovery from the recovery point."""

from __future__ import annotations

import errno
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from sluice.broker.log import Log
from sluice.broker.log.files import read_checkpoint, write_checkpoint
from sluice.broker.log.segment import LogSegment

CONFIG = {"segment.bytes": 1_000, "index.interval.bytes": 100}


def _fill(log, batch, count, start=0):
    for i in range(start, start + count):
        log.append(batch((b"k%d" % i, b"value-%d" % i), timestamp=1_000 + i), now_ms=0)


def _recovery_point(log_dir):
    return read_checkpoint(log_dir / "recovery-point")


@pytest.fixture
def flusher():
    executor = ThreadPoolExecutor(1, thread_name_prefix="test-flusher")
    yield executor
    executor.shutdown()


@pytest.fixture
def gate(monkeypatch):
    """Hold every segment flush made on another thread until ``gate.set()``."""
    opened = threading.Event()
    real_flush = LogSegment.flush

    def flush(segment):
        if threading.current_thread() is not threading.main_thread():
            assert opened.wait(30), "the test never opened the gate"
        real_flush(segment)

    monkeypatch.setattr(LogSegment, "flush", flush)
    return opened


def test_the_recovery_point_is_written_from_the_first_roll_on(open_log, batch, log_dir):
    log = open_log(CONFIG)
    _fill(log, batch, 3)
    assert _recovery_point(log_dir) is None  # one segment: recovered whole anyway
    _fill(log, batch, 10, start=3)
    assert _recovery_point(log_dir) == [log.segments[-1].base_offset]


def test_a_roll_hands_the_old_segment_to_the_flusher(log_dir, batch, flusher, gate, read_all):
    log = Log.open(log_dir, CONFIG, flusher=flusher)
    _fill(log, batch, 30)  # rolls several times while no flush can finish
    assert len(log.segments) > 2
    expected = read_all(log)

    assert _recovery_point(log_dir) is None, "nothing may count as flushed yet"
    gate.set()
    log.flush()  # waits for the rolled segments first
    assert _recovery_point(log_dir) == [log.segments[-1].base_offset]
    log.close()
    assert read_all(Log.open(log_dir, CONFIG)) == expected


def test_retention_waits_for_the_flush_of_what_it_deletes(log_dir, batch, flusher, gate):
    log = Log.open(log_dir, {**CONFIG, "retention.bytes": 1_000}, flusher=flusher)
    _fill(log, batch, 30)
    threading.Timer(0.2, gate.set).start()
    assert log.enforce_retention(now_ms=0) > 0
    assert gate.is_set()
    assert log.log_start_offset == log.segments[0].base_offset
    log.close()


def test_an_unclean_start_recovers_every_segment_from_the_recovery_point(
    open_log, batch, crash, log_dir, read_all
):
    log = open_log(CONFIG)
    _fill(log, batch, 40)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    expected = read_all(log)
    crash(log)
    # as if the flushes of the last three rolls had not finished: a torn tail in the second
    # segment (what a machine crash can leave of unflushed writes) ends the log there
    write_checkpoint(log_dir / "recovery-point", [bases[1]])
    second = log_dir / f"{bases[1]:020d}.log"
    os.truncate(second, second.stat().st_size - 7)

    log = open_log(CONFIG)
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert log.log_end_offset < bases[2]
    assert read_all(log) == expected[: log.log_end_offset]
    assert not (log_dir / f"{bases[2]:020d}.log").exists()
    assert _recovery_point(log_dir) == [bases[1]]
    _fill(log, batch, 3, start=log.log_end_offset)  # and it goes on from there


def test_segments_below_the_recovery_point_are_trusted(open_log, batch, crash, log_dir):
    log = open_log(CONFIG)
    _fill(log, batch, 40)
    bases = [s.base_offset for s in log.segments]
    end = log.log_end_offset
    crash(log)
    first = log_dir / f"{bases[0]:020d}.log"
    with first.open("r+b") as f:  # damage a record (not its header): only a CRC check sees it
        f.seek(first.stat().st_size - 3)
        f.write(b"!")

    assert open_log(CONFIG).log_end_offset == end  # the first segment was not scanned


def test_without_a_recovery_point_every_segment_is_recovered(open_log, batch, crash, log_dir):
    log = open_log(CONFIG)
    _fill(log, batch, 40)
    bases = [s.base_offset for s in log.segments]
    crash(log)
    (log_dir / "recovery-point").unlink()  # a directory written before recovery points
    first = log_dir / f"{bases[0]:020d}.log"
    with first.open("r+b") as f:
        f.seek(first.stat().st_size - 3)
        f.write(b"!")

    log = open_log(CONFIG)
    assert log.log_end_offset < bases[1], "the bad CRC must end the log in the first segment"
    assert [s.base_offset for s in log.segments] == bases[:1]


def test_a_failed_background_flush_keeps_the_recovery_point_and_is_retried_at_close(
    log_dir, batch, flusher, monkeypatch, read_all
):
    log = Log.open(log_dir, CONFIG, flusher=flusher)
    real_fsync = os.fsync
    failing = threading.Event()
    failing.set()

    def fsync(fd):
        if failing.is_set() and threading.current_thread() is not threading.main_thread():
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    _fill(log, batch, 30)
    expected = read_all(log)
    flusher.submit(lambda: None).result()  # every flush before it has run (and failed)
    assert _recovery_point(log_dir) is None

    failing.clear()
    log.close()
    assert _recovery_point(log_dir) == [log.segments[-1].base_offset]
    assert read_all(Log.open(log_dir, CONFIG)) == expected
