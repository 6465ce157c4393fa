"""spark-sink tasks against a real local Spark: what they land is read by ``spark.read.parquet``
and by ``spark.sql`` on the registered table; declared and inferred schemas, evolution,
partitions, bad records."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sluice.connect.api.connector import TopicPartition
from sluice.connect.api.data import Field, Schema, Struct
from sluice.connectors.spark.sink import BadRecordError
from tests.connectors.spark import sink_fixtures
from tests.connectors.spark.sink_fixtures import (
    FakeContext,
    TaskFactory,
    record,
    records,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DDL = "id bigint not null, name string, amount decimal(10,2), ts timestamp"

sink_task = sink_fixtures.sink_task  # the fixture, for the tests of this module


def _topic() -> str:
    return f"orders_{uuid.uuid4().hex[:8]}"


def _rows(frame: Any) -> list[dict[str, Any]]:
    return sorted((row.asDict() for row in frame.collect()), key=lambda row: row["id"])


def test_declared_schema_lands_rows_for_read_parquet_and_sql(
    spark: SparkSession, sink_task: TaskFactory, tmp_path: Path
) -> None:
    topic = _topic()
    task = sink_task(schema=DDL, register_table="true")
    partition = TopicPartition(topic, 0)
    task.open({partition})
    person = Schema.struct(
        [Field("id", Schema("int64")), Field("name", Schema("string", optional=True))]
    )
    task.put(
        [
            record(
                {"id": 1, "name": "Ada", "amount": 12.5, "ts": "2024-05-01T10:00:00Z"}, 0, topic
            ),
            record('{"id": 2, "amount": "3.10", "ts": 1714557600000}', 1, topic),
            record(Struct(person, {"id": 3, "name": "Grace"}), 2, topic),
        ]
    )
    assert task.pre_commit({partition: 3}) == {partition: 3}

    expected = [
        {
            "id": 1,
            "name": "Ada",
            "amount": Decimal("12.50"),
            "ts": dt.datetime(2024, 5, 1, 10, 0),  # the session's zone is UTC
        },
        {"id": 2, "name": None, "amount": Decimal("3.10"), "ts": dt.datetime(2024, 5, 1, 10, 0)},
        {"id": 3, "name": "Grace", "amount": None, "ts": None},
    ]
    path = str(tmp_path / "warehouse" / topic)
    assert _rows(spark.read.parquet(path)) == expected
    assert spark.read.parquet(path).schema.simpleString() == (
        "struct<id:bigint,name:string,amount:decimal(10,2),ts:timestamp>"
    )
    assert _rows(spark.sql(f"SELECT * FROM {topic}")) == expected
    assert spark.sql(f"SELECT sum(amount) AS s FROM {topic}").first()["s"] == Decimal("15.60")  # type: ignore[index]


def test_an_inferred_schema_grows_a_nullable_column_for_a_new_field(
    spark: SparkSession, sink_task: TaskFactory, tmp_path: Path
) -> None:
    topic = _topic()
    task = sink_task(register_table="true")
    partition = TopicPartition(topic, 0)
    task.open({partition})
    task.put(records([{"id": 1, "name": "a"}, {"id": 2, "name": "b", "score": None}], topic))
    task.pre_commit({partition: 2})
    assert spark.table(topic).schema.simpleString() == "struct<id:bigint,name:string>"
    task.put(records([{"id": 3, "name": "c", "score": 1.5, "tags": ["x"]}], topic, first=2))
    task.pre_commit({partition: 3})

    path = str(tmp_path / "warehouse" / topic)
    frame = spark.read.parquet(path)  # _common_metadata gives the newest schema
    schema = "struct<id:bigint,name:string,score:double,tags:array<string>>"
    assert frame.schema.simpleString() == schema
    assert [(r["id"], r["score"], r["tags"]) for r in _rows(frame)] == [
        (1, None, None),
        (2, None, None),
        (3, 1.5, ["x"]),
    ]
    assert spark.table(topic).schema.simpleString() == schema
    assert spark.sql(f"SELECT count(*) AS n FROM {topic} WHERE score IS NULL").first()["n"] == 2  # type: ignore[index]

    # A new task (restart) with schema.evolution=none keeps the table and drops new fields.
    task.stop()
    again = sink_task(register_table="true", schema_evolution="none")
    again.open({partition})
    again.put(records([{"id": 4, "name": "d", "unknown": True}], topic, first=3))
    again.pre_commit({partition: 4})
    assert spark.read.parquet(path).schema.simpleString() == schema
    assert [r["id"] for r in _rows(spark.sql(f"SELECT id FROM {topic}"))] == [1, 2, 3, 4]


def test_partition_columns_derived_date_and_field(
    spark: SparkSession, sink_task: TaskFactory, tmp_path: Path
) -> None:
    topic = _topic()
    task = sink_task(
        schema="id bigint, country string, ts timestamp",
        partition_columns="country",
        partition_date_field="ts",
        register_table="true",
    )
    partition = TopicPartition(topic, 0)
    task.open({partition})
    values = [
        {"id": 1, "country": "FR", "ts": "2024-05-01T23:59:00Z"},
        {"id": 2, "country": "DE", "ts": "2024-05-02T00:01:00Z"},
        {"id": 3, "country": "FR", "ts": "2024-05-02T08:00:00+02:00"},
        {"id": 4, "country": None, "ts": None},
    ]
    task.put(records(values, topic))
    task.pre_commit({partition: 4})

    table = tmp_path / "warehouse" / topic
    directories = sorted(str(p.parent.relative_to(table)) for p in table.rglob("part-*.parquet"))
    assert directories == [
        "country=DE/date=2024-05-02",
        "country=FR/date=2024-05-01",
        "country=FR/date=2024-05-02",
        "country=__HIVE_DEFAULT_PARTITION__/date=__HIVE_DEFAULT_PARTITION__",
    ]
    rows = _rows(spark.sql(f"SELECT id, country, date FROM {topic}"))
    assert rows == [
        {"id": 1, "country": "FR", "date": dt.date(2024, 5, 1)},
        {"id": 2, "country": "DE", "date": dt.date(2024, 5, 2)},
        {"id": 3, "country": "FR", "date": dt.date(2024, 5, 2)},
        {"id": 4, "country": None, "date": None},
    ]
    assert spark.table(topic).schema.simpleString() == (
        "struct<id:bigint,ts:timestamp,country:string,date:date>"
    )
    # a later commit adds a partition directory: the catalog finds it
    task.put(records([{"id": 5, "country": "IT", "ts": "2024-06-01T00:00:00Z"}], topic, first=4))
    task.pre_commit({partition: 5})
    found = spark.sql(f"SELECT id FROM {topic} WHERE date = DATE'2024-06-01'").collect()
    assert [row["id"] for row in found] == [5]


@pytest.mark.parametrize(
    ("value", "field", "reason"),
    [
        ({"name": "x"}, "id", "required field is missing"),
        ({"id": "seven"}, "id", "expected an integer (bigint), got 'seven' (str)"),
        ({"id": 1, "amount": 123456789012.5}, "amount", "does not fit decimal(10,2)"),
        ({"id": 1, "ts": "yesterday"}, "ts", "expected a timestamp"),
        ("{not json", "", "the value is not JSON"),
    ],
)
def test_a_bad_record_fails_the_task_naming_where_and_what(
    spark: SparkSession, sink_task: TaskFactory, value: Any, field: str, reason: str
) -> None:
    task = sink_task(schema=DDL)
    task.open({TopicPartition("orders", 3)})
    with pytest.raises(BadRecordError) as failure:
        task.put([record(json.dumps({"id": 0}), 40, partition=3), record(value, 41, partition=3)])
    message = str(failure.value)
    assert "orders[3]@41" in message, message
    assert f"{field}: " in message if field else True, message
    assert reason in message, message


def test_bad_records_go_to_the_reporter_under_tolerance_all(
    spark: SparkSession, sink_task: TaskFactory, tmp_path: Path
) -> None:
    context = FakeContext(reporter=True)
    task = sink_task(context, schema=DDL, errors_tolerance="all")
    partition = TopicPartition("orders", 0)
    task.open({partition})
    task.put(records([{"id": 1}, {"name": "no id"}, {"id": 3}, {"id": "x"}]))
    assert task.pre_commit({partition: 4}) == {partition: 4}
    ids = [r["id"] for r in spark.read.parquet(str(tmp_path / "warehouse" / "orders")).collect()]
    assert sorted(ids) == [1, 3]
    assert [(r.kafka_offset, str(e).split(": ", 2)[-1]) for r, e in context.reported] == [
        (1, "id: required field is missing"),
        (3, "id: expected an integer (bigint), got 'x' (str)"),
    ]
