"""Spark: rows/s read through the ``sluice`` source into Parquet, beside Spark's own JSON reader.

    python bench/spark.py [--records N] [--partitions P] [--rounds R] [--timeout S] [--json PATH]

One Sluice broker (``_harness.running_broker``), log under the system's temporary directory, and
one local SparkSession (``local[2]``, 2 GB driver, UI off) in this process. The same N records
(``_spark_data``: values of 100 B, no key) go to a P-partition topic (produced from a spawned
child) and to P JSON-lines files. Then, R rounds, each timing in turn:

1. **The ceiling**: Spark reads the JSON-lines files with a declared schema (the source's
   columns; no inference pass) and writes them to Parquet —
   ``spark.read.schema(...).json(dir).write.parquet(out)``. Spark's JSON reader runs in the JVM:
   that is as fast as Spark turns ~100 B records from outside into Parquet on this machine.
2. **sluice, batch**: ``spark.read.format("sluice")...load().write.parquet(out)`` — the source
   plans one input partition per topic-partition, and each task reads its range in a Python
   worker through confluent_kafka and hands Spark Arrow batches.
3. **sluice, AvailableNow**: ``spark.readStream.format("sluice")`` → Parquet with a fresh
   checkpoint and ``Trigger.AvailableNow``, from ``start()`` until the query ends (one
   micro-batch, plus the checkpoint's offset and commit logs).

Each figure is N / the wall time of the write (every row lands: the Parquet is counted after
each run, untimed). A warm-up round on a small topic and files comes first (Python workers
started, classes loaded), untimed; every other round runs the three backwards. The medians of
the R rounds (5 by default) are reported; the ratio is the batch read's median rows/s over the
ceiling's, target ≥ 50 %. "per round" shows each round's ratio (the two runs minutes apart at
most, so a burst of load from elsewhere shows there as one outlier). The SparkSession's start
(``getOrCreate``: the JVM) is timed and shown apart. Every Spark action is bounded by
``--timeout`` seconds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _harness import create_topic, in_child, median, running_broker
from _spark_data import VALUE_BYTES, produce, write_json_lines
from broker_throughput import _machine
from rich.console import Console
from rich.table import Table

TARGET = 0.50
TOPIC = "bench-spark"
WARMUP_TOPIC = "bench-spark-warmup"
WARMUP_RECORDS = 20_000
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "2g",
    "spark.sql.session.timeZone": "UTC",
}
JSON_SCHEMA = (
    "key STRING, value STRING, topic STRING, `partition` INT, `offset` BIGINT, "
    "`timestamp` TIMESTAMP, timestampType INT"
)


@dataclass
class Figure:
    """One way of reading the records into Parquet, over the rounds."""

    label: str
    seconds: list[float] = field(default_factory=list)

    def rows_per_second(self, records: int) -> float:
        m = median(self.seconds)
        return records / m if m > 0 else 0.0


def start_spark() -> tuple[Any, float]:
    """A local SparkSession with the sluice source registered, and the seconds it took."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from sluice.connectors.spark import register

    started = time.monotonic()
    builder = SparkSession.builder.master("local[2]").appName("sluice-bench-spark")
    for key, value in SPARK_CONF.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    elapsed = time.monotonic() - started
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark, elapsed


def bounded(spark: Any, timeout: float, action: Callable[[], None], what: str) -> float:
    """Run ``action`` (Spark jobs) and return its seconds; cancel every job after ``timeout``."""
    timer = threading.Timer(timeout, spark.sparkContext.cancelAllJobs)
    started = time.monotonic()
    timer.start()
    try:
        action()
    finally:
        timer.cancel()
    elapsed = time.monotonic() - started
    if elapsed >= timeout:
        raise TimeoutError(f"{what} did not finish within {timeout:.0f} s")
    return elapsed


def json_to_parquet(spark: Any, source: Path, out: Path) -> Callable[[], None]:
    def run() -> None:
        spark.read.schema(JSON_SCHEMA).json(str(source)).write.mode("overwrite").parquet(str(out))

    return run


def sluice_to_parquet(spark: Any, bootstrap: str, topic: str, out: Path) -> Callable[[], None]:
    def run() -> None:
        (
            spark.read.format("sluice")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .load()
            .write.mode("overwrite")
            .parquet(str(out))
        )

    return run


