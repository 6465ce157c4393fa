"""Transactions in the log: markers, the last stable offset, the aborted-transaction index, and
all three surviving crashes, retention and compaction."""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.broker.log import InvalidProducerEpochError, Log
from sluice.broker.records.batch import iter_headers, read_header
from sluice.broker.records.codec import decode_records

SMALL = {"segment.bytes": 600, "index.interval.bytes": 100}
A, B, C = 100, 200, 300


class Producers:
    """Transactional producers writing to one log, each keeping its own sequence numbers."""

    def __init__(self, batch):
        self.batch = batch
        self.seqs: dict[int, int] = {}

    def send(self, log, pid, *values, epoch=0):
        seq = self.seqs.get(pid, 0)
        data = self.batch(
            *(values or (b"v",)),
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=True,
        )
        result = log.append(data, now_ms=0)
        self.seqs[pid] = seq + len(values or (b"v",))
        return result.base_offset

    def end(self, log, pid, *, commit, epoch=0):
        return log.append_marker(
            producer_id=pid, producer_epoch=epoch, commit=commit, coordinator_epoch=3, now_ms=0
        )


@pytest.fixture
def producers(batch):
    return Producers(batch)


def observed(log):
    """Everything a read_committed reader and the coordinator see of the transactions."""
    end = log.log_end_offset
    return (
        log.last_stable_offset,
        log.open_transactions(),
        log.aborted_transactions(log.log_start_offset, end + 1),
        [log.aborted_transactions(o, o + 1) for o in range(log.log_start_offset, end)],
    )


def test_the_lso_waits_for_the_oldest_open_transaction(open_log, batch, producers):
    log = open_log()
    log.append(batch(b"plain"), now_ms=0)
    a = producers.send(log, A)
    b = producers.send(log, B, b"1", b"2")
    c = producers.send(log, C)
    log.append(batch(b"plain"), now_ms=0)
    producers.send(log, A)
    assert (a, b, c) == (1, 2, 4)
    assert log.last_stable_offset == 1, "the LSO stops at A's first offset"
    assert log.first_unstable_offset() == 1
    assert log.open_transactions() == {A: 1, B: 2, C: 4}

    producers.end(log, B, commit=False)  # B is not the oldest: nothing becomes stable
    assert log.last_stable_offset == 1
    producers.end(log, A, commit=True)
    assert log.last_stable_offset == 4, "A and B are over, C is still open"
    assert log.open_transactions() == {C: 4}
    assert log.aborted_transactions(0, log.log_end_offset) == [(B, 2)]

    again = producers.send(log, A)  # A's next transaction begins after C's
    marker = producers.end(log, C, commit=False)
    assert log.last_stable_offset == again
    producers.end(log, A, commit=True)
    assert log.last_stable_offset == log.high_watermark == log.log_end_offset
    assert log.first_unstable_offset() is None
    assert log.open_transactions() == {}
    assert log.aborted_transactions(0, log.log_end_offset) == [(B, 2), (C, 4)]
    assert log.collect_aborted_transactions(0, marker + 1)[-1].last_offset == marker


def test_aborted_transactions_are_those_overlapping_the_range(open_log, producers):
    log = open_log(SMALL)
    spans = []  # (pid, first, last) of every aborted transaction
    for round_ in range(6):
        first = producers.send(log, A, b"x" * 50)
        producers.send(log, B, b"y" * 50)
        producers.send(log, A, b"z" * 50)
        last = producers.end(log, A, commit=round_ % 2 == 1)
        if round_ % 2 == 0:
            spans.append((A, first, last))
        producers.end(log, B, commit=True)
    assert log.segment_count > 2, "transactions span segments"
    end = log.log_end_offset

    for start in range(end + 1):
        for stop in range(start + 1, end + 2):
            expected = [(p, f) for p, f, last in spans if last >= start and f < stop]
            got = log.aborted_transactions(start, stop)
            assert got == expected, f"[{start}, {stop}): expected {expected}, got {got}"


