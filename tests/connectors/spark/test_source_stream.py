"""``spark.readStream.format("sluice")`` in the test's Spark session: rate limits, AvailableNow,
restarts from a checkpoint, new partitions, errors surfacing from the query."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from sluice.connectors.spark.source import register
from tests.conftest import CLIENT_TIMEOUT, BrokerProcess, create_topic
from tests.connectors.spark.source_helpers import produce

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

QUERY_TIMEOUT = 180  # seconds: the bound on one query run


@pytest.fixture(scope="module")
def session(spark: SparkSession) -> SparkSession:
    register(spark)
    return spark


def run_available_now(
    spark: SparkSession, bootstrap: str, topic: str, out: Path, **options: str
) -> list[dict[str, Any]]:
    """Run the query topic → Parquet ``out`` with Trigger.AvailableNow; its progress reports."""
    reader = spark.readStream.format("sluice").option("kafka.bootstrap.servers", bootstrap)
    for key, value in {"subscribe": topic, "startingOffsets": "earliest", **options}.items():
        reader = reader.option(key, value)
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", str(out / "data"))
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        finished = query.awaitTermination(QUERY_TIMEOUT)
        assert finished, f"the AvailableNow query did not finish within {QUERY_TIMEOUT} s"
        return [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()


def committed_offsets(checkpoint: Path) -> dict[str, Any]:
    """The source offsets of the last batch in the checkpoint's offset log."""
    last = max(
        (checkpoint / "offsets").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1
    )
    return json.loads(last.read_text().splitlines()[2])  # type: ignore[no-any-return]


def test_available_now_respects_max_offsets_and_resumes_with_new_partitions(
    session: SparkSession, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    topic = create_topic(boot, 3)
    produce(boot, topic, 90)
    progress = run_available_now(session, boot, topic, tmp_path, maxOffsetsPerTrigger="40")
    sizes = [p["numInputRows"] for p in progress if p["numInputRows"]]
    assert sum(sizes) == 90 and len(sizes) >= 3, f"batch sizes {sizes}"
    assert max(sizes) <= 40, f"a batch exceeded maxOffsetsPerTrigger: {sizes}"
    assert committed_offsets(tmp_path / "checkpoint") == {topic: {"0": 30, "1": 30, "2": 30}}

    # more records, and a fourth partition: the next run reads exactly those, from the checkpoint
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_partitions([NewPartitions(topic, 4)])[topic].result(CLIENT_TIMEOUT)
    produce(boot, topic, 40, partitions=4, first=1000)
    progress = run_available_now(session, boot, topic, tmp_path, maxOffsetsPerTrigger="40")
    assert sum(p["numInputRows"] for p in progress) == 40, [p["numInputRows"] for p in progress]
    assert committed_offsets(tmp_path / "checkpoint") == {
        topic: {"0": 40, "1": 40, "2": 40, "3": 10}
    }
    df = session.read.parquet(str(tmp_path / "data"))
    got = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
    expected = sorted([(p, o) for p in range(3) for o in range(40)] + [(3, o) for o in range(10)])
    assert got == expected, "records lost or repeated across the two runs"


def test_starting_at_latest_reads_only_new_records(
    session: SparkSession, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    boot = shared_broker.bootstrap
    topic = create_topic(boot, 2)
    produce(boot, topic, 10, partitions=2)
    progress = run_available_now(session, boot, topic, tmp_path, startingOffsets="latest")
    assert sum(p["numInputRows"] for p in progress) == 0
    produce(boot, topic, 6, partitions=2, first=100)
    progress = run_available_now(session, boot, topic, tmp_path, startingOffsets="latest")
    assert sum(p["numInputRows"] for p in progress) == 6
    data = session.read.parquet(str(tmp_path / "data")).select("value")
    values = {bytes(r[0]) for r in data.collect()}
    assert values == {f"v{i}".encode() for i in range(100, 106)}


def test_unknown_topic_fails_the_streaming_query(
    session: SparkSession, shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException) as info:
        run_available_now(session, shared_broker.bootstrap, "no-such-topic-s1", tmp_path)
    assert "topic(s) no-such-topic-s1 do not exist" in str(info.value), str(info.value)[:2000]
