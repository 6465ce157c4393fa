"""Spark connectors: the ``sluice`` PySpark data source and the ``spark-sink`` Connect sink.

The only package of Sluice that imports pyspark (installed with the ``spark`` extra).
"""

from sluice.connectors.spark.sink import SparkSinkConnector, SparkSinkTask
from sluice.connectors.spark.source import SluiceDataSource, register

__all__ = ["SluiceDataSource", "SparkSinkConnector", "SparkSinkTask", "register"]
