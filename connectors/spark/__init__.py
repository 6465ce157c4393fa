"""Spark connectors: the ``sluice`` PySpark data source and the ``spark-sink`` Connect sink.

The only package of Sluice that imports pyspark (installed with the ``spark`` extra).
:func:`session` starts a SparkSession without the JVM's start-up noise
(``SLUICE_SPARK_VERBOSE=1`` shows it).
"""

from sluice.connectors.spark._quiet import session
from sluice.connectors.spark.sink import SparkSinkConnector, SparkSinkTask
from sluice.connectors.spark.source import SluiceDataSource, register

__all__ = ["SluiceDataSource", "SparkSinkConnector", "SparkSinkTask", "register", "session"]
