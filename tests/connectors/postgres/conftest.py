"""Fixtures of the postgres-cdc tests (see fixtures.py): a real PostgreSQL, no mocks."""

from tests.connectors.postgres.fixtures import capture, db  # noqa: F401
from tests.pg import PostgresServer, postgres, shared_postgres  # noqa: F401
