"""PostgreSQL change data capture (``postgres-cdc``): logical replication with ``pgoutput``,
a consistent initial snapshot, Debezium-shaped change events, and Debezium's
``ExtractNewRecordState`` transform (:mod:`.unwrap`).

Modules, one concept each: :mod:`.pgoutput` (the protocol decoder), :mod:`.types` (column
types), :mod:`.events` (the envelope), :mod:`.config` (settings, connections), :mod:`.catalog`
(tables, publication, slot), :mod:`.replication` (the replication connection),
:mod:`.snapshot`, :mod:`.changes` (stream → events), :mod:`.source` (connector and task).

The connector registers as ``postgres-cdc`` and under Debezium's class name
(``io.debezium.connector.postgresql.PostgresConnector``) as entry points of the
``sluice.connectors`` group (pyproject.toml).
"""

from __future__ import annotations

from sluice.connectors.postgres.source import PostgresCdcConnector, PostgresCdcTask
from sluice.connectors.postgres.unwrap import ExtractNewRecordState

__all__ = ["ExtractNewRecordState", "PostgresCdcConnector", "PostgresCdcTask"]
