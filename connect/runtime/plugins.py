"""Finding connector classes: short aliases, Kafka class names, dotted paths.

Plugins register under the ``sluice.connectors`` entry-point group (Sluice's own file
connectors do, in pyproject.toml); any class can also be named by its dotted path
(``mypackage.module.MyConnector``).
"""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import entry_points

from sluice.connect.api.connector import Connector, SinkConnector

__all__ = ["connector_class", "known_plugins", "plugin_type"]

GROUP = "sluice.connectors"

log = logging.getLogger("sluice.connect")


def known_plugins() -> dict[str, type[Connector]]:
    """Every registered alias and its class (a plugin that fails to load is logged and left out,
    as Kafka Connect does: one broken package must not take the others down)."""
    found: dict[str, type[Connector]] = {}
    for entry in entry_points(group=GROUP):
        try:
            found[entry.name] = entry.load()
        except Exception as error:
            log.warning(
                "connector plugin %s (%s) cannot be loaded: %s", entry.name, entry.value, error
            )
    return found


def connector_class(name: str) -> type[Connector] | None:
    """The class behind an alias, a registered Kafka class name, or a dotted path."""
    for entry in entry_points(group=GROUP):
        if entry.name == name:
            loaded: type[Connector] = entry.load()
            return loaded
    module, _, attribute = name.rpartition(".")
    if not module:
        return None
    try:
        found = getattr(importlib.import_module(module), attribute, None)
    except ImportError:
        return None
    if isinstance(found, type) and issubclass(found, Connector):
        return found
    return None


def plugin_type(cls: type[Connector]) -> str:
    """``source`` or ``sink`` (the REST API's word)."""
    return "sink" if issubclass(cls, SinkConnector) else "source"