def test_an_abort_is_indexed_in_the_segment_holding_its_marker(open_log, producers, log_dir):
    log = open_log(SMALL)
    first = producers.send(log, A, b"x" * 300)
    producers.send(log, A, b"x" * 300)
    producers.send(log, A, b"x" * 300)
    marker = producers.end(log, A, commit=False)
    log.close()

    holder = max(s.base_offset for s in log.segments if s.base_offset <= marker)
    files = {p.name: p.read_bytes() for p in sorted(log_dir.glob("*.txnindex"))}
    assert len(files) == log.segment_count, "every segment has its .txnindex, empty or not"
    entry = struct.pack(">hqqqq", 0, A, first, marker, marker + 1)
    expected = {f"{s.base_offset:020d}.txnindex": b"" for s in log.segments}
    expected[f"{holder:020d}.txnindex"] = entry
    assert files == expected


def test_a_marker_is_kafkas_control_batch(open_log, producers):
    log = open_log()
    producers.send(log, A)
    offsets = [producers.end(log, A, commit=True), producers.end(log, A, commit=False)]

    data = bytes(log.read(offsets[0], 1 << 20).data)
    headers = list(iter_headers(data))
    assert [h.base_offset for h in headers] == offsets
    for header, kind in zip(headers, (1, 0), strict=True):
        assert (header.is_control, header.is_transactional) == (True, True)
        assert (header.producer_id, header.producer_epoch, header.base_sequence) == (A, 0, -1)
        (record,) = decode_records(data, header)
        assert record.key == struct.pack(">hh", 0, kind)
        assert record.value == struct.pack(">hi", 0, 3)


def test_a_marker_without_an_open_transaction_is_written_but_records_nothing(open_log, producers):
    log = open_log()
    producers.send(log, A)
    producers.end(log, A, commit=False)
    end = log.log_end_offset

    retry = producers.end(log, A, commit=False)  # the coordinator retrying
    unknown = producers.end(log, 999, commit=False)
    assert (retry, unknown) == (end, end + 1)
    assert log.log_end_offset == end + 2
    assert log.aborted_transactions(0, log.log_end_offset) == [(A, 0)]
    assert log.last_stable_offset == log.log_end_offset


def test_epochs_fence_old_producers_and_markers(open_log, producers):
    log = open_log()
    producers.send(log, A, epoch=3)
    with pytest.raises(InvalidProducerEpochError):
        producers.end(log, A, commit=True, epoch=2)
    assert log.open_transactions() == {A: 0}

    # the coordinator aborts a timed-out transaction with the bumped epoch
    producers.end(log, A, commit=False, epoch=4)
    assert log.open_transactions() == {}
    assert log.producer_state(A).epoch == 4
    with pytest.raises(InvalidProducerEpochError):
        producers.send(log, A, epoch=3)

    # the producer re-initialised with a newer epoch starts again at sequence 0
    producers.seqs[A] = 0
    first = producers.send(log, A, epoch=5)
    assert log.open_transactions() == {A: first}


def test_a_retried_transactional_batch_is_a_duplicate(open_log, batch, producers):
    log = open_log()
    producers.send(log, A, b"1", b"2")
    retry = batch(b"1", b"2", producer_id=A, producer_epoch=0, base_sequence=0, transactional=True)
    result = log.append(retry, now_ms=0)
    assert (result.duplicate, result.base_offset, log.log_end_offset) == (True, 0, 2)


def test_read_committed_reads_up_to_the_lso(open_log, batch, producers, records_of):
    log = open_log()
    log.append(batch(b"a"), now_ms=0)
    producers.send(log, A, b"t")
    log.append(batch(b"b"), now_ms=0)
    data = log.read(0, 1 << 20, upper_bound=log.last_stable_offset).data
    assert [r.value for r in records_of(data)] == [b"a"]


