"""Helpers of the ``sluice`` Spark source tests: produce known records, read what Spark returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, Message, Producer

from tests.conftest import CLIENT_TIMEOUT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

BASE_TS = 1_700_000_000_000  # ms: records get BASE_TS + their index as CreateTime


@dataclass(frozen=True)
class Produced:
    """One record as the broker stored it."""

    key: bytes | None
    value: bytes
    partition: int
    offset: int
    timestamp_ms: int
    headers: tuple[tuple[str, bytes], ...] | None


def produce(
    bootstrap: str,
    topic: str,
    count: int,
    partitions: int = 3,
    *,
    first: int = 0,
    headers: bool = False,
) -> list[Produced]:
    """Produce ``count`` records round-robin over ``partitions``; returns them with their offsets.

    Record ``i`` (from ``first``) has key ``k<i>`` (none for every 7th), value ``v<i>``, CreateTime
    ``BASE_TS + i`` and, with ``headers``, headers ``[("n", b"<i>"), ("tag", b"x")]`` on odd ones.
    """
    acked: list[Produced] = []
    errors: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            errors.append(err)
            return
        offset, partition, value = msg.offset(), msg.partition(), msg.value()
        assert offset is not None and partition is not None and value is not None
        i = int(value[1:])
        acked.append(
            Produced(msg.key(), value, partition, offset, BASE_TS + i, _headers(i, headers))
        )

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(first, first + count):
        kwargs: dict[str, Any] = {}
        if _headers(i, headers):
            kwargs["headers"] = list(_headers(i, headers) or ())
        producer.produce(
            topic,
            key=None if i % 7 == 0 else f"k{i}".encode(),
            value=f"v{i}".encode(),
            partition=i % partitions,
            timestamp=BASE_TS + i,
            on_delivery=on_delivery,
            **kwargs,
        )
    assert producer.flush(CLIENT_TIMEOUT) == 0, "records still unsent after the flush"
    assert not errors, f"produce failed: {errors}"
    return sorted(acked, key=lambda r: (r.partition, r.offset))


def _headers(i: int, wanted: bool) -> tuple[tuple[str, bytes], ...] | None:
    return (("n", str(i).encode()), ("tag", b"x")) if wanted and i % 2 else None


def source(spark: SparkSession, bootstrap: str, **options: str | int) -> Any:
    """``spark.read.format("sluice")`` with the bootstrap and ``options`` (a DataFrameReader)."""
    reader = spark.read.format("sluice").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader


def rows(df: DataFrame) -> list[Produced]:
    """A DataFrame of the source as :class:`Produced` records, by partition and offset."""
    has_headers = "headers" in df.columns
    out = []
    for row in df.selectExpr("*", "unix_millis(timestamp) AS ts_ms").collect():
        headers = None
        if has_headers and row["headers"] is not None:
            headers = tuple((h["key"], bytes(h["value"])) for h in row["headers"])
        out.append(
            Produced(
                None if row["key"] is None else bytes(row["key"]),
                bytes(row["value"]),
                row["partition"],
                row["offset"],
                row["ts_ms"],
                headers,
            )
        )
    return sorted(out, key=lambda r: (r.partition, r.offset))
