"""A streaming query for the kill -9 test, run as its own process (its own Spark driver).

    python spark_job.py BOOTSTRAP TOPIC CHECKPOINT OUTPUT MAX_OFFSETS_PER_TRIGGER

Reads TOPIC with ``format("sluice")`` and appends it to Parquet files in OUTPUT, checkpointed in
CHECKPOINT, one micro-batch every 500 ms at most MAX_OFFSETS_PER_TRIGGER records; runs until
killed.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str]) -> None:
    bootstrap, topic, checkpoint, output, max_offsets = argv
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from sluice.connectors.spark.source import register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("sluice-kill-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    query = (
        spark.readStream.format("sluice")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", max_offsets)
        .load()
        .writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    print("query started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(sys.argv[1:])
