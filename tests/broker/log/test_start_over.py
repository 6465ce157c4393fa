"""A follower's log started over at the leader's log start (``Log.truncate_fully_and_start_at``,
Kafka's ``truncateFullyAndStartAt``), and a cut at the log end that drops an epoch the log
never appended in (Kafka's ``truncateTo``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sluice.broker.log import Log
from sluice.broker.log.epochs import EpochEntry
from sluice.broker.log.files import write_checkpoint
from sluice.broker.records.batch import iter_headers

Stored = Any
BatchFactory = Callable[..., bytearray]

NOW = 5_000


def _filled(open_log: Callable[..., Log], batch: BatchFactory) -> Log:
    """A log in epoch 2 with several segments, an idempotent producer and a producer snapshot."""
    log = open_log(**{"segment.bytes": 200})
    log.become_leader(2)
    for i in range(6):
        log.append(batch(b"v%d" % i, producer_id=9, producer_epoch=0, base_sequence=i), now_ms=NOW)
    assert log.segment_count > 2 and log.producer_state(9) is not None
    return log


def test_start_over_past_the_end_empties_everything(
    open_log: Callable[..., Log], batch: BatchFactory, read_all: Callable[[Log], list[Stored]]
) -> None:
    log = _filled(open_log, batch)
    log.set_high_watermark(4)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (100, 100, 100)
    assert log.segment_count == 1 and read_all(log) == []
    assert log.leader_epochs.entries == ()
    assert log.producer_state(9) is None
    assert sorted(p.name for p in log.directory.glob("*.snapshot")) == []
    # a leader's batches continue it
    data = batch(b"x")
    data[0:8] = (100).to_bytes(8, "big")
    data[12:16] = (5).to_bytes(4, "big")  # partition leader epoch (outside the CRC)
    assert log.append_as_follower(bytes(data), now_ms=NOW) == 101
    assert log.leader_epochs.entries == (EpochEntry(5, 100),)
    log.close()
    reopened = Log.open(log.directory, {"segment.bytes": 200})
    try:
        assert (reopened.log_start_offset, reopened.log_end_offset) == (100, 101)
        assert [r.value for r in read_all(reopened)] == [b"x"]
        assert reopened.producer_state(9) is None
    finally:
        reopened.close()


def test_start_over_below_the_end_also_empties_everything(
    open_log: Callable[..., Log], batch: BatchFactory, read_all: Callable[[Log], list[Stored]]
) -> None:
    log = _filled(open_log, batch)
    log.truncate_fully_and_start_at(3)
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)
    assert read_all(log) == [] and log.leader_epochs.entries == ()


def test_a_crash_after_the_new_start_is_written_loads_an_empty_log(
    open_log: Callable[..., Log],
    batch: BatchFactory,
    crash: Callable[[Log], None],
    log_dir: Path,
) -> None:
    """The state a crash leaves between writing the log start offset and deleting the
    segments: the open starts the log over at the new start."""
    log = _filled(open_log, batch)
    for snapshot in log_dir.glob("*.snapshot"):
        snapshot.unlink()  # the first step
    write_checkpoint(log_dir / "log-start-offset", [50])  # the second step
    crash(log)
    reopened = open_log(**{"segment.bytes": 200})
    assert (reopened.log_start_offset, reopened.log_end_offset) == (50, 50)
    assert reopened.producer_state(9) is None


def test_a_cut_at_the_log_end_drops_an_epoch_started_there(
    open_log: Callable[..., Log], batch: BatchFactory
) -> None:
    log = open_log()
    log.become_leader(1)
    log.append(batch(b"a"), now_ms=NOW)
    log.become_leader(4)  # elected, then demoted before appending in epoch 4
    assert log.leader_epochs.entries == (EpochEntry(1, 0), EpochEntry(4, 1))
    assert log.truncate_to(1) == 1
    assert log.leader_epochs.entries == (EpochEntry(1, 0),)
    assert [h.base_offset for h in iter_headers(bytes(log.read(0, 1 << 20).data))] == [0]
