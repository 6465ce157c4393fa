"""Compaction: the latest value per key, tombstones, lag, crash-safe segment swaps."""

from __future__ import annotations

from sluice.broker.records.batch import iter_headers

DAY = 86_400_000
COMPACT = {"cleanup.policy": ["compact"], "segment.bytes": 600, "min.cleanable.dirty.ratio": 0.1}


def _kv(i: int, key: int) -> tuple[bytes, bytes]:
    return b"key-%d" % key, b"value-%d" % i


def _fill(log, batch, writes, *, timestamp=1_000):
    """Append ``(key, value)`` pairs two per batch; returns the latest offset per key."""
    latest = {}
    for i in range(0, len(writes), 2):
        result = log.append(batch(*writes[i : i + 2], timestamp=timestamp), now_ms=0)
        for j, (key, _) in enumerate(writes[i : i + 2]):
            latest[key] = result.base_offset + j
    return latest


def test_only_the_latest_value_of_each_key_survives_with_its_offset(open_log, batch, read_all):
    log = open_log(COMPACT)
    writes = [_kv(i, i % 5) for i in range(60)]
    latest = _fill(log, batch, writes)
    active = log.segments[-1].base_offset
    before = read_all(log)
    assert log.segment_count > 3

    removed = log.compact(now_ms=10_000)

    after = read_all(log)
    cleaned = [r for r in after if r.offset < active]
    assert removed == len(before) - len(after) > 0
    assert [r.offset for r in after] == sorted(r.offset for r in after)
    for r in cleaned:
        assert latest[r.key] == r.offset or latest[r.key] >= active, f"stale {r} survived"
    assert [r for r in after if r.offset >= active] == [r for r in before if r.offset >= active]
    surviving = {r.key: r.value for r in after}
    assert surviving == {key: value for key, value in writes}, "every key keeps its last value"
    assert log.log_end_offset == len(writes)


def test_compaction_results_survive_a_reopen_and_a_second_pass_finds_nothing(
    open_log, batch, read_all
):
    log = open_log(COMPACT)
    _fill(log, batch, [_kv(i, i % 3) for i in range(40)])
    log.compact(now_ms=10_000)
    after = read_all(log)

    assert log.compact(now_ms=10_000) == 0
    log.close()
    log = open_log(COMPACT)
    assert read_all(log) == after


def test_tombstones_are_kept_delete_retention_ms_after_the_pass_that_saw_them(
    open_log, batch, read_all
):
    log = open_log({**COMPACT, "delete.retention.ms": DAY})
    _fill(log, batch, [_kv(i, i % 4) for i in range(20)])
    log.append(batch((b"key-1", None), (b"key-2", None)), now_ms=0)
    _fill(log, batch, [_kv(i, 100 + i) for i in range(30)])  # push the tombstones out of the active

    log.compact(now_ms=5_000)
    keys = {r.key: r.value for r in read_all(log)}
    assert keys[b"key-1"] is None and keys[b"key-2"] is None, "tombstones kept at first"

    assert log.compact(now_ms=5_000 + DAY - 1) == 0
    assert b"key-1" in {r.key for r in read_all(log)}

    assert log.compact(now_ms=5_000 + DAY) == 2
    keys = {r.key for r in read_all(log)}
    assert b"key-1" not in keys and b"key-2" not in keys
    assert {b"key-0", b"key-3"} <= keys


def test_records_without_a_key_are_dropped(open_log, batch, read_all):
    log = open_log(COMPACT)
    for i in range(20):
        log.append(batch(b"no-key-%d" % i, (b"k", b"v%d" % i)), now_ms=0)
    active = log.segments[-1].base_offset

    log.compact(now_ms=0)
    assert all(r.key is not None for r in read_all(log) if r.offset < active)


