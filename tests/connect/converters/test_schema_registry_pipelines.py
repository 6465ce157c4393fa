"""Schema registry converters in whole pipelines of real processes (PostgreSQL, a ``sluice
connect standalone`` worker, a registry): ``postgres-cdc`` → Avro → ``jdbc-sink`` and Avro
records → ``spark-sink`` (Parquet), keeping decimals, dates and timestamps."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg2
import pyarrow as pa
import pyarrow.parquet as pq
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient

from sluice import clients
from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.logical import date_schema, timestamp_schema
from tests.conftest import SLUICE, BrokerProcess, create_topic, stop_process
from tests.connect.converters.converter_fixtures import (
    AVRO,
    PRICE_10_2,
    avro_converter,
)
from tests.connect.worker_helpers import standalone_worker
from tests.pg import PostgresServer, shared_postgres  # noqa: F401  (fixture)
from tests.schema_registry.conftest import RegistryProcess

# -- pipelines of real processes

CATCH_UP_S = 120.0


def _execute(dsn: str, *statements: str) -> None:
    connection = psycopg2.connect(dsn)
    try:
        with connection, connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
    finally:
        connection.close()


def _query(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    connection = psycopg2.connect(dsn)
    try:
        with connection, connection.cursor() as cursor:
            cursor.execute(sql)
            return list(cursor.fetchall())
    finally:
        connection.close()


def _pipeline(
    path: Path, server: PostgresServer, source: str, target: str, prefix: str, url: str
) -> None:
    converters = f"""\
    key.converter: {AVRO}
    key.converter.schema.registry.url: {url}
    value.converter: {AVRO}
    value.converter.schema.registry.url: {url}
"""
    path.write_text(
        f"""\
- name: capture
  class: postgres-cdc
  config:
    database.hostname: 127.0.0.1
    database.port: {server.port}
    database.user: sluice
    database.password: sluice
    database.dbname: {source}
    topic.prefix: {prefix}
    table.include.list: public.orders
    slot.name: {prefix}_slot
    publication.name: {prefix}_publication
    slot.drop.on.stop: true
    time.precision.mode: connect
{converters}
- name: replicate
  class: jdbc-sink
  config:
    topics: {prefix}.public.orders
    connection.url: {server.url(target)}
    insert.mode: upsert
    pk.mode: record_key
    auto.create: true
{converters}
  transforms:
    - name: unwrap
      type: unwrap
    - name: route
      type: org.apache.kafka.connect.transforms.RegexRouter
      regex: '{prefix}\\.public\\.(.*)'
      replacement: '$1'
