"""Property: whatever the appends, rolls, reopens and crashes, reads return what was appended."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.broker.log import Log
from sluice.broker.records.batch import read_header

CONFIG = {"segment.bytes": 700, "index.interval.bytes": 150, "segment.index.bytes": 64}

values = st.binary(max_size=120)
appends = st.tuples(
    st.just("append"),
    st.lists(values, min_size=1, max_size=4),
    st.sampled_from([0, 0, 1, 4]),
)
reads = st.tuples(st.just("read"), st.integers(0, 10_000), st.integers(0, 1_500))
ops = st.lists(
    st.one_of(appends, reads, st.tuples(st.sampled_from(["reopen", "crash"]))), max_size=40
)


@settings(
    max_examples=int(os.environ.get("SLUICE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(operations=ops)
def test_reads_return_exactly_what_was_appended(batch, crash, operations):
    # `batch` and `crash` are pure helpers: sharing them between examples is safe.
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "p-0"
        log = Log.open(directory, CONFIG)
        stored: list[bytes] = []  # every batch as it should be on disk, offsets assigned
        try:
            for op in operations:
                if op[0] == "append":
                    data = batch(*op[1], compression=op[2], timestamp=len(stored))
                    result = log.append(data, now_ms=0)
                    assert result.base_offset == _end(stored)
                    stored.append(bytes(data))
                elif op[0] == "read":
                    _check_read(log, stored, op[1], op[2])
                elif op[0] == "reopen":
                    log.close()
                    log = Log.open(directory, CONFIG)
                else:
                    crash(log)
                    log = Log.open(directory, CONFIG)
                assert log.log_end_offset == _end(stored)
            _check_all(log, stored)
        finally:
            crash(log)


def _end(stored: list[bytes]) -> int:
    return read_header(stored[-1]).next_offset if stored else 0


def _check_read(log: Log, stored: list[bytes], offset_seed: int, max_bytes: int) -> None:
    end = _end(stored)
    offset = offset_seed % (end + 1)
    got = bytes(log.read(offset, max_bytes).data)
    first = next((i for i, b in enumerate(stored) if read_header(b).last_offset >= offset), None)
    if first is None:
        assert got == b""
        return
    expected = stored[first]  # min_one_batch: the first batch whole, even past max_bytes
    for following in stored[first + 1 :]:
        if len(expected) + len(following) > max_bytes:
            break
        if not _same_segment(log, stored[first], following):
            break  # like Kafka, one read returns batches of one segment
        expected += following
    assert got == expected, f"read({offset}, {max_bytes}) returned other bytes"


def _same_segment(log: Log, a: bytes, b: bytes) -> bool:
    bases = [s.base_offset for s in log.segments]

    def segment_of(batch: bytes) -> int:
        return max(x for x in bases if x <= read_header(batch).base_offset)

    return segment_of(a) == segment_of(b)


def _check_all(log: Log, stored: list[bytes]) -> None:
    offset, chunks = 0, []
    while offset < log.log_end_offset:
        data = bytes(log.read(offset, 1 << 30).data)
        chunks.append(data)
        position = 0
        while position < len(data):
            header = read_header(data, position)
            position += header.size
            offset = header.next_offset
    assert b"".join(chunks) == b"".join(stored)


COMPACTED = {
    "cleanup.policy": ["compact"],
    "segment.bytes": 400,
    "index.interval.bytes": 100,
    "min.cleanable.dirty.ratio": 0.01,
    "delete.retention.ms": 10,
}
writes = st.tuples(
    st.just("write"),
    st.lists(
        st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", None]), st.one_of(st.none(), values)),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from([0, 2]),
)
compaction_ops = st.lists(
    st.one_of(writes, st.tuples(st.sampled_from(["compact", "reopen", "crash"]))), max_size=40
)


@settings(
    max_examples=int(os.environ.get("SLUICE_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(operations=compaction_ops)
def test_compaction_keeps_the_latest_value_of_every_key(batch, crash, read_all, operations):
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "c-0"
        log = Log.open(directory, COMPACTED)
        written: dict[int, tuple[bytes | None, bytes | None]] = {}  # offset -> (key, value)
        now = 0
        try:
            for op in operations:
                now += 7
                if op[0] == "write":
                    base = log.append(batch(*op[1], compression=op[2]), now_ms=now).base_offset
                    written.update({base + i: kv for i, kv in enumerate(op[1])})
                elif op[0] == "compact":
                    log.compact(now)
                    cleaned_end = log.segments[-1].base_offset
                    kept = [r for r in read_all(log) if r.offset < cleaned_end]
                    for r in kept:
                        later = [
                            o
                            for o, kv in written.items()
                            if r.offset < o < cleaned_end and kv[0] == r.key
                        ]
                        assert r.key is not None and not later, f"{r} should have been removed"
                elif op[0] == "reopen":
                    log.close()
                    log = Log.open(directory, COMPACTED)
                else:
                    crash(log)
                    log = Log.open(directory, COMPACTED)
            survivors = read_all(log)
            for r in survivors:
                assert written[r.offset] == (r.key, r.value), f"{r} was never written there"
            last = {kv[0]: (o, kv[1]) for o, kv in sorted(written.items()) if kv[0] is not None}
            found = {r.key: (r.offset, r.value) for r in survivors}
            for key, (offset, value) in last.items():
                assert found.get(key) == (offset, value) or (value is None and key not in found)
            assert log.log_end_offset == (max(written) + 1 if written else 0)
        finally:
            crash(log)
