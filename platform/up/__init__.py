"""``sluice up``: the whole platform from one YAML file.

A ``sluice.yaml`` declares a deployment (:mod:`sluice.up.loader` reads it, :mod:`sluice.up.spec`
holds it) and :class:`~sluice.up.supervisor.Supervisor` runs it as child processes: the broker,
a Connect worker with its connectors, Streams apps and other programs, restarted when they die
and stopped in order. The file format is in ``docs/cli.md``.
"""

from sluice.up.loader import load
from sluice.up.spec import BrokerSpec, ConnectSpec, Deployment, ProgramSpec, TopicSpec
from sluice.up.supervisor import RELOAD_FILE, STATE_FILE, Supervisor, UpError

__all__ = [
    "RELOAD_FILE",
    "STATE_FILE",
    "BrokerSpec",
    "ConnectSpec",
    "Deployment",
    "ProgramSpec",
    "Supervisor",
    "TopicSpec",
    "UpError",
    "load",
]