def _interleaved(log, batch, producers):
    """A history with committed, aborted and open transactions over several segments."""
    for i in range(8):
        log.append(batch(b"p" * 60), now_ms=0)
        producers.send(log, A + i % 3, b"d" * 60)
        if i % 3 == 2:
            producers.end(log, A + (i - 2) % 3, commit=i % 2 == 0)
            producers.end(log, A + (i - 1) % 3, commit=False)
    producers.send(log, B, b"open")
    producers.send(log, C, b"open")


@pytest.mark.parametrize(
    "damage",
    ["crash", "crash-without-snapshots", "close", "lose-txnindex", "tear-txnindex"],
)
def test_transactions_survive_a_restart(open_log, producers, crash, log_dir, damage):
    log = open_log(SMALL)
    _interleaved(log, producers.batch, producers)
    log.flush()
    assert log.segment_count > 3
    assert log.aborted_transactions(0, log.log_end_offset)
    producers.end(log, A + 1, commit=False)  # unflushed: in the active segment's memory only
    expected = observed(log)
    if damage == "close":
        log.close()
    else:
        crash(log)
    if damage == "crash-without-snapshots":
        for path in log_dir.glob("*.snapshot"):
            path.unlink()
    txn_indexes = sorted(log_dir.glob("*.txnindex"))
    holding = [p for p in txn_indexes if p.stat().st_size]
    if damage == "lose-txnindex":
        txn_indexes[0].unlink()
        holding[0].unlink()
    if damage == "tear-txnindex":
        with holding[0].open("ab") as f:
            f.write(b"\x00" * 7)

    log = open_log(SMALL)
    assert observed(log) == expected
    assert all(p.exists() for p in txn_indexes), "lost indexes are rebuilt"
    assert all(p.stat().st_size % 34 == 0 for p in txn_indexes)

    # and the producers carry on where they were
    assert B in log.open_transactions()
    producers.send(log, B, b"more")
    for pid in sorted(log.open_transactions()):
        producers.end(log, pid, commit=pid != B)
    assert log.last_stable_offset == log.log_end_offset
    assert (B, expected[1][B]) in log.aborted_transactions(expected[1][B], log.log_end_offset)


def test_retention_deletes_the_txnindex_with_its_segment(open_log, producers, log_dir):
    log = open_log({**SMALL, "retention.bytes": 1_500})
    for _ in range(10):
        producers.send(log, A, b"x" * 200)
        producers.end(log, A, commit=False)
    log.flush()
    before = log.aborted_transactions(0, log.log_end_offset)

    assert log.enforce_retention(now_ms=0) > 0
    names = {f"{s.base_offset:020d}.txnindex" for s in log.segments}
    assert {p.name for p in log_dir.glob("*.txnindex")} == names
    start = log.log_start_offset
    assert log.aborted_transactions(start, log.log_end_offset) == [
        (pid, first) for pid, first in before if first >= start - 1
    ]

    log.delete_records_before(log.segments[-1].base_offset)
    assert {p.name for p in log_dir.glob("*.txnindex")} == {
        f"{log.segments[-1].base_offset:020d}.txnindex"
    }


def test_compaction_drops_aborted_data_and_keeps_markers(open_log, batch, producers):
    log = open_log({**SMALL, "cleanup.policy": ["compact"], "min.cleanable.dirty.ratio": 0.01})
    for i in range(12):
        producers.send(log, A, (b"key-%d" % (i % 3), b"committed-%d" % i))
        producers.end(log, A, commit=True)
        producers.send(log, A, (b"key-%d" % (i % 3), b"aborted-%d" % i), (b"other", b"x"))
        producers.end(log, A, commit=False)
    log.append(batch((b"tail", b"t")), now_ms=0)
    aborted = log.aborted_transactions(0, log.log_end_offset)
    markers = _markers(log)
    log.roll(now_ms=0)

    assert log.compact(now_ms=0) > 0

    values = [r.value for _, r in _data_records(log)]
    assert not [v for v in values if v.startswith((b"aborted", b"x"))], values
    assert {b"committed-9", b"committed-10", b"committed-11"} <= set(values)
    assert _markers(log) == markers, "markers are kept"
    assert log.aborted_transactions(0, log.log_end_offset) == aborted, "index carried over"


