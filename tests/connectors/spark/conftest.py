"""A real local Spark for the Spark connector tests: one session for the whole test session.

Spark's Python workers run this interpreter (``PYSPARK_PYTHON``), so they import the installed
``sluice``. The UI is off and shuffles use two partitions (two cores). Tests that start Spark in
another process (a Connect worker running ``spark-sink``, a streaming query to ``kill -9``) do
not use this fixture.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
}


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    """A local SparkSession (``local[2]``), stopped at the end of the session."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    builder = SparkSession.builder.master("local[2]").appName("sluice-tests")
    for key, value in {**SPARK_CONF, "spark.sql.warehouse.dir": str(warehouse)}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
