"""spark-sink's exactly-once protocol, task by task, without Spark: a task that dies at any step
of a commit leaves the table with every record once after the next task opens the partition.

(No declared schema and ``register.table=false``: these tasks need no SparkSession.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluice.connect.api.connector import TopicPartition
from sluice.connectors.spark import _sink_commit
from sluice.connectors.spark._sink_commit import COMMITS, STAGING
from tests.connectors.spark import sink_fixtures
from tests.connectors.spark.sink_fixtures import (
    FakeContext,
    TaskFactory,
    json_values,
    records,
    table_rows,
)

P0, P1 = TopicPartition("orders", 0), TopicPartition("orders", 1)

sink_task = sink_fixtures.sink_task  # the fixture, for the tests of this module


class Crash(BaseException):
    """Stands for ``kill -9`` at a step of the protocol (nothing after it runs)."""


def test_pre_commit_publishes_and_returns_the_published_offsets(
    sink_task: TaskFactory, tmp_path: Path
) -> None:
    task = sink_task()
    task.open({P0, P1})
    task.put(records(json_values(3), partition=0) + records(json_values(2, 3), partition=1))
    assert task.pre_commit({P0: 3, P1: 2}) == {P0: 3, P1: 2}
    table = tmp_path / "warehouse" / "orders"
    assert [row["id"] for row in table_rows(table)] == [0, 1, 2, 3, 4]
    assert sorted(p.name for p in table.glob("*.parquet")) == [
        "part-orders-0-0-3.parquet",
        "part-orders-1-0-2.parquet",
    ]
    assert not list((table / STAGING).rglob("*.parquet")), "staging is emptied after a commit"
    # nothing new: nothing published, the same offsets
    assert task.pre_commit({P0: 3, P1: 2}) == {P0: 3, P1: 2}
    assert len(list(table.glob("*.parquet"))) == 2


def test_open_resumes_from_the_table_not_from_the_consumer_group(
    sink_task: TaskFactory, tmp_path: Path
) -> None:
    first = sink_task()
    first.open({P0})
    first.put(records(json_values(5)))
    first.pre_commit({P0: 5})
    first.close({P0})  # the consumer offsets were never committed: the group restarts at 0

    context = FakeContext()
    second = sink_task(context)
    second.open({P0})
    assert context.seeks == {P0: 5}
    second.put(records(json_values(7)))  # 0..4 delivered again, then 5 and 6
    assert second.pre_commit({P0: 7}) == {P0: 7}
    ids = [row["id"] for row in table_rows(tmp_path / "warehouse" / "orders")]
    assert ids == list(range(7)), f"every record once, got {ids}"


@pytest.mark.parametrize("point", ["before-commit-record", "after-commit-record", "mid-publish"])
def test_a_crash_at_any_step_of_a_commit_leaves_every_record_once(
    sink_task: TaskFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    # partitioned by `bucket`: one commit writes several files (mid-publish moves one of them)
    settings = {"partition_columns": "bucket", "flush_size": "1000"}
    values = [json.dumps({"id": i, "bucket": i % 3}) for i in range(12)]
    task = sink_task(**settings)
    task.open({P0})
    task.put(records(values[:6]))
    task.pre_commit({P0: 6})

    def crash(name: str) -> None:
        if name == point:
            raise Crash(name)

    monkeypatch.setattr(_sink_commit, "_crash_point", crash)
    task.put(records(values[6:], first=6))
    with pytest.raises(Crash):
        task.pre_commit({P0: 12})
    monkeypatch.undo()
    table = tmp_path / "warehouse" / "orders"
    staged = list((table / STAGING).rglob("*.parquet"))
    assert staged, "the crash left files of the commit in staging"

    context = FakeContext()
    restarted = sink_task(context, **settings)
    restarted.open({P0})
    published = 6 if point == "before-commit-record" else 12
    assert context.seeks == {P0: published}
    restarted.put(records(values))  # the group's offsets were never committed: all again
    assert restarted.pre_commit({P0: 12}) == {P0: 12}
    ids = sorted(row["id"] for row in table_rows(table))
    assert ids == list(range(12)), f"every record once after a crash at {point}, got {ids}"
    assert not list((table / STAGING).rglob("*.parquet")), "unpublished files are deleted"
    assert not list((table / COMMITS).rglob(".tmp-*"))
    assert [row["bucket"] for row in table_rows(table)] == [i % 3 for i in range(12)]


def test_records_skipped_as_bad_or_tombstones_are_covered_by_the_commit(
    sink_task: TaskFactory, tmp_path: Path
) -> None:
    context = FakeContext(reporter=True)
    task = sink_task(context, errors_tolerance="all")
    task.open({P0})
    task.put(records(['{"id": 0}', "not json", None, '{"id": 3}', "[1, 2]"]))
    assert task.pre_commit({P0: 5}) == {P0: 5}
    assert [row["id"] for row in table_rows(tmp_path / "warehouse" / "orders")] == [0, 3]
    assert [(r.kafka_offset, type(e).__name__) for r, e in context.reported] == [
        (1, "BadRecordError"),
        (4, "BadRecordError"),
    ]
    assert "orders[0]@1" in str(context.reported[0][1])
    assert "not JSON" in str(context.reported[0][1])


def test_flush_size_commits_while_putting(sink_task: TaskFactory, tmp_path: Path) -> None:
    task = sink_task(flush_size="4")
    task.open({P0})
    task.put(records(json_values(10)))
    table = tmp_path / "warehouse" / "orders"
    assert sorted(p.name for p in table.glob("*.parquet")) == [
        "part-orders-0-0-4.parquet",
        "part-orders-0-4-8.parquet",
    ]
    assert task.pre_commit({P0: 10}) == {P0: 10}
    assert [row["id"] for row in table_rows(table)] == list(range(10))


def test_close_drops_what_was_not_committed(sink_task: TaskFactory, tmp_path: Path) -> None:
    task = sink_task()
    task.open({P0})
    task.put(records(json_values(3)))
    task.close({P0})
    assert task.pre_commit({}) == {}
    assert not list((tmp_path / "warehouse" / "orders").glob("*.parquet"))
