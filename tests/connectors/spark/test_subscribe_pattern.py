"""``subscribePattern`` in a running streaming query: every matching topic is read, topics that do
not match are not, and a topic created after the query started is picked up at the next trigger
(as Spark's Kafka source does), from its first offset, every record once.

Discovery happens in the driver's ``latestOffset`` (it lists the topics at every trigger); a
topic missing from the batch's start offsets starts at its earliest offset (``_plan``).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sluice.connectors.spark.source import register
from tests.conftest import BrokerProcess, create_topic
from tests.connectors.spark.source_helpers import produce

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

WAIT = 180.0  # seconds: the bound on each wait for the query to catch up


@pytest.fixture(scope="module")
def session(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


def _read(spark: SparkSession, out: Path) -> Counter[tuple[str, int, int]]:
    """(topic, partition, offset) → how many times the Parquet sink holds it (committed files)."""
    from pyspark.errors import AnalysisException

    try:
        rows = spark.read.parquet(str(out)).select("topic", "partition", "offset").collect()
    except AnalysisException:  # no batch committed yet: no files to take a schema from
        return Counter()
    return Counter((r["topic"], r["partition"], r["offset"]) for r in rows)


def _wait_for(
    spark: SparkSession, query: Any, out: Path, expected: set[tuple[str, int, int]]
) -> Counter[tuple[str, int, int]]:
    """Read the sink until it holds ``expected`` (or more), bounded by :data:`WAIT` seconds."""
    deadline = time.monotonic() + WAIT
    got: Counter[tuple[str, int, int]] = Counter()
    while time.monotonic() < deadline:
        assert query.isActive, f"the query stopped: {query.exception()}"
        got = _read(spark, out)
        if expected <= set(got):
            return got
        time.sleep(1.0)
    missing = sorted(expected - set(got))
    raise AssertionError(
        f"{len(missing)} records never arrived within {WAIT:.0f} s: {missing[:10]}"
    )


def test_pattern_reads_every_matching_topic_and_one_created_later(
    session: SparkSession, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    prefix = f"pat-{uuid.uuid4().hex[:8]}"
    first = create_topic(boot, 2, name=f"{prefix}-orders")
    second = create_topic(boot, 1, name=f"{prefix}-refunds")
    other = create_topic(boot, 1, name=f"{prefix}x-other")  # starts like them, does not match
    records = {
        first: produce(boot, first, 20, partitions=2),
        second: produce(boot, second, 7, partitions=1),
    }
    produce(boot, other, 5, partitions=1)

    out = tmp_path / "data"
    query = (
        session.readStream.format("sluice")
        .option("kafka.bootstrap.servers", boot)
        .option("subscribePattern", f"{prefix}-.*")
        .option("startingOffsets", "earliest")
        .load()
        .select("topic", "partition", "offset", "value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        expected = {(t, r.partition, r.offset) for t, rs in records.items() for r in rs}
        _wait_for(session, query, out, expected)

        # A topic created while the query runs, and more records in a known one.
        third = create_topic(boot, 3, name=f"{prefix}-returns")
        records[third] = produce(boot, third, 12, partitions=3)
        records[first] = produce(boot, first, 4, partitions=2, first=100)
        expected |= {(t, r.partition, r.offset) for t in (first, third) for r in records[t]}
        got = _wait_for(session, query, out, expected)
    finally:
        query.stop()

    got = _read(session, out)
    assert set(got) == expected, (
        f"unexpected records: {sorted(set(got) - expected)[:10]}; "
        f"topics read: {sorted({t for t, _, _ in got})}"
    )
    doubled = sorted(k for k, n in got.items() if n > 1)
    assert not doubled, f"records written more than once: {doubled[:10]}"
    assert {t for t, _, _ in got} == {first, second, third}, "a non-matching topic was read"


def test_pattern_matching_nothing_yet_waits_for_the_first_topic(
    session: SparkSession, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    prefix = f"later-{uuid.uuid4().hex[:8]}"
    out = tmp_path / "data"
    query = (
        session.readStream.format("sluice")
        .option("kafka.bootstrap.servers", boot)
        .option("subscribePattern", f"{prefix}\\..+")
        .option("startingOffsets", "latest")  # no partition yet: nothing to start at
        .load()
        .select("topic", "partition", "offset", "value")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )
    try:
        deadline = time.monotonic() + WAIT
        while query.lastProgress is None and time.monotonic() < deadline:  # first trigger ran
            assert query.isActive, f"the query stopped: {query.exception()}"
            time.sleep(0.5)
        assert query.lastProgress is not None, f"no trigger ran within {WAIT:.0f} s"
        topic = create_topic(boot, 2, name=f"{prefix}.events")
        records = produce(boot, topic, 9, partitions=2)
        expected = {(topic, r.partition, r.offset) for r in records}
        got = _wait_for(session, query, out, expected)
    finally:
        query.stop()
    assert set(got) == expected and set(got.values()) == {1}, f"read {sorted(got.items())}"
