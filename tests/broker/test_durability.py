"""What the broker acknowledged survives kill -9, torn writes and damaged indexes.

Every test runs the real broker process and restarts it on the same data directory; records go
in and come out through confluent-kafka.
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition

from tests.broker.conftest import (
    consumer,
    create_topic,
    make_batch,
    produce_values,
    read_partition,
    watermarks,
)
from tests.faults.history import History, check

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

FLUSH_EVERY_MESSAGE = {"log.flush.interval.messages": "1"}


def segment_files(broker: Any, topic: str, partition: int = 0, suffix: str = ".log") -> list[Path]:
    return sorted((broker.data_dir / f"{topic}-{partition}").glob(f"*{suffix}"))


# --- kill -9 under an idempotent acks=all producer ------------------------------------------


def test_acknowledged_records_survive_kill_9_exactly_once_in_order(
    broker_factory: Callable[..., Any],
) -> None:
    seed = int(os.environ.get("SLUICE_TEST_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    broker = broker_factory(**FLUSH_EVERY_MESSAGE)
    partitions = 3
    create_topic(broker.bootstrap, "durable", partitions=partitions)

    acked: dict[int, tuple[int, int]] = {}  # record number -> (partition, offset)
    failed: list[str] = []
    fatal: list[str] = []

    history = History()

    def report(err: Any, msg: Any) -> None:
        if err is not None:
            failed.append(str(err))
            history.failed(int(msg.value()), definite=False)  # a timeout: it may be there
        else:
            acked[int(msg.value())] = (msg.partition(), msg.offset())
            history.acked(int(msg.value()), msg.partition(), msg.offset())

    def on_error(err: KafkaError) -> None:
        if err.fatal():
            fatal.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 2,
            "message.timeout.ms": 60_000,
            "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "error_cb": on_error,
        }
    )
    n = 0

    def produce_for(seconds: float) -> None:
        nonlocal n
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            for _ in range(20):
                producer.produce(
                    "durable", value=str(n).encode(), partition=n % partitions, on_delivery=report
                )
                history.sent(n)
                n += 1
            producer.poll(0.005)

    rounds = 5
    kills = []
    for _ in range(rounds):
        produce_for(rng.uniform(0.3, 1.5))
        acked_before = len(acked)
        broker.kill()
        kills.append((n, acked_before))
        produce_for(rng.uniform(0.0, 0.5))  # while the broker is down: queued, retried
        broker.start()
    produce_for(0.5)
    remaining = producer.flush(90)
    context = f"seed {seed}, kills at (produced, acked) {kills}, {n} produced"
    assert not fatal, f"the idempotent producer hit a fatal error ({context}): {fatal}"
    assert remaining == 0, f"{remaining} records never delivered ({context})"
    assert len(acked) >= n // 2, (
        f"only {len(acked)} of {n} acknowledged, failures: {failed[:5]} ({context})"
    )

    for p in range(partitions):
        records = read_partition(broker.bootstrap, "durable", p, timeout=60)
        for record in records:
            history.polled("drain", p, record.offset, int(record.value))
        numbers = [int(r.value) for r in records]
        repeats = [b for a, b in itertools.pairwise(numbers) if b <= a]
        assert not repeats, (
            f"partition {p} is not strictly increasing (duplicates or reordering) at {repeats[:5]} "
            f"({context})"
        )
        by_offset = {r.offset: int(r.value) for r in records}
        for number, (partition, offset) in acked.items():
            if partition == p:
                assert by_offset.get(offset) == number, (
                    f"record {number} was acknowledged at {p}/{offset}, that offset holds "
                    f"{by_offset.get(offset)} ({context})"
                )
    verdict = check(history)  # idempotent: not even a duplicate
    assert verdict.ok, f"{verdict} ({context})"


# --- a torn tail ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "stop"),
    [
        *[(tail, "kill") for tail in ("garbage", "half_batch", "bad_crc", "huge_length")],
        # After a clean shutdown the segment is trusted (no CRC scan, as in Kafka), but a batch
        # that runs past the end of the file must still be noticed.
        *[(tail, "sigterm") for tail in ("garbage", "half_batch", "huge_length")],
    ],
)
def test_torn_last_batch_is_truncated_at_start(
    broker_factory: Callable[..., Any], tail: str, stop: str
) -> None:
    broker = broker_factory(**FLUSH_EVERY_MESSAGE)
    create_topic(broker.bootstrap, "torn")
    values = [f"record-{i}".encode() * 20 for i in range(30)]
    produce_values(broker.bootstrap, "torn", values)
    before = read_partition(broker.bootstrap, "torn")
    assert [r.value for r in before] == values

    broker.kill() if stop == "kill" else broker.stop()
    active = segment_files(broker, "torn")[-1]
    size = active.stat().st_size
    whole = bytearray(make_batch([b"never-acknowledged" * 30]))
    whole[0:8] = len(values).to_bytes(8, "big")  # the base offset it would have had
    match tail:
        case "garbage":
            junk = random.Random(3).randbytes(333)
            assert junk[16] != 2, "the garbage must not look like a v2 batch header"
        case "half_batch":
            junk = bytes(whole[: len(whole) // 2])
        case "bad_crc":
            whole[-5] ^= 0x01
            junk = bytes(whole)
        case _:  # a length field pointing far past the end of the file
            junk = bytes(whole[:8]) + (2**30).to_bytes(4, "big") + bytes(whole[12:])
    with active.open("ab") as f:
        f.write(junk)
    broker.start()

    assert read_partition(broker.bootstrap, "torn") == before
    assert watermarks(broker.bootstrap, "torn") == (0, len(values))
    assert active.stat().st_size == size, (
        f"{active.name} is {active.stat().st_size} bytes after recovery, expected the "
        f"{size} bytes it had before the torn tail was added"
    )
    offsets = produce_values(broker.bootstrap, "torn", [b"after-1", b"after-2"])
    assert offsets == [len(values), len(values) + 1]
    after = read_partition(broker.bootstrap, "torn")
    assert [r.value for r in after] == [*values, b"after-1", b"after-2"]


# --- damaged indexes -----------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["deleted", "truncated", "garbage", "emptied"])
def test_damaged_indexes_are_rebuilt(broker_factory: Callable[..., Any], damage: str) -> None:
    broker = broker_factory()
    create_topic(
        broker.bootstrap, "indexed", config={"segment.bytes": "4096", "index.interval.bytes": "200"}
    )
    base_ts = int(time.time() * 1000) - 3_600_000
    count = 120
    values = [f"v{i:04d}".encode() * 25 for i in range(count)]
    produce_values(
        broker.bootstrap,
        "indexed",
        values,
        timestamps=[base_ts + i * 1000 for i in range(count)],
        one_batch_each=True,
    )
    expected = read_partition(broker.bootstrap, "indexed")
    assert [r.value for r in expected] == values
    assert len(segment_files(broker, "indexed")) >= 5, "the test wants several segments"

    check_reads(broker, expected, base_ts, when="before any damage")
    assert broker.stop() == 0
    rng = random.Random(7)
    damaged = segment_files(broker, "indexed", suffix=".index") + segment_files(
        broker, "indexed", suffix=".timeindex"
    )
    assert damaged, "no index files were written"
    for path in damaged:
        match damage:
            case "deleted":
                path.unlink()
            case "truncated":
                length = path.stat().st_size
                os.truncate(path, max(length // 2 - 3, 1))
            case "garbage":
                path.write_bytes(rng.randbytes(max(path.stat().st_size, 96)))
            case "emptied":
                os.truncate(path, 0)
    broker.start()

    check_reads(broker, expected, base_ts, when=f"after the indexes were {damage}")
    logs = segment_files(broker, "indexed")
    for log in logs:
        for suffix in (".index", ".timeindex"):
            assert log.with_suffix(suffix).exists(), f"{log.with_suffix(suffix).name} not rebuilt"


def check_reads(broker: Any, expected: list[Any], base_ts: int, when: str) -> None:
    """Reads from the start, from offsets inside segments, and by timestamp (one record per
    batch, ``base_ts + 1000 * offset``) give what was written."""
    count = len(expected)
    assert read_partition(broker.bootstrap, "indexed") == expected, when
    for start in (1, 17, 45, 64, 99, count - 1):
        got = read_partition(broker.bootstrap, "indexed", start=start)
        assert got == expected[start:], f"reading from offset {start} {when}"
    probes = [(base_ts + i * 1000, i) for i in (0, 3, 50, 77, count - 1)]
    probes += [(base_ts + i * 1000 - 400, i) for i in (1, 33, 101)]
    probes += [(base_ts - 10_000, 0), (base_ts + count * 1000, -1)]
    c = consumer(broker.bootstrap)
    try:
        # One partition per call: librdkafka answers -1 to repeated partitions in one call.
        got_offsets = [
            c.offsets_for_times([TopicPartition("indexed", 0, ts)], timeout=10)[0].offset
            for ts, _ in probes
        ]
    finally:
        c.close()
    assert got_offsets == [want for _, want in probes], (
        f"offsets_for_times {[ts - base_ts for ts, _ in probes]} (ms after the first record) "
        f"gave {got_offsets} {when}"
    )


# --- clean shutdown ------------------------------------------------------------------------


def test_sigterm_exits_0_and_the_next_start_needs_no_recovery(
    broker_factory: Callable[..., Any],
) -> None:
    broker = broker_factory()
    create_topic(broker.bootstrap, "clean", partitions=2)
    values = [f"c{i}".encode() for i in range(50)]
    produce_values(broker.bootstrap, "clean", values)  # partition 0
    produce_values(broker.bootstrap, "clean", values, partition=1)

    assert broker.stop() == 0, broker.log_text()[-2000:]
    assert "stopped cleanly" in broker.log_text()
    mark = len(broker.log_text())
    broker.start()
    for p in (0, 1):
        assert [r.value for r in read_partition(broker.bootstrap, "clean", p)] == values
    started = broker.log_text()[mark:]
    assert "recover" not in started.lower(), f"a clean start recovered something:\n{started}"

    # The control: after kill -9 the same start does recover.
    broker.kill()
    mark = len(broker.log_text())
    broker.start()
    assert "recover" in broker.log_text()[mark:].lower(), "kill -9 went unnoticed at start"
    for p in (0, 1):
        assert [r.value for r in read_partition(broker.bootstrap, "clean", p)] == values


def test_kill_9_right_after_acks_loses_nothing(broker_factory: Callable[..., Any]) -> None:
    broker = broker_factory(**FLUSH_EVERY_MESSAGE)
    create_topic(broker.bootstrap, "tail")
    for round_ in range(3):
        produce_values(broker.bootstrap, "tail", [f"r{round_}-{i}".encode() for i in range(40)])
        broker.kill()
        broker.start()
    got = [r.value for r in read_partition(broker.bootstrap, "tail")]
    assert got == [f"r{r}-{i}".encode() for r in range(3) for i in range(40)]
