"""Retention and compaction, seen through a real consumer.

Retention by time is made deterministic with producer timestamps: ``retention.ms`` compares a
segment's largest record timestamp, so records stamped an hour ago are expired at once while
records stamped now are not. Compaction runs on the broker's cleaner thread; the tests poll what
a consumer sees, each wait bounded.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.broker.conftest import (
    Rec,
    create_topic,
    produce_values,
    read_partition,
    watermarks,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WAIT = 30.0
"""Longest wait for the retention checker or the cleaner to act (they run every 0.5 s)."""

ONE_HOUR = 3_600_000


def segment_logs(broker: Any, topic: str) -> list[Path]:
    return sorted((broker.data_dir / f"{topic}-0").glob("*.log"))


def base_offset(path: Path) -> int:
    return int(path.name.split(".")[0])


def wait_until(condition: Callable[[], Any], what: Callable[[], str]) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        result = condition()
        if result:
            return result
        time.sleep(0.5)
    raise AssertionError(f"not within {WAIT}s: {what()}")


@pytest.fixture
def retention_broker(broker_factory: Callable[..., Any]) -> Any:
    return broker_factory(**{"log.retention.check.interval.ms": "500"})


# --- retention -----------------------------------------------------------------------------


def test_retention_ms_deletes_expired_segments_and_keeps_the_newest(retention_broker: Any) -> None:
    broker = retention_broker
    # One ~1.3 kB batch per segment: each record is a segment of its own.
    create_topic(
        broker.bootstrap, "aging", config={"segment.bytes": "2048", "retention.ms": "600000"}
    )
    now = int(time.time() * 1000)
    # 6 bytes x 220: two batches never fit one 2 kB segment (with x 150 they did, and an old
    # record could share a segment with a new one, depending on when a retention check rolled)
    old = [f"old-{i:02d}".encode() * 220 for i in range(20)]
    new = [f"new-{i:02d}".encode() * 220 for i in range(5)]
    produce_values(
        broker.bootstrap,
        "aging",
        old,
        timestamps=[now - ONE_HOUR + i for i in range(20)],
        one_batch_each=True,
    )
    produce_values(broker.bootstrap, "aging", new, one_batch_each=True)

    wait_until(
        lambda: watermarks(broker.bootstrap, "aging") == (20, 25),
        lambda: f"watermarks {watermarks(broker.bootstrap, 'aging')}, expected (20, 25)",
    )
    remaining = [base_offset(p) for p in segment_logs(broker, "aging")]
    assert min(remaining) == 20, f"segments left: {remaining}; those below offset 20 expired"
    records = read_partition(broker.bootstrap, "aging")
    assert [(r.offset, r.value) for r in records] == list(enumerate(new, start=20))
    # The partition goes on: the next record follows the retained ones.
    assert produce_values(broker.bootstrap, "aging", [b"later"]) == [25]


def test_retention_ms_expiring_everything_keeps_the_offsets(retention_broker: Any) -> None:
    broker = retention_broker
    create_topic(
        broker.bootstrap, "expired", config={"segment.bytes": "2048", "retention.ms": "600000"}
    )
    now = int(time.time() * 1000)
    values = [f"gone-{i}".encode() * 200 for i in range(6)]
    produce_values(
        broker.bootstrap, "expired", values, timestamps=[now - ONE_HOUR] * 6, one_batch_each=True
    )
    wait_until(
        lambda: watermarks(broker.bootstrap, "expired") == (6, 6),
        lambda: f"watermarks {watermarks(broker.bootstrap, 'expired')}, expected (6, 6)",
    )
    assert read_partition(broker.bootstrap, "expired") == []
    assert produce_values(broker.bootstrap, "expired", [b"fresh"]) == [6]
    assert [r.value for r in read_partition(broker.bootstrap, "expired")] == [b"fresh"]


def test_retention_bytes_keeps_the_newest_bytes(retention_broker: Any) -> None:
    broker = retention_broker
    limit = 5000
    create_topic(
        broker.bootstrap,
        "sized",
        config={"segment.bytes": "2048", "retention.bytes": str(limit), "retention.ms": "-1"},
    )
    values = [f"sized-{i:02d}".encode() * 120 for i in range(20)]
    produce_values(broker.bootstrap, "sized", values, one_batch_each=True)

    def settled() -> bool:
        sizes = [p.stat().st_size for p in segment_logs(broker, "sized")]
        # Kafka's rule: the oldest segments go while what is left still holds retention.bytes.
        return bool(sizes) and sum(sizes) - sizes[0] < limit <= sum(sizes)

    wait_until(
        lambda: watermarks(broker.bootstrap, "sized")[0] > 0 and settled(),
        lambda: f"segments {[(p.name, p.stat().st_size) for p in segment_logs(broker, 'sized')]}",
    )
    sizes = [p.stat().st_size for p in segment_logs(broker, "sized")]
    assert sum(sizes) >= limit, f"retention deleted too much: {sizes} hold less than {limit}"
    low, high = watermarks(broker.bootstrap, "sized")
    assert high == 20
    assert low == base_offset(segment_logs(broker, "sized")[0])
    records = read_partition(broker.bootstrap, "sized")
    assert [(r.offset, r.value) for r in records] == list(enumerate(values))[low:]


# --- compaction ----------------------------------------------------------------------------


KEYS = [f"k{i:02d}".encode() for i in range(10)]
DELETED = KEYS[:3]
ROUNDS = 5


@pytest.fixture
def cleaner_broker(broker_factory: Callable[..., Any]) -> Any:
    return broker_factory(**{"log.cleaner.backoff.ms": "500"})


def fill_compacted(
    broker: Any, topic: str, delete_retention_ms: int
) -> dict[bytes, tuple[int, bytes | None]]:
    """Write ROUNDS values per key, tombstones for DELETED, then unique-key filler records that
    push all of it out of the active segment. Returns key -> (offset, value) of the latest."""
    create_topic(
        broker.bootstrap,
        topic,
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "1024",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": str(delete_retention_ms),
        },
    )
    keys = [key for _ in range(ROUNDS) for key in KEYS] + DELETED
    values: list[bytes | None] = [
        key + f"-v{round_}".encode() * 8 for round_ in range(ROUNDS) for key in KEYS
    ] + [None] * len(DELETED)
    fillers = [f"filler-{i:03d}".encode() for i in range(40)]
    keys += fillers
    values += [f + b"=" * 60 for f in fillers]
    # A batch per record, so that segments roll at segment.bytes (one big batch would not).
    offsets = produce_values(broker.bootstrap, topic, values, keys=keys, one_batch_each=True)
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for key, offset, value in zip(keys, offsets, values, strict=True):
        latest[key] = (offset, value)
    return latest


def view(records: list[Rec]) -> str:
    counts = Counter(r.key for r in records)
    return f"{len(records)} records, per key: " + ", ".join(
        f"{k!r} x{n}" for k, n in sorted(counts.items()) if not k.startswith(b"filler")
    )


def test_compaction_keeps_the_latest_value_per_key_and_drops_tombstones(
    cleaner_broker: Any,
) -> None:
    broker = cleaner_broker
    latest = fill_compacted(broker, "compacted", delete_retention_ms=1000)
    expected = sorted(
        (offset, key, value) for key, (offset, value) in latest.items() if key not in DELETED
    )
    seen: list[Rec] = []

    def compacted() -> bool:
        seen[:] = read_partition(broker.bootstrap, "compacted")
        return sorted((r.offset, r.key, r.value) for r in seen) == expected

    wait_until(compacted, lambda: f"expected {len(expected)} records, a consumer sees {view(seen)}")
    # Offsets never move: the high watermark and each kept record's offset are the originals.
    assert watermarks(broker.bootstrap, "compacted")[1] == max(o for o, _ in latest.values()) + 1
    assert [r.offset for r in seen] == sorted(r.offset for r in seen)


def test_compaction_keeps_tombstones_until_delete_retention_ms(cleaner_broker: Any) -> None:
    broker = cleaner_broker
    latest = fill_compacted(broker, "tombstones", delete_retention_ms=86_400_000)
    expected = sorted((offset, key, value) for key, (offset, value) in latest.items())
    seen: list[Rec] = []

    def compacted() -> bool:
        seen[:] = read_partition(broker.bootstrap, "tombstones")
        return sorted((r.offset, r.key, r.value) for r in seen) == expected

    wait_until(compacted, lambda: f"expected {len(expected)} records, a consumer sees {view(seen)}")
    tombstones = [r for r in seen if r.value is None]
    assert sorted(r.key for r in tombstones) == DELETED
    # A later restart does not lose them either (the delete horizon is persisted).
    broker.restart()
    assert (
        sorted((r.offset, r.key, r.value) for r in read_partition(broker.bootstrap, "tombstones"))
        == expected
    )
