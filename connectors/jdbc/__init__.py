"""Database connectors for any SQLAlchemy database: ``jdbc-source`` and ``jdbc-sink``.

Named and configured as Confluent's JDBC connectors (``connection.url``, ``mode``,
``insert.mode``, ``pk.mode``…), with SQLAlchemy URLs in place of JDBC ones.
"""

from sluice.connectors.jdbc.sink import JdbcSinkConnector, JdbcSinkTask
from sluice.connectors.jdbc.source import JdbcSourceConnector, JdbcSourceTask

__all__ = ["JdbcSinkConnector", "JdbcSinkTask", "JdbcSourceConnector", "JdbcSourceTask"]
