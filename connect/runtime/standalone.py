"""A standalone worker: configs and statuses in memory, every connector and task run here.

As Kafka's ``StandaloneHerder``: connector configs live in the worker's memory (the deployment
files are the durable copy), source offsets in a file
(:class:`~sluice.connect.runtime.offsets.FileOffsetStore`), sink offsets in each connector's
consumer group ``connect-<name>``. The runtime is the distributed one's
(:class:`~sluice.connect.runtime.reconciler.Reconciler`) over memory stores and one slot, so a
connector behaves the same in both modes; a change made through the REST API is in effect
when the request returns.
"""

from __future__ import annotations

from typing import Any

from sluice.connect.runtime.backing_map import MemoryMap
from sluice.connect.runtime.config_store import ConfigStore
from sluice.connect.runtime.offsets import OffsetStore
from sluice.connect.runtime.reconciler import LocalAssignment, Reconciler
from sluice.connect.runtime.status_store import StatusStore
from sluice.connect.runtime.worker import Worker

__all__ = ["standalone_worker"]


def standalone_worker(config: dict[str, Any], offsets: OffsetStore) -> Reconciler:
    """A standalone worker with settings ``config`` (Kafka Connect's names) and its source
    offsets in ``offsets``; :meth:`~Reconciler.start` it, serve it with a
    :class:`~sluice.connect.runtime.herder.Herder`, :meth:`~Reconciler.stop` it."""
    worker = Worker(config, offsets)
    return Reconciler(
        worker,
        ConfigStore(MemoryMap()),
        StatusStore(MemoryMap()),
        LocalAssignment(),
        synchronous=True,
    )