"""
    )


def test_cdc_through_the_avro_converter_keeps_column_types(
    shared_broker: BrokerProcess,
    shared_postgres: PostgresServer,  # noqa: F811
    registry: RegistryProcess,
    tmp_path: Path,
) -> None:
    """postgres-cdc (``time.precision.mode=connect``) → AvroConverter → jdbc-sink, real
    processes: numeric(10,2) arrives as a numeric(10,2) column, date as a date, timestamp(3) as
    a timestamp; the topic holds Confluent wire-format Avro whose registered schema gives back
    the connector's Connect schema."""
    prefix = f"avro{uuid.uuid4().hex[:8]}"
    source, target = f"{prefix}_src", f"{prefix}_dst"
    shared_postgres.create_database(source)
    shared_postgres.create_database(target)
    source_dsn, target_dsn = shared_postgres.dsn(source), shared_postgres.dsn(target)
    _execute(
        source_dsn,
        "CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(10,2) NOT NULL, "
        "day date NOT NULL, placed_at timestamp(3) NOT NULL, note text)",
        "INSERT INTO orders VALUES (1, 12345678.90, '2024-02-29', '2024-02-29 13:14:15.123', "
        "'first'), (2, -0.05, '1969-12-31', '1970-01-01 00:00:00', NULL)",
    )
    topic = create_topic(shared_broker.bootstrap, name=f"{prefix}.public.orders")
    pipeline = tmp_path / "pipeline.yaml"
    _pipeline(pipeline, shared_postgres, source, target, prefix, registry.url)
    log = tmp_path / "worker.log"
    command = [
        *(str(SLUICE), "connect", "standalone", str(pipeline), "-b", shared_broker.bootstrap),
        *("--offsets", str(tmp_path / "offsets.json"), "--rest", ""),
        *("-X", "offset.flush.interval.ms=500"),
    ]
    with log.open("ab") as out:
        worker = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_for_rows(target_dsn, 2, worker, log)
        _execute(
            source_dsn,
            "INSERT INTO orders VALUES "
            "(3, 0.01, '2000-01-01', '2000-01-01 00:00:00.5', 'streamed')",
            "UPDATE orders SET amount = 99999999.99 WHERE id = 1",
        )
        _wait_for(
            lambda: (
                _query(target_dsn, "SELECT amount FROM orders WHERE id IN (1, 3) ORDER BY id")
                == [(Decimal("99999999.99"),), (Decimal("0.01"),)]
            ),
            "the streamed changes in the target",
            worker,
            log,
        )
    finally:
        stop_process(worker)

    columns = dict(
        (name, (kind, precision, scale))
        for name, kind, precision, scale in _query(
            target_dsn,
            "SELECT column_name, data_type, numeric_precision, numeric_scale "
            "FROM information_schema.columns WHERE table_name = 'orders'",
        )
    )
    assert columns["amount"] == ("numeric", 10, 2)
    assert columns["placed_at"][0] == "timestamp without time zone"
    assert columns["day"][0] == "date"
    assert columns["id"][0] == "bigint"
    assert columns["note"][0] == "text"
    rows = _query(target_dsn, "SELECT id, amount, day, placed_at, note FROM orders ORDER BY id")
    assert rows == [
        (1, Decimal("99999999.99"), dt.date(2024, 2, 29),
         dt.datetime(2024, 2, 29, 13, 14, 15, 123000), "first"),
        (2, Decimal("-0.05"), dt.date(1969, 12, 31), dt.datetime(1970, 1, 1), None),
        (3, Decimal("0.01"), dt.date(2000, 1, 1), dt.datetime(2000, 1, 1, 0, 0, 0, 500000),
         "streamed"),
    ]  # fmt: skip

    # On the topic: Confluent's wire format, the schemas in the registry under the topic's
    # subjects, and the converter gives back the connector's Connect schema (Debezium's names).
    client = SchemaRegistryClient({"url": registry.url})
    try:
        assert {f"{topic}-key", f"{topic}-value"} <= set(client.get_subjects())
        value_schema = json.loads(
            client.get_latest_version(f"{topic}-value").schema.schema_str or ""
        )
    finally:
        client.close()
    assert value_schema["connect.name"] == f"{prefix}.public.orders.Envelope"
    first = _first_value(shared_broker.bootstrap, topic)
    assert first[0] == 0  # the magic byte
    schema, value = avro_converter(registry.url).to_connect(topic, first)
    assert schema is not None
    after = schema.field("after")
    assert after is not None
    types = {f.name: (f.schema.type, f.schema.name) for f in after.schema.fields}
    assert types == {
        "id": ("int64", None),
        "amount": ("bytes", "org.apache.kafka.connect.data.Decimal"),
        "day": ("int32", "org.apache.kafka.connect.data.Date"),
        "placed_at": ("int64", "org.apache.kafka.connect.data.Timestamp"),
        "note": ("string", None),
    }
    assert dict(after.schema.fields[1].schema.parameters) == {
        "scale": "2",
        "connect.decimal.precision": "10",
    }
    row = value.get("after")
    assert row.get("amount") == Decimal("12345678.90")
    assert row.get("day") == dt.date(2024, 2, 29)


