"""The fixtures of the schema registry converter tests (helpers: ``converter_fixtures``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import BrokerProcess
from tests.connect.converters.converter_fixtures import MADE
from tests.schema_registry.conftest import RegistryFactory, RegistryProcess


@pytest.fixture(scope="module")
def registry(
    shared_broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistryProcess]:
    """One ``sluice schema-registry start`` process for the module's tests, stopped by PID."""
    factory = RegistryFactory(shared_broker.bootstrap, tmp_path_factory.mktemp("registry"))
    try:
        yield factory()
    finally:
        for proc in factory.started:
            proc.stop()


@pytest.fixture(autouse=True)
def _close_converters() -> Iterator[None]:
    """Every converter a test made closes its registry client at teardown."""
    yield
    while MADE:
        MADE.pop().close()
