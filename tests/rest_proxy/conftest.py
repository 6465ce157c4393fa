"""Fixtures for tests/rest_proxy: the proxy process."""

from tests.rest_proxy.fixtures import proxy, proxy_factory  # noqa: F401