def _first_value(bootstrap: str, topic: str) -> bytes:
    consumer = clients.consumer(bootstrap, **{"auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error() and message.value() is not None:
                value = message.value()
                assert isinstance(value, bytes)
                return value
        raise AssertionError(f"no record in {topic}")
    finally:
        consumer.close()


def _wait_for_rows(dsn: str, count: int, worker: subprocess.Popen[bytes], log: Path) -> None:
    def ready() -> bool:
        try:
            return _query(dsn, "SELECT count(*) FROM orders")[0][0] >= count
        except psycopg2.Error:  # the table is not created yet
            return False

    _wait_for(ready, f"{count} rows in the target", worker, log)


def _wait_for(condition: Any, what: str, worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + CATCH_UP_S
    while time.monotonic() < deadline:
        assert worker.poll() is None, log.read_text()
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}; worker log:\n{log.read_text()[-6000:]}")


EVENT = Schema.struct(
    [
        Field("id", Schema("int64")),
        Field("amount", PRICE_10_2),
        Field("day", date_schema()),
        Field("at", timestamp_schema()),
        Field("note", Schema("string", optional=True)),
    ],
    name="shop.Event",
)


def test_spark_sink_takes_avro_records_with_typed_columns(
    shared_broker: BrokerProcess, registry: RegistryProcess, tmp_path: Path
) -> None:
    """Avro records (written by the converter) → ``spark-sink`` with ``value.converter`` set to
    AvroConverter, in a worker process: the Parquet table's columns are decimal(38, 2), date and
    timestamp, and the values are the ones written."""
    topic = create_topic(shared_broker.bootstrap)
    writer = avro_converter(registry.url)
    producer = Producer({"bootstrap.servers": shared_broker.bootstrap})
    events = [
        Struct(
            EVENT,
            {
                "id": i,
                "amount": Decimal("12345678.90") - i,
                "day": dt.date(2024, 2, 28) + dt.timedelta(days=i),
                "at": dt.datetime(2024, 2, 28, 12, 0, i, 123000, tzinfo=dt.UTC),
                "note": None if i % 2 else f"n{i}",
            },
        )
        for i in range(4)
    ]
    for event in events:
        producer.produce(topic, writer.from_connect(topic, EVENT, event))
    assert producer.flush(30) == 0
    table = tmp_path / "warehouse" / "events"
    config = tmp_path / "deploy.yaml"
    config.write_text(
        f"""\
- name: land-events
  class: spark-sink
  config:
    topics: {topic}
    warehouse.path: {tmp_path / "warehouse"}
    table.name.format: events
    register.table: "false"
    flush.size: "4"
    value.converter: {AVRO}
    value.converter.schema.registry.url: {registry.url}
"""
    )
    worker = standalone_worker(config, shared_broker.bootstrap, tmp_path)
    log = tmp_path / "worker.log"
    try:
        _wait_for(lambda: _parquet_rows(table) >= len(events), "the Parquet table", worker, log)
    finally:
        stop_process(worker)
    landed = pq.read_table(sorted(table.rglob("part-*.parquet")))
    assert landed.schema.field("amount").type == pa.decimal128(38, 2)
    assert landed.schema.field("day").type == pa.date32()
    assert pa.types.is_timestamp(landed.schema.field("at").type)
    assert landed.schema.field("id").type == pa.int64()
    got = sorted(landed.to_pylist(), key=lambda row: row["id"])
    assert [(r["id"], r["amount"], r["day"], r["note"]) for r in got] == [
        (e.get("id"), e.get("amount"), e.get("day"), e.get("note")) for e in events
    ]
    stamps = [r["at"] if r["at"].tzinfo else r["at"].replace(tzinfo=dt.UTC) for r in got]
    assert stamps == [e.get("at") for e in events]


def _parquet_rows(table: Path) -> int:
    files = sorted(table.rglob("part-*.parquet"))
    return sum(pq.read_metadata(f).num_rows for f in files if "_sluice_staging" not in str(f))
