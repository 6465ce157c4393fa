"""Crash recovery and failed writes: torn tails, bad CRCs, lost indexes, a full disk."""

from __future__ import annotations

import errno
import os

import pytest

from sluice.broker.records.batch import iter_headers
from sluice.errors import StorageError

CONFIG = {"segment.bytes": 1_000, "index.interval.bytes": 100}


def _fill(log, batch, count, start=0):
    for i in range(start, start + count):
        log.append(batch((b"k%d" % i, b"value-%d" % i), timestamp=1_000 + i), now_ms=0)


def _snapshot(log):
    """Everything a reader can observe, offset by offset."""
    return (
        log.log_start_offset,
        log.log_end_offset,
        [bytes(log.read(o, 1 << 20).data) for o in range(log.log_start_offset, log.log_end_offset)],
        [log.offset_for_timestamp(1_000 + i) for i in range(log.log_end_offset + 1)],
    )


def test_a_clean_close_leaves_a_marker_that_the_next_open_consumes(open_log, batch, log_dir):
    log = open_log(CONFIG)
    _fill(log, batch, 5)
    log.close()
    assert (log_dir / "clean-shutdown").exists()
    open_log(CONFIG)
    assert not (log_dir / "clean-shutdown").exists()


def test_an_unclean_shutdown_loses_nothing_the_files_hold(open_log, batch, crash):
    log = open_log(CONFIG)
    _fill(log, batch, 40)
    expected = _snapshot(log)
    crash(log)

    log = open_log(CONFIG)
    assert _snapshot(log) == expected


@pytest.mark.parametrize("stop", ["crash", "close"])
def test_a_torn_last_batch_is_truncated(open_log, batch, crash, stop):
    log = open_log(CONFIG)
    _fill(log, batch, 12)
    expected = _snapshot(log)
    active = log.segments[-1].log_path
    crash(log) if stop == "crash" else log.close()  # a clean close trusts the file, but not
    # a tail that does not end on a batch boundary
    size = active.stat().st_size
    torn = batch((b"k", b"half of this batch reached the disk"))
    with active.open("ab") as f:
        f.write(torn[: len(torn) // 2])

    log = open_log(CONFIG)
    assert active.stat().st_size == size
    assert _snapshot(log) == expected
    assert log.append(batch(b"next"), now_ms=0).base_offset == expected[1]


@pytest.mark.parametrize("stop", ["crash", "close"])
@pytest.mark.parametrize("garbage", [b"\x00" * 200, b"\x07" * 10])
def test_a_tail_of_garbage_is_truncated(open_log, batch, crash, garbage, stop):
    log = open_log(CONFIG)
    _fill(log, batch, 5)
    expected = _snapshot(log)
    crash(log) if stop == "crash" else log.close()
    with log.segments[-1].log_path.open("ab") as f:
        f.write(garbage)

    assert _snapshot(open_log(CONFIG)) == expected


def test_a_bad_crc_truncates_the_tail_from_that_batch(open_log, batch, crash, read_all):
    log = open_log({"segment.bytes": 100_000})
    _fill(log, batch, 10)
    path = log.segments[-1].log_path
    crash(log)
    data = bytearray(path.read_bytes())
    sixth = list(iter_headers(data))[6]
    data[sixth.position + sixth.size - 3] ^= 0xFF  # inside the last record's value
    path.write_bytes(bytes(data))

    log = open_log({"segment.bytes": 100_000})
    assert log.log_end_offset == 6
    assert [r.offset for r in read_all(log)] == list(range(6))
    assert path.stat().st_size == sixth.position
    assert log.append(batch(b"again"), now_ms=0).base_offset == 6


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage", "empty"])
def test_damaged_or_missing_indexes_are_rebuilt(open_log, batch, log_dir, damage):
    log = open_log(CONFIG)
    _fill(log, batch, 60)
    assert log.segment_count > 2
    expected = _snapshot(log)
    log.close()
    for path in [*log_dir.glob("*.index"), *log_dir.glob("*.timeindex")]:
        if damage == "delete":
            path.unlink()
        elif damage == "truncate":
            path.write_bytes(path.read_bytes()[:-3])
        elif damage == "garbage":
            path.write_bytes(os.urandom(96))
        else:
            path.write_bytes(b"")

    log = open_log(CONFIG)
    assert _snapshot(log) == expected
    assert all(s.index.path.exists() and s.time_index.path.exists() for s in log.segments)


def test_index_files_without_a_log_are_removed(open_log, batch, log_dir):
    log = open_log(CONFIG)
    _fill(log, batch, 3)
    log.close()
    orphan = log_dir / f"{999:020d}.index"
    orphan.write_bytes(b"\x00" * 8)

    open_log(CONFIG)
    assert not orphan.exists()


class FullDisk:
    """``os.pwrite`` that, while ``full``, writes half of what it is given and fails."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        self.real = os.pwrite
        monkeypatch.setattr(os, "pwrite", self)

    def __call__(self, fd: int, data: bytes, position: int) -> int:
        if self.full:
            self.real(fd, bytes(data)[: len(data) // 2], position)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.real(fd, data, position)


def test_a_full_disk_fails_the_append_and_leaves_the_log_readable(
    open_log, batch, monkeypatch, log_dir
):
    disk = FullDisk(monkeypatch)
    log = open_log(CONFIG)
    _fill(log, batch, 10)
    expected = _snapshot(log)
    active = log.segments[-1].log_path
    size = active.stat().st_size

    disk.full = True
    with pytest.raises(StorageError, match="No space left"):
        log.append(batch(b"x" * 50), now_ms=0)
    assert active.stat().st_size == size, "the partial write must be cut off"
    assert _snapshot(log) == expected

    disk.full = False
    assert log.append(batch((b"k10", b"value-10"), timestamp=1_010), now_ms=0).base_offset == 10
    _fill(log, batch, 5, start=11)
    after = _snapshot(log)
    log.close()
    assert _snapshot(open_log(CONFIG)) == after


def test_a_failed_roll_leaves_the_log_usable(open_log, batch, monkeypatch):
    log = open_log({"segment.bytes": 300})
    _fill(log, batch, 3)
    real_open = os.open

    def no_new_files(path, flags, *args):
        if flags & os.O_CREAT and str(path).endswith(".log"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", no_new_files)
    end = log.log_end_offset
    with pytest.raises(StorageError):
        _fill(log, batch, 10, start=3)
    assert log.log_end_offset >= end
    before = _snapshot(log)
    monkeypatch.setattr(os, "open", real_open)

    _fill(log, batch, 5, start=log.log_end_offset)
    assert _snapshot(log)[2][: len(before[2])] == before[2]
