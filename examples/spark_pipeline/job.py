"""Revenue per product and 10-minute window, from the ``purchases`` topic into Parquet.

    python examples/spark_pipeline/job.py [--bootstrap localhost:9092] [--out spark-out]

Reads the topic with the ``sluice`` source (``spark.readStream.format("sluice")``), parses each
JSON value, and sums the purchases of each product per 10-minute window of event time (the
``ts`` field) with a 5-minute watermark. A window is written — once, in append mode — when the
watermark passes its end: when a purchase more than 5 minutes after the window's end has been
read. The query runs with ``Trigger.AvailableNow``: it reads what the topic holds, writes the
windows that are closed, and stops. Its checkpoint (``<out>/checkpoint``) keeps the offsets read
and the open windows, so the next run goes on from there: run it again after producing more.

Output: Parquet files in ``<out>/revenue`` with the columns ``window_start``, ``window_end``
(timestamps), ``product``, ``purchases`` (count) and ``revenue`` (``decimal(20,2)``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

TOPIC = "purchases"
PURCHASE = "ts TIMESTAMP, user STRING, product STRING, amount DECIMAL(10,2)"
WINDOW = "10 minutes"
WATERMARK = "5 minutes"
TIMEOUT_S = 600  # the bound on one run


def revenue_per_window(spark: Any, bootstrap: str) -> Any:
    """The streaming DataFrame: closed windows' purchases and revenue per product."""
    from pyspark.sql import functions as sf

    purchases = (
        spark.readStream.format("sluice")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .load()
        .select(sf.from_json(sf.col("value").cast("string"), PURCHASE).alias("p"))
        .select("p.*")
    )
    return (
        purchases.withWatermark("ts", WATERMARK)
        .groupBy(sf.window("ts", WINDOW), "product")
        .agg(sf.count("*").alias("purchases"), sf.sum("amount").alias("revenue"))
        .select(
            sf.col("window.start").alias("window_start"),
            sf.col("window.end").alias("window_end"),
            "product",
            "purchases",
            "revenue",
        )
    )


def run(spark: Any, bootstrap: str, out: Path) -> None:
    """Run the query once with ``Trigger.AvailableNow``: read what is there, write, stop."""
    from sluice.connectors.spark import register

    register(spark)
    query = (
        revenue_per_window(spark, bootstrap)
        .writeStream.format("parquet")
        .outputMode("append")
        .option("path", str(out / "revenue"))
        .option("checkpointLocation", str(out / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        if not query.awaitTermination(TIMEOUT_S):
            raise TimeoutError(f"the query did not finish within {TIMEOUT_S} s")
    finally:
        query.stop()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="localhost:9092", help="the broker")
    parser.add_argument("--out", default="spark-out", type=Path, help="output and checkpoint")
    args = parser.parse_args(argv)
    from sluice.connectors.spark import session  # quiet start; SLUICE_SPARK_VERBOSE=1 for all

    spark = session(
        "local[2]",
        "sluice-spark-pipeline",
        {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "2"},
    )
    spark.sparkContext.setLogLevel("WARN")
    try:
        run(spark, args.bootstrap, args.out)
        windows = spark.read.parquet(str(args.out / "revenue"))
        windows.orderBy("window_start", "product").show(truncate=False)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
