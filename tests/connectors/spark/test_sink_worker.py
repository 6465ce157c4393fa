"""spark-sink in a real standalone Connect worker process against the real broker, ``kill -9``ed
mid-commit and restarted: the table holds every record exactly once, and a new field adds a
column.

The first test runs without a SparkSession in the worker (inferred schema, no catalog), so the
worker restarts in about a second and is killed several times, at random moments and at fixed
steps of the commit protocol (``SLUICE_SPARK_SINK_CRASH_AT``). The second runs the full sink —
its own SparkSession in the worker, table registration, date partitions — through two worker
starts (one JVM each) and reads the result with Spark.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from tests.conftest import BrokerProcess, create_topic
from tests.connectors.spark import sink_worker as helpers
from tests.connectors.spark.sink_worker import (
    WorkerFactory,
    deploy,
    kill,
    produce,
    rows,
    stop,
    wait_until,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PARTITIONS = 2

sink_worker = helpers.sink_worker  # the fixture, for the tests of this module


def _ids(table: Path) -> Counter[int]:
    return Counter(row["id"] for row in rows(table))


def _exactly_once(table: Path, expected: range) -> bool:
    ids = _ids(table)
    return sorted(ids) == list(expected) and set(ids.values()) == {1}


def _duplicates(table: Path) -> list[int]:
    return sorted(i for i, n in _ids(table).items() if n > 1)


def test_kill_9_at_random_moments_and_mid_commit_leaves_every_record_once(
    shared_broker: BrokerProcess, sink_worker: WorkerFactory, tmp_path: Path
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, partitions=PARTITIONS)
    config = deploy(
        tmp_path,
        topic,
        register_table="false",
        flush_size="40",
        partition_columns="bucket",
    )
    table, log = tmp_path / "warehouse" / "events", tmp_path / "worker.log"
    total = 3000
    produce(bootstrap, topic, range(total), PARTITIONS, bucket="a")

    # Crashes at fixed steps: the process kills itself (kill -9) inside a commit.
    for point in ("mid-publish:3", "after-commit-record:2", "before-commit-record:2"):
        before = len(rows(table))
        worker = sink_worker(config, bootstrap, SLUICE_SPARK_SINK_CRASH_AT=point)
        assert worker.wait(120) == -9, f"the worker did not crash at {point}"
        assert not _duplicates(table), f"duplicates after a crash at {point}"
        assert len(rows(table)) >= before

    # Crashes at random moments while the worker commits.
    chance = random.Random(uuid.uuid4().int)
    for _ in range(3):
        before = len(rows(table))
        worker = sink_worker(config, bootstrap)
        if before == total:
            break  # everything landed already: no commit left to interrupt
        wait_until(lambda b=before: len(rows(table)) > b, "a commit", log)  # type: ignore[misc]
        time.sleep(chance.uniform(0, 0.5))  # somewhere in the next commits
        kill(worker)
        assert not _duplicates(table)

    # A schema change: records with a new field (and another bucket, a new partition).
    produce(bootstrap, topic, range(total, total + 200), PARTITIONS, bucket="b", note="new")
    worker = sink_worker(config, bootstrap)
    wait_until(lambda: len(rows(table)) >= total + 200, "every record", log)
    assert stop(worker) == 0
    assert _exactly_once(table, range(total + 200)), f"duplicates: {_duplicates(table)[:10]}"
    landed = rows(table)
    assert {row["note"] for row in landed if row["id"] < total} == {None}
    assert {row["note"] for row in landed if row["id"] >= total} == {"new"}
    assert {row["bucket"] for row in landed if row["id"] >= total} == {"b"}


def test_the_full_sink_in_a_worker_survives_kill_9_mid_commit(
    shared_broker: BrokerProcess,
    sink_worker: WorkerFactory,
    tmp_path: Path,
    spark: SparkSession,
) -> None:
    bootstrap = shared_broker.bootstrap
    topic = create_topic(bootstrap, partitions=PARTITIONS)
    config = deploy(
        tmp_path,
        topic,
        register_table="true",
        flush_size="100",
        partition_date_field="ts",
        spark_conf_spark_driver_memory="512m",
    )
    table, log = tmp_path / "warehouse" / "events", tmp_path / "worker.log"
    total = 2000
    produce(bootstrap, topic, range(total), PARTITIONS, ts="2024-05-01T12:00:00Z")

    # kill -9 after the 3rd commit record, before its files are moved into place
    worker = sink_worker(config, bootstrap, SLUICE_SPARK_SINK_CRASH_AT="after-commit-record:3")
    assert worker.wait(240) == -9, "the worker did not crash mid-commit"
    assert 0 < len(rows(table)) < total
    assert list((table / "_sluice_staging").rglob("*.parquet")), "a commit was half-published"

    produce(bootstrap, topic, range(total, total + 100), PARTITIONS, ts="2024-05-02T00:00:00Z")
    produce(bootstrap, topic, range(total + 100, total + 150), PARTITIONS, score=1.5)
    worker = sink_worker(config, bootstrap)
    wait_until(lambda: len(rows(table)) >= total + 150, "every record", log, timeout=240)
    assert stop(worker) == 0
    assert "registering table" not in log.read_text(), "the catalog could not be maintained"

    frame = spark.read.parquet(str(table))
    assert frame.count() == total + 150
    assert frame.select("id").distinct().count() == total + 150
    assert frame.schema.simpleString() == (
        "struct<id:bigint,name:string,ts:string,score:double,date:date>"
    )
    per_date = {
        str(row["date"]): row["n"]
        for row in frame.groupBy("date").count().toDF("date", "n").collect()
    }
    assert per_date == {"2024-05-01": total, "2024-05-02": 100, "None": 50}
    assert frame.where("score = 1.5").count() == 50