def _batches(log):
    """Every batch of the log with the bytes holding it, segment after segment."""
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 30).data)
        headers = list(iter_headers(data))
        yield from ((h, data) for h in headers)
        offset = headers[-1].next_offset


def _data_records(log):
    for header, data in _batches(log):
        if not header.is_control:
            for record in decode_records(data, header):
                yield header, record


def _markers(log):
    return [h.base_offset for h, _ in _batches(log) if h.is_control]


# -- property ---------------------------------------------------------------------------------

PIDS = [1, 2, 3]
ops = st.lists(
    st.one_of(
        st.tuples(st.just("data"), st.sampled_from(PIDS), st.integers(1, 3)),
        st.tuples(st.just("plain"), st.integers(1, 3)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from(PIDS)),
        st.tuples(st.sampled_from(["crash", "reopen", "flush"])),
    ),
    max_size=40,
)


class Model:
    """What the log should report, computed the obvious way."""

    def __init__(self):
        self.end = 0
        self.open: dict[int, int] = {}
        self.aborted: list[tuple[int, int, int]] = []  # (pid, first, marker) in marker order

    def data(self, pid, count):
        self.open.setdefault(pid, self.end)
        self.end += count

    def marker(self, pid, commit):
        first = self.open.pop(pid, None)
        if first is not None and not commit:
            self.aborted.append((pid, first, self.end))
        self.end += 1

    def lso(self):
        return min(self.open.values(), default=self.end)

    def aborted_in(self, start, stop):
        if start >= stop:
            return []
        return [(p, f) for p, f, last in self.aborted if last >= start and f < stop]


@settings(
    max_examples=int(os.environ.get("SLUICE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(operations=ops)
def test_transaction_state_matches_a_model_through_crashes(batch, crash, operations):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "p-0"
        config = {"segment.bytes": 300, "index.interval.bytes": 100}
        log = Log.open(directory, config)
        producers, model = Producers(batch), Model()
        for op in operations:
            if op[0] == "data":
                producers.send(log, op[1], *[b"v%d" % i for i in range(op[2])])
                model.data(op[1], op[2])
            elif op[0] == "plain":
                log.append(batch(*[b"p"] * op[1]), now_ms=0)
                model.end += op[1]
            elif op[0] in ("commit", "abort"):
                producers.end(log, op[1], commit=op[0] == "commit")
                model.marker(op[1], op[0] == "commit")
            elif op[0] == "flush":
                log.flush()
            else:
                crash(log) if op[0] == "crash" else log.close()
                log = Log.open(directory, config)
            assert log.log_end_offset == model.end
            assert log.last_stable_offset == model.lso()
            assert log.open_transactions() == model.open
        for start in range(model.end + 1):
            for stop in (start + 1, model.lso(), model.end + 1):
                assert log.aborted_transactions(start, stop) == model.aborted_in(start, stop)
        crash(log)


def test_a_control_batch_appended_as_is_updates_the_index(open_log, producers):
    # a follower (cluster mode) appends the leader's markers through `append`
    log = open_log()
    producers.send(log, A)
    marker_offset = producers.end(log, A, commit=False)
    raw = bytes(log.read(marker_offset, 1 << 20).data)
    header = read_header(raw)
    assert header.is_control

    other = Log.open(log.directory.parent / "copy-0", {})
    try:
        producers.seqs.clear()
        producers.send(other, A)
        other.append(bytearray(raw), now_ms=0)
        assert other.aborted_transactions(0, 2) == [(A, 0)]
        assert other.last_stable_offset == 2
    finally:
        other.close()
