"""``sluice up``: the whole platform from one YAML file.

A ``sluice.yaml`` declares a deployment (:mod:`sluice.up.loader` reads it, :mod:`sluice.up.spec`
holds it) and :class:`~sluice.up.supervisor.Supervisor` runs it as child processes: the broker,
a Connect worker with its connectors, Streams apps and other programs, started again by their
restart policy and stopped in order; :mod:`sluice.up.state` owns the state file
``sluice status`` reads. The file format is in ``docs/cli.md``.

The spec, the loader and the supervisor are imported on first use, so that reading the state file
(``sluice status``) does not load them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sluice.up.state import RELOAD_FILE, STATE_FILE

if TYPE_CHECKING:
    from sluice.up.loader import load
    from sluice.up.spec import BrokerSpec, ConnectSpec, Deployment, ProgramSpec, TopicSpec
    from sluice.up.supervisor import STREAMS_CONFIG, Supervisor, UpError

__all__ = [
    "RELOAD_FILE",
    "STATE_FILE",
    "STREAMS_CONFIG",
    "BrokerSpec",
    "ConnectSpec",
    "Deployment",
    "ProgramSpec",
    "Supervisor",
    "TopicSpec",
    "UpError",
    "load",
]

_LAZY = {
    **dict.fromkeys(
        ("BrokerSpec", "ConnectSpec", "Deployment", "ProgramSpec", "TopicSpec"), "sluice.up.spec"
    ),
    "load": "sluice.up.loader",
    "STREAMS_CONFIG": "sluice.up.supervisor",
    "Supervisor": "sluice.up.supervisor",
    "UpError": "sluice.up.supervisor",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