def sluice_available_now(
    spark: Any, bootstrap: str, topic: str, out: Path, timeout: float
) -> Callable[[], None]:
    def run() -> None:
        for leftover in (out / "data", out / "checkpoint"):
            if leftover.exists():
                _remove(leftover)
        query = (
            spark.readStream.format("sluice")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .load()
            .writeStream.format("parquet")
            .option("path", str(out / "data"))
            .option("checkpointLocation", str(out / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        try:
            if not query.awaitTermination(timeout):
                raise TimeoutError(f"the AvailableNow query did not end within {timeout:.0f} s")
        finally:
            query.stop()

    return run


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path)


def check_count(spark: Any, path: Path, records: int, what: str) -> None:
    """The Parquet at ``path`` holds ``records`` rows (read back by Spark, untimed)."""
    got = spark.read.parquet(str(path)).count()
    if got != records:
        raise RuntimeError(f"{what}: the Parquet holds {got:,} rows, not {records:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per run")
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions / files")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (median reported)")
    parser.add_argument("--timeout", type=float, default=600.0, help="bound of each run, s")
    parser.add_argument("--json", type=Path, help="also write the figures there")
    args = parser.parse_args()
    n, parts = args.records, args.partitions
    console = Console(width=max(Console().width, 140))
    started = datetime.datetime.now(datetime.UTC)
    console.log(f"{_machine()}; {n:,} records of {VALUE_BYTES} B in {parts} partitions")

    with (
        tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp,
        running_broker("sluice") as broker,
    ):
        work = Path(tmp)
        for topic, count in ((WARMUP_TOPIC, WARMUP_RECORDS), (TOPIC, n)):
            create_topic(broker.bootstrap, topic, parts)
            took = in_child(
                produce, broker.bootstrap, topic, count, parts, args.timeout, timeout=args.timeout
            )
            console.log(f"produced {count:,} records to {topic} in {took:.1f} s")
        size = write_json_lines(work / "json", TOPIC, n, parts)
        write_json_lines(work / "json-warmup", WARMUP_TOPIC, WARMUP_RECORDS, parts)
        console.log(f"wrote {size / 1e6:.0f} MB of JSON lines")

        spark, session_start = start_spark()
        console.log(f"SparkSession started in {session_start:.1f} s")
        try:
            figures, first_query = measure(spark, broker.bootstrap, work, n, args)
        finally:
            spark.stop()

    ceiling = figures[0].rows_per_second(n)
    table = Table(
        title=f"Spark, {n:,} records of {VALUE_BYTES} B, {parts} partitions, local[2], "
        f"median of {args.rounds} ({started:%Y-%m-%d %H:%M} UTC, "
        f"load average now {os.getloadavg()[0]:.2f})"
    )
    columns = ("figure", "rows/s", "MB/s (values)", "seconds", "per round", "vs ceiling")
    for column in (*columns, "target ≥ 50 %"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    verdicts = {}
    for i, figure in enumerate(figures):
        rate = figure.rows_per_second(n)
        ratio = rate / ceiling if ceiling else 0.0
        rounds = [c / t for c, t in zip(figures[0].seconds, figure.seconds, strict=True) if t]
        verdict = ""
        if i == 1:
            verdict = "PASS" if ratio >= TARGET else "FAIL"
        if i:
            verdicts[figure.label] = {
                "ratio": ratio,
                "per_round": rounds,
                "verdict": verdict or "(shown)",
            }
        table.add_row(
            figure.label,
            f"{rate:,.0f}",
            f"{rate * VALUE_BYTES / 1e6:,.1f}",
            " ".join(f"{s:.1f}" for s in figure.seconds),
            "" if i == 0 else " ".join(f"{r:.0%}" for r in rounds),
            "" if i == 0 else f"{ratio:.0%}",
            f"[bold]{verdict}[/bold]" if verdict else "",
        )
    console.print(table)
    console.print(
        f"SparkSession start (getOrCreate, the JVM): {session_start:.1f} s; "
        f"warm-up round (first queries, Python workers): {first_query:.1f} s"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "records": n,
                    "partitions": parts,
                    "started": started.isoformat(),
                    "session_start_s": session_start,
                    "warmup_s": first_query,
                    "figures": [asdict(f) for f in figures],
                    "targets": verdicts,
                },
                indent=2,
            )
        )


def measure(
    spark: Any, bootstrap: str, work: Path, n: int, args: argparse.Namespace
) -> tuple[list[Figure], float]:
    """The warm-up round, then ``args.rounds`` timed rounds of the three figures."""
    out = work / "out"
    warm = time.monotonic()
    for action, what in (
        (json_to_parquet(spark, work / "json-warmup", out / "w-json"), "warm-up json"),
        (sluice_to_parquet(spark, bootstrap, WARMUP_TOPIC, out / "w-batch"), "warm-up batch"),
        (
            sluice_available_now(spark, bootstrap, WARMUP_TOPIC, out / "w-stream", args.timeout),
            "warm-up AvailableNow",
        ),
    ):
        bounded(spark, args.timeout, action, what)
    warmup = time.monotonic() - warm
    figures = [
        Figure("Spark: JSON lines → Parquet (ceiling)"),
        Figure("sluice source, batch → Parquet"),
        Figure("sluice source, AvailableNow → Parquet"),
    ]
    runs: list[tuple[Callable[[], None], Path]] = [
        (json_to_parquet(spark, work / "json", out / "json"), out / "json"),
        (sluice_to_parquet(spark, bootstrap, TOPIC, out / "batch"), out / "batch"),
        (
            sluice_available_now(spark, bootstrap, TOPIC, out / "stream", args.timeout),
            out / "stream" / "data",
        ),
    ]
    for round_ in range(args.rounds):
        order = list(zip(figures, runs, strict=True))
        if round_ % 2:  # every other round backwards: no figure always runs first after a pause
            order.reverse()
        for figure, (action, written) in order:
            seconds = bounded(spark, args.timeout, action, figure.label)
            check_count(spark, written, n, figure.label)
            figure.seconds.append(seconds)
            Console().log(f"round {round_ + 1}: {figure.label}: {seconds:.1f} s")
    return figures, warmup


if __name__ == "__main__":
    main()
