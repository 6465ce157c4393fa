"""A real PostgreSQL server for benchmarks: the tests' own (``tests/pg.py``: ``initdb`` into a
temporary directory, started on a free loopback port with ``wal_level=logical``, stopped by PID
and its directory removed), with its commands bounded in time.

PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user, the
directory handed to it. Every database belongs to the superuser ``sluice`` (password
``sluice``)::

    with PostgresServer() as server:
        url = server.create_database("bench")

``fsync`` is off (a benchmark's database is thrown away) and ``synchronous_commit`` on, so a
commit still waits for its WAL to be written (not flushed) before it returns.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the PostgreSQL harness of the tests: tests/pg.py
    sys.path.append(str(ROOT))  # after bench/ and the stdlib: bench/connect.py, not connect/

from tests import pg  # noqa: E402
from tests.pg import PASSWORD, USER  # noqa: E402

__all__ = ["PASSWORD", "USER", "PostgresServer"]


class PostgresServer(pg.PostgresServer):
    """The tests' server (see the module docstring), in a ``bench-pg-*`` directory; ``initdb``
    may take 120 s and one ``pg_isready`` 10 s before the benchmark gives up."""

    directory_prefix = "bench-pg-"
    initdb_timeout_s = 120.0
    pg_isready_timeout_s = 10.0