def test_min_compaction_lag_keeps_recent_segments_dirty(open_log, batch, read_all):
    log = open_log({**COMPACT, "min.compaction.lag.ms": 60_000})
    _fill(log, batch, [_kv(i, 0) for i in range(30)], timestamp=1_000)
    _fill(log, batch, [_kv(i, 0) for i in range(30, 60)], timestamp=100_000)
    before = read_all(log)

    log.compact(now_ms=120_000)
    after = read_all(log)
    young = [r for r in before if r.timestamp == 100_000]
    assert all(r in after for r in young), "records younger than the lag must stay"
    first_young = max(s.base_offset for s in log.segments if s.base_offset <= young[0].offset)
    assert len([r for r in after if r.offset < first_young]) == 1, "old segments compacted"


def test_compressed_batches_stay_compressed_and_offsets_keep_their_gaps(open_log, batch):
    log = open_log(COMPACT)
    for i in range(30):
        log.append(batch((b"a", b"%d" % i), (b"b%d" % i, b"x"), compression=1), now_ms=0)

    log.compact(now_ms=0)
    data = bytes(log.read(0, 1 << 20).data)
    headers = list(iter_headers(data))
    assert headers and all(h.compression == 1 for h in headers)
    assert all(h.last_offset_delta == 1 for h in headers), "batches keep their offset range"


def test_the_last_batch_of_an_idempotent_producer_is_kept_empty(open_log, batch, read_all):
    log = open_log(COMPACT)
    log.append(batch((b"k", b"old"), producer_id=5, producer_epoch=0, base_sequence=0), now_ms=0)
    for i in range(30):
        log.append(batch((b"k", b"v%d" % i), b"x" * 40), now_ms=0)

    log.compact(now_ms=0)
    first = next(iter_headers(bytes(log.read(0, 1 << 20).data)))
    assert (first.base_offset, first.record_count, first.producer_id) == (0, 0, 5)
    retry = log.append(
        batch((b"k", b"old"), producer_id=5, producer_epoch=0, base_sequence=0), now_ms=0
    )
    assert retry.duplicate and retry.base_offset == 0


def test_segments_are_merged_when_they_fit_one(open_log, batch):
    log = open_log(COMPACT)
    _fill(log, batch, [_kv(i, 0) for i in range(60)])
    count = log.segment_count

    log.compact(now_ms=0)  # segments shrink to a record each, then are merged by the next pass
    assert log.segment_count == count
    _fill(log, batch, [_kv(i, 1) for i in range(60, 80)])
    log.compact(now_ms=0)
    assert log.segment_count < count


def test_compaction_does_nothing_under_a_delete_policy(open_log, batch):
    log = open_log({"segment.bytes": 600})
    _fill(log, batch, [_kv(i, 0) for i in range(60)])
    assert log.compact(now_ms=0) == 0


def test_leftover_cleaned_files_are_discarded_at_open(open_log, batch, read_all, log_dir, crash):
    log = open_log(COMPACT)
    _fill(log, batch, [_kv(i, i % 3) for i in range(40)])
    before = read_all(log)
    crash(log)
    base = f"{0:020d}"
    for suffix in (".log", ".index", ".timeindex"):
        (log_dir / f"{base}{suffix}.cleaned").write_bytes(b"half-written")

    log = open_log(COMPACT)
    assert not list(log_dir.glob("*.cleaned"))
    assert read_all(log) == before


def test_a_swap_left_by_a_crash_is_completed_at_open(open_log, batch, read_all, log_dir, crash):
    log = open_log(COMPACT)
    _fill(log, batch, [_kv(i, i % 3) for i in range(40)])
    log.compact(now_ms=0)
    compacted = read_all(log)
    first = log.segments[0]
    crash(log)
    # Replay the cleaner's last steps as if it crashed before deleting the old segment: the
    # cleaned files are a `.swap` and the old (uncompacted) segment still sits in place.
    for path in list(log_dir.glob(f"{first.base_offset:020d}.*")):
        if path.suffix in (".log", ".index", ".timeindex"):
            path.rename(path.with_name(path.name + ".swap"))
    (log_dir / f"{first.base_offset:020d}.log").write_bytes(b"old segment bytes")

    log = open_log(COMPACT)
    assert not list(log_dir.glob("*.swap"))
    assert read_all(log) == compacted
