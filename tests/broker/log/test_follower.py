"""The log as a replica: batches appended as a follower (offsets and epochs kept) and a
divergent tail cut back (KIP-101/279), compared with logs that only ever held the same batches;
crashes in the middle of a truncation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.broker.log import Log, segment, truncation
from sluice.broker.log import log as log_module
from sluice.broker.log.epochs import EpochEntry
from sluice.broker.log.errors import OffsetOutOfRangeError, UnexpectedAppendOffsetError
from sluice.broker.records.batch import iter_headers
from sluice.broker.records.codec import Record, encode_batch
from sluice.errors import CorruptRecordError

NOW = 5_000
SMALL = {"segment.bytes": 300}  # a few batches per segment


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[Callable[..., Log]]:
    """Open (or reopen) the log named ``name`` under tmp_path; left open: abandoned as by a
    crash."""
    opened: list[Log] = []

    def open_(name: str, config: dict[str, Any] | None = None) -> Log:
        log = Log.open(tmp_path / name, dict(SMALL if config is None else config))
        opened.append(log)
        return log

    yield open_
    for log in opened:
        crash(log)


def crash(log: Log) -> None:
    """What kill -9 leaves: file descriptors gone, nothing flushed or marked clean."""
    for kept in log.segments:
        kept.close()


def make_batch(*values: bytes, **producer: Any) -> bytearray:
    records = [Record(i, 0, None, v) for i, v in enumerate(values)]
    return bytearray(
        encode_batch(
            base_offset=0,
            records=records,
            compression=0,
            base_timestamp=1_000,
            max_timestamp=1_000,
            **producer,
        )
    )


def fetch(log: Log, offset: int = 0) -> list[bytes]:
    """What a follower fetching from ``offset`` receives, response by response."""
    chunks = []
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 20).data)
        chunks.append(data)
        offset = list(iter_headers(data))[-1].next_offset
    return chunks


def copy(leader: Log, follower: Log, offset: int = 0) -> None:
    for chunk in fetch(leader, offset):
        follower.append_as_follower(chunk, now_ms=NOW)


def state(log: Log) -> dict[str, Any]:
    """Everything a reader or the replication sees of a log."""
    end = log.log_end_offset
    data = b"".join(fetch(log, log.log_start_offset))
    return {
        "batches": [(h.base_offset, h.partition_leader_epoch) for h in iter_headers(data)],
        "bytes": data,
        "end": end,
        # the epochs of the batches (an open assigns its leader epoch at the log end as well)
        "epochs": [e for e in log.leader_epochs.entries if e.start_offset < end],
        "lso": log.last_stable_offset,
        "open": log.open_transactions(),
        "aborted": log.aborted_transactions(0, end),
        "producers": {
            pid: (p.epoch, list(p.batches), p.current_txn_first_offset)
            for pid, p in log.producer_states().items()
        },
    }


def plain(*values: bytes) -> bytearray:
    return make_batch(*values)


def txn(pid: int, seq: int, *values: bytes) -> bytearray:
    return make_batch(
        *values, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True
    )


def marker(log: Log, pid: int, *, commit: bool) -> int:
    return log.append_marker(
        producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=0, now_ms=NOW
    )


def leader_log(open_: Callable[..., Log], name: str = "leader-0") -> Log:
    """A leader in epochs 1 and 3 over several segments, with an aborted, a committed and an
    open transaction and plain batches of several records."""
    leader = open_(name)
    leader.become_leader(1)
    leader.append(plain(b"a", b"b"), now_ms=NOW)  # 0-1
    leader.append(txn(7, 0, b"t1", b"t2"), now_ms=NOW)  # 2-3
    leader.append(plain(b"c"), now_ms=NOW)  # 4
    marker(leader, 7, commit=False)  # 5
    leader.become_leader(3)
    leader.append(txn(8, 0, b"u1"), now_ms=NOW)  # 6
    leader.append(plain(b"d", b"e", b"f"), now_ms=NOW)  # 7-9
    marker(leader, 8, commit=True)  # 10
    leader.append(txn(9, 0, b"v1"), now_ms=NOW)  # 11 (left open)
    leader.append(plain(b"g"), now_ms=NOW)  # 12
    return leader


def prefix(open_: Callable[..., Log], leader: Log, end: int, name: str) -> Log:
    """A follower that only ever received the leader's batches below ``end``."""
    reference = open_(name)
    data = b"".join(fetch(leader))
    kept = b"".join(
        data[h.position : h.position + h.size] for h in iter_headers(data) if h.last_offset < end
    )
    reference.append_as_follower(kept, now_ms=NOW)
    return reference


# -- follower append -----------------------------------------------------------------------------


def test_follower_append_keeps_offsets_epochs_and_transactions(
    logs: Callable[..., Log],
) -> None:
    leader = leader_log(logs)
    follower = logs("follower-0")
    copy(leader, follower)
    assert state(follower) == state(leader)
    assert follower.leader_epochs.entries == (EpochEntry(1, 0), EpochEntry(3, 6))
    assert follower.segment_count > 2
    assert follower.open_transactions() == {9: 11}
    assert follower.last_stable_offset == 11
    assert follower.aborted_transactions(0, 13) == [(7, 2)]
    expected = state(leader)
    follower.close()
    assert state(logs("follower-0")) == expected  # the indexes and checkpoints were written


