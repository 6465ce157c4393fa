"""Print the quickstart's revenue per tier and minute with PySpark, from the Parquet that
``spark-sink`` wrote (every update of every window; the last one of a window has the most
orders).

    python examples/quickstart/summary.py [--lake .sluice/quickstart/lake] [--verbose]

Spark's start-up lines (JVM and log4j notices) are not shown; ``--verbose`` (or
``SLUICE_SPARK_VERBOSE=1``) shows them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sluice.connectors.spark import session


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", type=Path, default=Path(".sluice/quickstart/lake"))
    parser.add_argument(
        "--verbose", action="store_true", default=None, help="show Spark's start-up lines"
    )
    options = parser.parse_args()
    spark = session(
        "local[1]", "quickstart-summary", {"spark.ui.enabled": "false"}, verbose=options.verbose
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.read.parquet(str(options.lake / "revenue-by-tier")).createOrReplaceTempView("updates")
        spark.sql(
            """
            SELECT tier,
                   timestamp_millis(window_start) AS minute,
                   max_by(revenue, orders) AS revenue,
                   max(orders) AS orders
            FROM updates
            GROUP BY tier, window_start
            ORDER BY window_start, tier
            """
        ).show(50, truncate=False)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
