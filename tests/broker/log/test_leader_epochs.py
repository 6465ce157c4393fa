"""Leader epochs in the partition log: the cache's rules (Kafka's ``LeaderEpochFileCache``), the
``leader-epoch-checkpoint`` file, and the log stamping, persisting and truncating them."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from sluice.broker.log.epochs import (
    FENCED_LEADER_EPOCH,
    LEADER_EPOCH,
    LEADER_EPOCH_CHECKPOINT,
    UNKNOWN_LEADER_EPOCH,
    EpochEntry,
    LeaderEpochFileCache,
    LeaderEpochFileError,
    check_current_leader_epoch,
    format_checkpoint,
    parse_checkpoint,
)
from sluice.broker.records.batch import iter_headers

E = EpochEntry


def cache_of(*entries: tuple[int, int]) -> LeaderEpochFileCache:
    return LeaderEpochFileCache(None, [E(*e) for e in entries])


# -- the cache's rules -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "expected"),
    [
        (4, (4, 42)),  # the latest epoch ends at the log end
        (2, (2, 30)),  # a known older epoch ends where the next starts
        (3, (2, 30)),  # an epoch between two known: the one below, ending where the next starts
        (0, (0, 10)),
        (1, (0, 10)),
        (5, (-1, -1)),  # newer than every known epoch
        (-1, (-1, -1)),  # undefined
    ],
)
def test_end_offset_for_follows_kafkas_rules(asked, expected):
    cache = cache_of((0, 0), (2, 10), (4, 30))
    assert cache.end_offset_for(asked, log_end_offset=42) == expected


def test_an_epoch_older_than_every_known_one_ends_where_the_first_known_starts():
    # the log before epoch 3 was deleted: epoch 1 is answered with itself and epoch 3's start
    assert cache_of((3, 100), (5, 200)).end_offset_for(1, log_end_offset=300) == (1, 100)


def test_an_empty_cache_knows_no_epoch():
    assert cache_of().end_offset_for(0, log_end_offset=10) == (-1, -1)
    assert cache_of().latest_epoch is None and cache_of().epoch_for_offset(5) is None


def test_assign_keeps_the_history_monotonic():
    cache = cache_of()
    assert cache.assign(0, 0)
    assert not cache.assign(0, 7)  # same epoch, later offset: nothing to record
    assert cache.assign(1, 7)
    assert cache.assign(1, 5)  # same epoch starting earlier replaces it
    assert cache.entries == (E(0, 0), E(1, 5))
    assert cache.assign(3, 3)  # starts before epoch 1 did: epoch 1 goes
    assert cache.entries == (E(0, 0), E(3, 3))
    assert cache.assign(2, 9)  # an older epoch than the latest: the newer ones go
    assert cache.entries == (E(0, 0), E(2, 9))
    with pytest.raises(ValueError, match="invalid leader epoch entry"):
        cache.assign(-1, 10)


def test_truncate_from_end_forgets_epochs_starting_at_or_past_the_cut():
    cache = cache_of((0, 0), (2, 10), (4, 30))
    assert not cache.truncate_from_end(31)
    assert cache.truncate_from_end(30)
    assert cache.entries == (E(0, 0), E(2, 10))
    assert cache.truncate_from_end(0)
    assert cache.entries == ()


def test_truncate_from_start_collapses_the_epochs_before_the_new_start():
    cache = cache_of((0, 0), (2, 10), (4, 30))
    assert not cache.truncate_from_start(0)
    assert cache.truncate_from_start(15)
    assert cache.entries == (E(2, 15), E(4, 30))
    assert cache.truncate_from_start(30)
    assert cache.entries == (E(4, 30),)
    assert cache.truncate_from_start(50)  # past every start: the latest epoch starts there
    assert cache.entries == (E(4, 50),)
    assert not cache.truncate_from_start(50)


def test_epoch_for_offset():
    cache = cache_of((0, 0), (2, 10), (4, 30))
    assert [cache.epoch_for_offset(o) for o in (0, 9, 10, 29, 30, 99)] == [0, 0, 2, 2, 4, 4]
    assert cache_of((1, 5)).epoch_for_offset(4) is None


def test_current_leader_epoch_check():
    assert check_current_leader_epoch(-1, 7) == 0
    assert check_current_leader_epoch(7, 7) == 0
    assert check_current_leader_epoch(6, 7) == FENCED_LEADER_EPOCH == 74
    assert check_current_leader_epoch(8, 7) == UNKNOWN_LEADER_EPOCH == 75


# -- the checkpoint file -------------------------------------------------------------------------


def test_checkpoint_format_is_kafkas_and_round_trips(tmp_path):
    entries = [E(0, 0), E(3, 1500)]
    assert format_checkpoint(entries) == b"0\n2\n0 0\n3 1500\n"
    assert format_checkpoint([]) == b"0\n0\n"
    assert parse_checkpoint("0\n2\n0 0\n3 1500\n", tmp_path / "x") == entries


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("", 1, "expected version 0"),
        ("1\n0\n", 1, "expected version 0"),
        ("0\nx\n", 2, "expected the number of entries"),
        ("0\n2\n0 0\n", 2, "2 entries announced, 1 found"),
        ("0\n1\n0\n", 3, "expected 'epoch start_offset'"),
        ("0\n1\n0 -5\n", 3, "expected 'epoch start_offset'"),
        ("0\n2\n3 10\n2 20\n", 4, "does not follow"),
        ("0\n2\n3 10\n4 5\n", 4, "does not follow"),
    ],
)
def test_a_malformed_checkpoint_is_refused_with_its_path_and_line(tmp_path, text, line, what):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    with pytest.raises(LeaderEpochFileError, match=f"line {line}: .*{what}") as caught:
        parse_checkpoint(text, path)
    assert str(path) in str(caught.value)


def test_the_cache_writes_every_change_to_its_file(tmp_path):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache = LeaderEpochFileCache(path)
    cache.assign(0, 0)
    assert path.read_text() == "0\n1\n0 0\n"
    cache.assign(2, 40)
    cache.truncate_from_start(10)
    assert path.read_text() == "0\n2\n0 10\n2 40\n"
    cache.truncate_from_end(40)
    assert path.read_text() == "0\n1\n0 10\n"
    assert not list(tmp_path.glob("*.tmp"))


# -- the log -----------------------------------------------------------------------------------


def stamped_epochs(log_dir: Path) -> list[tuple[int, int]]:
    """``(base offset, partition_leader_epoch)`` of every batch on disk."""
    out = []
    for path in sorted(log_dir.glob("*.log")):
        out += [(h.base_offset, h.partition_leader_epoch) for h in iter_headers(path.read_bytes())]
    return out


def test_a_new_log_is_in_epoch_0_and_stamps_it_on_every_batch(open_log, batch, log_dir):
    log = open_log()
    assert log.leader_epoch == 0
    assert (log_dir / LEADER_EPOCH).read_text() == "0\n"
    assert (log_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"
    log.append(batch(b"a", b"b"), now_ms=0)
    log.append_marker(producer_id=5, producer_epoch=0, commit=True, coordinator_epoch=0, now_ms=0)
    log.append(batch(b"c"), now_ms=0)
    log.flush()
    assert stamped_epochs(log_dir) == [(0, 0), (2, 0), (3, 0)]
    assert log.end_offset_for_epoch(0) == (0, 4)


def test_an_election_starts_an_epoch_at_the_log_end_and_survives_reopening(
    open_log, batch, log_dir
):
    log = open_log()
    log.append(batch(b"a", b"b"), now_ms=0)
    log.become_leader(3)
    assert (log_dir / LEADER_EPOCH).read_text() == "3\n"
    assert (log_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n2\n0 0\n3 2\n"
    log.append(batch(b"c"), now_ms=0)
    with pytest.raises(ValueError, match="older than the partition's 3"):
        log.become_leader(2)
    log.close()

    log = open_log()
    assert log.leader_epoch == 3
    assert stamped_epochs(log_dir) == [(0, 0), (2, 3)]
    assert [log.end_offset_for_epoch(e) for e in (0, 1, 2, 3, 4)] == [
        (0, 2),
        (0, 2),
        (0, 2),
        (3, 3),
        (-1, -1),
    ]


def test_a_log_without_epochs_loads_and_starts_epoch_0_at_its_end(open_log, batch, log_dir):
    """A partition written by a Sluice before epochs: batches stamped -1, no epoch files."""
    log = open_log()
    for value in (b"a", b"b", b"c"):
        log.append(batch(value), now_ms=0)
    log.close()
    (log_dir / LEADER_EPOCH).unlink()
    (log_dir / LEADER_EPOCH_CHECKPOINT).unlink()
    segment = log_dir / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    for header in iter_headers(data):
        struct.pack_into(">i", data, header.position + 12, -1)
    segment.write_bytes(data)

    log = open_log()
    assert log.leader_epoch == 0
    assert log.leader_epochs.entries == (E(0, 3),)
    assert (log_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 3\n"
    assert log.end_offset_for_epoch(0) == (0, 3)
    assert log.leader_epochs.epoch_for_offset(1) is None
    log.append(batch(b"d"), now_ms=0)
    log.flush()
    assert stamped_epochs(log_dir) == [(0, -1), (1, -1), (2, -1), (3, 0)]


def test_a_missing_checkpoint_is_rebuilt_from_the_batches(open_log, batch, log_dir):
    log = open_log()
    log.append(batch(b"a"), now_ms=0)
    log.become_leader(2)
    log.append(batch(b"b"), now_ms=0)
    log.append(batch(b"c"), now_ms=0)
    log.close()
    (log_dir / LEADER_EPOCH_CHECKPOINT).unlink()

    log = open_log()
    assert log.leader_epochs.entries == (E(0, 0), E(2, 1))
    assert log.leader_epoch == 2


def test_checkpoint_entries_past_the_log_end_are_dropped_at_open(open_log, batch, log_dir):
    """A crash after the checkpoint named a new epoch but before its batch reached the disk."""
    log = open_log()
    log.append(batch(b"a"), now_ms=0)
    log.close()
    (log_dir / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n0 0\n1 5\n")

    log = open_log()
    assert log.leader_epochs.entries == (E(0, 0),)
    assert (log_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n0 0\n"


def test_a_malformed_epoch_file_stops_the_open_naming_it(open_log, log_dir):
    open_log().close()
    (log_dir / LEADER_EPOCH).write_text("zero\n")
    with pytest.raises(LeaderEpochFileError, match=f"{log_dir / LEADER_EPOCH}: line 1"):
        open_log()
    (log_dir / LEADER_EPOCH).write_text("0\n")
    (log_dir / LEADER_EPOCH_CHECKPOINT).write_text("0\n3\n0 0\n")
    with pytest.raises(LeaderEpochFileError, match="remove the file to rebuild it"):
        open_log()


def test_delete_records_and_retention_move_the_first_epochs_start(open_log, batch, log_dir):
    log = open_log({"segment.bytes": 300})
    for i in range(6):
        if i == 3:
            log.become_leader(1)
        log.append(batch(b"v" * 50), now_ms=0)
    assert log.leader_epochs.entries == (E(0, 0), E(1, 3))

    log.delete_records_before(2)
    assert log.leader_epochs.entries == (E(0, 2), E(1, 3))
    log.delete_records_before(4)
    assert log.leader_epochs.entries == (E(1, 4),)
    assert (log_dir / LEADER_EPOCH_CHECKPOINT).read_text() == "0\n1\n1 4\n"
    assert log.end_offset_for_epoch(0) == (0, 4)