def test_follower_epoch_cache_is_rebuilt_from_the_batches(logs: Callable[..., Log]) -> None:
    leader = leader_log(logs)
    follower = logs("follower-0")
    copy(leader, follower)
    crash(follower)
    (follower.directory / "leader-epoch-checkpoint").unlink()
    assert logs("follower-0").leader_epochs.entries == (EpochEntry(1, 0), EpochEntry(3, 6))


def test_follower_append_of_nothing_changes_nothing(logs: Callable[..., Log]) -> None:
    follower = logs("follower-0")
    assert follower.append_as_follower(b"", now_ms=NOW) == 0
    assert follower.log_end_offset == 0


def test_a_gap_or_an_overlap_is_refused_and_changes_nothing(logs: Callable[..., Log]) -> None:
    leader = leader_log(logs)
    follower = logs("follower-0")
    data = b"".join(fetch(leader))
    headers = list(iter_headers(data))
    first, second, third, fourth = headers[:4]
    follower.append_as_follower(data[: first.size], now_ms=NOW)
    before = state(follower)
    gap = data[third.position : third.position + third.size]
    with pytest.raises(UnexpectedAppendOffsetError, match=r"offsets 4\.\.4 .* at offset 2"):
        follower.append_as_follower(gap, now_ms=NOW)
    overlap = data[: first.size + second.size]
    with pytest.raises(UnexpectedAppendOffsetError, match="at offset 2"):
        follower.append_as_follower(overlap, now_ms=NOW)
    good_then_gap = (
        data[second.position : second.position + second.size]
        + data[fourth.position : fourth.position + fourth.size]
    )
    with pytest.raises(UnexpectedAppendOffsetError, match=r"offsets 5\.\.5 .* at offset 4"):
        follower.append_as_follower(good_then_gap, now_ms=NOW)
    assert state(follower) == before


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b.__setitem__(len(b) - 1, b[-1] ^ 0xFF), "CRC-32C mismatch"),
        (lambda b: b.__setitem__(16, 1), "magic 1"),
        (lambda b: b.__delitem__(slice(len(b) - 3, None)), "past the end"),
    ],
    ids=["crc", "magic", "torn"],
)
def test_a_damaged_batch_is_refused_and_changes_nothing(
    logs: Callable[..., Log], damage: Callable[[bytearray], None], message: str
) -> None:
    leader = leader_log(logs)
    follower = logs("follower-0")
    data = b"".join(fetch(leader))
    first = next(iter_headers(data))
    follower.append_as_follower(data[: first.size], now_ms=NOW)
    before = state(follower)
    rest = bytearray(data[first.size :])
    damage(rest)
    with pytest.raises(CorruptRecordError, match=message):
        follower.append_as_follower(rest, now_ms=NOW)
    assert state(follower) == before


# -- truncation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "offset",
    [12, 11, 10, 6, 5, 4, 2, 0],
    ids=lambda o: f"to-{o}",
)
def test_truncation_equals_a_log_that_only_held_the_prefix(
    logs: Callable[..., Log], offset: int
) -> None:
    """In the active segment, across segments, at segment boundaries, in the middle of the
    aborted (2-5), committed (6-10) and open (11) transactions."""
    leader = leader_log(logs)
    follower = logs("follower-0")
    copy(leader, follower)
    assert follower.truncate_to(offset) == offset
    expected = state(prefix(logs, leader, offset, "reference-0"))
    assert state(follower) == expected
    follower.close()
    assert state(logs("follower-0")) == expected


def test_truncation_inside_a_batch_cuts_the_whole_batch(logs: Callable[..., Log]) -> None:
    leader = leader_log(logs)
    assert leader.truncate_to(8) == 7  # the batch 7-9 goes whole
    assert [offset for offset, _ in state(leader)["batches"]] == [0, 2, 4, 5, 6]
    assert leader.open_transactions() == {8: 6}
    assert leader.last_stable_offset == 6


def test_truncation_of_transactions_restores_producer_state(logs: Callable[..., Log]) -> None:
    leader = leader_log(logs)
    leader.truncate_to(5)  # before the abort marker of producer 7
    assert leader.open_transactions() == {7: 2}
    assert leader.last_stable_offset == 2
    assert leader.aborted_transactions(0, 5) == []
    assert [s.txn_index.entries for s in leader.segments if s.txn_index.entries] == []
    marker(leader, 7, commit=False)  # the coordinator's retry ends it again
    assert leader.aborted_transactions(0, 6) == [(7, 2)]
    assert leader.last_stable_offset == 6


def test_truncation_refuses_offsets_outside_the_log(logs: Callable[..., Log]) -> None:
    leader = leader_log(logs)
    leader.delete_records_before(2)
    before = state(leader)
    for offset in (1, 14, -1):
        with pytest.raises(OffsetOutOfRangeError, match=rf"{offset} is out of range \[2, 13\]"):
            leader.truncate_to(offset)
    assert leader.truncate_to(13) == 13
    assert state(leader) == before


