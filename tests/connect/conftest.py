"""Fixtures for tests/connect: the REST API tests' herder, client and topic; distributed workers."""

from tests.connect.cluster_fixtures import cluster  # noqa: F401
from tests.connect.rest_fixtures import client, herder, topic  # noqa: F401
