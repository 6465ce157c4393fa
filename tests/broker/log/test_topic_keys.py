"""Topic keys inside the log: segment.jitter.ms, file.delete.delay.ms, max.compaction.lag.ms's
roll deadline, timestamp bounds (the log's own clock is the ``now_ms`` callers pass)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sluice.broker.log import Log, LogConfig
from sluice.broker.log.errors import RecordValidationError
from sluice.broker.log.segment import LogSegment, random_jitter

from .conftest import BatchFactory


def test_segment_jitter_is_drawn_per_segment_below_its_bound(tmp_path: Path) -> None:
    config = LogConfig.from_mapping({"segment.ms": 10_000, "segment.jitter.ms": 4_000})
    draws = [random_jitter(config) for _ in range(500)]
    assert all(0 <= d < 4_000 for d in draws), f"out of [0, 4000): {[d for d in draws if d < 0]}"
    assert len(set(draws)) > 100, "the jitter is not random"
    capped = LogConfig.from_mapping({"segment.ms": 1_000, "segment.jitter.ms": 50_000})
    assert all(0 <= random_jitter(capped) < 1_000 for _ in range(200)), "not capped at segment.ms"
    assert random_jitter(LogConfig.from_mapping({"segment.ms": 1_000})) == 0


def test_a_segment_rolls_at_segment_ms_less_its_jitter(
    open_log: Callable[..., Log], batch: BatchFactory
) -> None:
    log = open_log({"segment.ms": 10_000, "segment.jitter.ms": 8_000})
    log.append(batch(b"a", timestamp=1_000), now_ms=1_000)
    jitter = log.segments[-1].roll_jitter_ms
    assert 0 <= jitter < 8_000
    deadline = 1_000 + 10_000 - jitter
    log.append(batch(b"b", timestamp=deadline), now_ms=deadline)
    assert log.segment_count == 1, f"rolled at {deadline}, not past segment.ms - jitter"
    log.append(batch(b"c", timestamp=deadline + 1), now_ms=deadline + 1)
    assert log.segment_count == 2, f"no roll past segment.ms - jitter ({jitter})"


def test_max_compaction_lag_caps_the_roll_of_a_compacted_log(
    open_log: Callable[..., Log], batch: BatchFactory
) -> None:
    log = open_log(
        {"cleanup.policy": ["compact"], "segment.ms": 100_000, "max.compaction.lag.ms": 5_000}
    )
    log.append(batch((b"k", b"a"), timestamp=1_000), now_ms=1_000)
    log.append(batch((b"k", b"b"), timestamp=7_000), now_ms=7_000)
    assert log.segment_count == 2, "the active segment outlived max.compaction.lag.ms"


def _files(directory: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))


def test_retired_segments_are_removed_after_file_delete_delay(
    open_log: Callable[..., Log], batch: BatchFactory, log_dir: Path
) -> None:
    log = open_log({"segment.bytes": 100, "retention.ms": 1_000, "file.delete.delay.ms": 5_000})
    for i in range(4):
        log.append(batch(b"x" * 60, timestamp=1_000 + i), now_ms=1_000 + i)
    assert log.segment_count == 4
    deleted = log.enforce_retention(10_000)  # all expired: rolls, then deletes the 4
    assert deleted == 4
    assert len(_files(log_dir, ".log.deleted")) == 4, _files(log_dir, "")
    assert len(_files(log_dir, ".index.deleted")) == 4
    assert log.remove_retired(14_999) == 0
    assert len(_files(log_dir, ".log.deleted")) == 4
    assert log.remove_retired(15_000) == 4
    assert _files(log_dir, ".deleted") == []
    assert [r for r in _files(log_dir, ".log")] == [log.segments[0].log_path.name]


def test_without_delay_segments_go_at_once(
    open_log: Callable[..., Log], batch: BatchFactory, log_dir: Path
) -> None:
    log = open_log({"segment.bytes": 100, "retention.ms": 1_000, "file.delete.delay.ms": 0})
    for _ in range(3):
        log.append(batch(b"x" * 60, timestamp=1_000), now_ms=1_000)
    assert log.enforce_retention(10_000) == 3
    assert _files(log_dir, ".deleted") == []


def test_a_restart_removes_retired_files(
    open_log: Callable[..., Log], batch: BatchFactory, log_dir: Path
) -> None:
    log = open_log({"segment.bytes": 100, "retention.ms": 1_000, "file.delete.delay.ms": 60_000})
    for _ in range(3):
        log.append(batch(b"x" * 60, timestamp=1_000), now_ms=1_000)
    log.enforce_retention(10_000)
    assert _files(log_dir, ".deleted")
    log.close()
    reopened = Log.open(log_dir, {"segment.bytes": 100})
    try:
        assert _files(log_dir, ".deleted") == []
        assert reopened.segment_count == 1
    finally:
        reopened.close()


@pytest.mark.parametrize(
    ("config", "timestamps", "bad"),
    [
        ({"message.timestamp.before.max.ms": 1_000}, [8_500, 9_500, 20_000], [0]),
        ({"message.timestamp.after.max.ms": 1_000}, [5_000, 11_500, 10_900], [1]),
        ({"message.timestamp.difference.max.ms": 500}, [9_000, 10_000, 10_600], [0, 2]),
        (
            {"message.timestamp.type": "LogAppendTime", "message.timestamp.before.max.ms": 1},
            [1],
            [],
        ),
    ],
)
def test_timestamp_bounds_name_each_bad_record(
    open_log: Callable[..., Log],
    batch: BatchFactory,
    config: dict[str, Any],
    timestamps: list[int],
    bad: list[int],
) -> None:
    log = open_log(config)
    data = batch(*[b"v"] * len(timestamps), timestamps=timestamps)
    if not bad:
        log.append(data, now_ms=10_000)
        return
    with pytest.raises(RecordValidationError) as refused:
        log.append(data, now_ms=10_000)
    assert refused.value.code == 32
    assert [i for i, _ in refused.value.record_errors] == bad
    assert "is out of range" in refused.value.record_errors[0][1]
    assert log.log_end_offset == 0, "a refused batch was written"


def test_segment_created_with_jitter_keeps_it(tmp_path: Path) -> None:
    config = LogConfig.from_mapping({"segment.ms": 1_000, "segment.jitter.ms": 999})
    segments = [LogSegment.create(tmp_path, i * 10, config) for i in range(30)]
    try:
        assert len({s.roll_jitter_ms for s in segments}) > 1
    finally:
        for s in segments:
            s.close()