def test_truncation_into_the_batch_holding_the_log_start_empties_the_log(
    logs: Callable[..., Log],
) -> None:
    leader = leader_log(logs)
    leader.delete_records_before(8)  # inside the batch 7-9
    assert leader.truncate_to(9) == 8
    assert (leader.log_start_offset, leader.log_end_offset, leader.segment_count) == (8, 8, 1)
    assert state(leader)["batches"] == []
    assert leader.append(plain(b"next"), now_ms=NOW).base_offset == 8
    expected = state(leader)
    crash(leader)
    assert state(logs("leader-0")) == expected


def test_truncation_then_appends_continue(logs: Callable[..., Log]) -> None:
    leader = leader_log(logs)
    leader.truncate_to(4)
    leader.become_leader(4)
    assert leader.append(plain(b"new"), now_ms=NOW).base_offset == 4
    assert leader.leader_epochs.entries == (EpochEntry(1, 0), EpochEntry(4, 4))
    assert leader.open_transactions() == {7: 2}


def test_divergent_follower_truncates_and_gets_the_leaders_log(logs: Callable[..., Log]) -> None:
    """KIP-101: the old leader kept records the new leader never had; it truncates to the new
    leader's end offset of its last epoch and fetches the new tail."""
    old = logs("old-0")
    new = logs("new-0")
    old.become_leader(1)
    for i in range(5):
        old.append(plain(b"shared-%d" % i), now_ms=NOW)
    copy(old, new)
    for i in range(3):
        old.append(plain(b"lost-%d" % i, b"x"), now_ms=NOW)  # never replicated
    new.become_leader(2)
    for i in range(4):
        new.append(plain(b"new-%d" % i), now_ms=NOW)
    epoch, end = new.end_offset_for_epoch(old.leader_epochs.latest_epoch or 0)
    assert (epoch, end) == (1, 5)
    old.truncate_to(min(end, old.log_end_offset))
    copy(new, old, old.log_end_offset)
    assert state(old) == state(new)
    assert old.leader_epochs.entries == (EpochEntry(1, 0), EpochEntry(2, 5))


# -- crashes -------------------------------------------------------------------------------------


class BoomError(Exception):
    pass


def boom(*args: object, **kwargs: object) -> None:
    raise BoomError


@pytest.mark.parametrize(
    ("target", "name", "truncated"),
    [
        (truncation, "begin", False),  # nothing recorded yet: the old log
        (segment.LogSegment, "truncate_to", True),  # later segments gone, the last one not cut
        (log_module, "rebuild_producer_state", True),
        (truncation, "finish", True),
    ],
    ids=["before-begin", "in-cut", "before-producer-state", "before-finish"],
)
def test_a_crash_during_truncation_loads_the_old_or_the_truncated_log(
    logs: Callable[..., Log], target: object, name: str, truncated: bool
) -> None:
    leader = leader_log(logs)
    follower = logs("follower-0")
    copy(leader, follower)
    old = state(follower)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(target, name, boom)
        with pytest.raises(BoomError):
            follower.truncate_to(4)
    crash(follower)
    reopened = logs("follower-0")
    expected = state(prefix(logs, leader, 4, "reference-0")) if truncated else old
    assert state(reopened) == expected
    assert not (reopened.directory / truncation.TRUNCATE_TO).exists()
    copy(leader, reopened, reopened.log_end_offset)  # and replication goes on from there
    assert state(reopened) == state(leader)


# -- property --------------------------------------------------------------------------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("plain"), st.integers(1, 3)),
        st.tuples(st.just("txn"), st.integers(7, 8)),
        st.tuples(st.just("commit"), st.integers(7, 8)),
        st.tuples(st.just("abort"), st.integers(7, 8)),
        st.tuples(st.just("epoch"), st.just(0)),
    ),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=OPS, cut=st.floats(0, 1))
def test_truncating_anywhere_equals_the_prefix(
    tmp_path_factory: pytest.TempPathFactory, ops: list[tuple[str, int]], cut: float
) -> None:
    base = tmp_path_factory.mktemp("log")
    opened: list[Log] = []

    def open_(name: str) -> Log:
        log = Log.open(base / name, {"segment.bytes": 250})
        opened.append(log)
        return log

    try:
        leader = open_("leader-0")
        leader.become_leader(1)
        sequences = {7: 0, 8: 0}
        for op, arg in ops:
            if op == "plain":
                leader.append(plain(*[b"v"] * arg), now_ms=NOW)
            elif op == "txn":
                leader.append(txn(arg, sequences[arg], b"t"), now_ms=NOW)
                sequences[arg] += 1
            elif op in ("commit", "abort"):
                marker(leader, arg, commit=op == "commit")
            else:
                leader.become_leader(leader.leader_epoch + 1)
        follower = open_("follower-0")
        copy(leader, follower)
        offset = round(cut * leader.log_end_offset)
        end = follower.truncate_to(offset)
        expected = state(prefix(open_, leader, end, "reference-0"))
        assert state(follower) == expected
        follower.close()
        assert state(open_("follower-0")) == expected
    finally:
        for log in opened:
            crash(log)
