"""Fixtures of the JDBC connector tests: PostgreSQL servers, the sink's (``sink_fixtures``) and
the source's (``source_fixtures``)."""

from tests.connectors.jdbc.sink_fixtures import (  # noqa: F401
    jdbc_sink,
    sink_pg_url,
    sink_sqlite_url,
    sink_url,
)
from tests.connectors.jdbc.source_fixtures import (  # noqa: F401
    jdbc_source,
    source_db,
    source_offsets,
    source_pg,
    source_sqlite,
)
from tests.pg import PostgresServer, postgres, shared_postgres  # noqa: F401
