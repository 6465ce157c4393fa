"""Spark SQL over the table that ``spark-sink`` (lake.yaml) writes: spend per customer and day.

    python examples/spark_pipeline/query.py [--lake lake]

Registers ``<lake>/purchases`` as the view ``purchases`` (Spark reads the Parquet files of
committed batches; the ``date`` partition column comes from the directory names) and runs
``top_customers.sql``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

SQL = Path(__file__).with_name("top_customers.sql")


def top_customers(spark: Any, lake: Path) -> Any:
    """The result of ``top_customers.sql`` over the table in ``lake`` (a DataFrame)."""
    spark.read.parquet(str(lake / "purchases")).createOrReplaceTempView("purchases")
    return spark.sql(SQL.read_text())


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", default="lake", type=Path, help="spark-sink's warehouse.path")
    args = parser.parse_args(argv)
    from sluice.connectors.spark import session  # quiet start; SLUICE_SPARK_VERBOSE=1 for all

    spark = session("local[2]", "sluice-spark-pipeline-sql", {"spark.sql.session.timeZone": "UTC"})
    spark.sparkContext.setLogLevel("WARN")
    try:
        top_customers(spark, args.lake).show(truncate=False)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
