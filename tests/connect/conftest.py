"""Fixtures for tests/connect: the REST API tests' herder, client and topic."""

from tests.connect.rest_fixtures import client, herder, topic  # noqa: F401
