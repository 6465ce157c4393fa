"""The states of connectors and tasks: Kafka Connect's status store.

Kept in a :class:`~sluice.connect.runtime.backing_map.BackingMap`: in memory on a standalone
worker, in ``connect-status`` on a distributed one. Each worker writes the state of the
connectors and tasks it runs; every worker reads them all, so any worker's REST API answers
for the whole group. The records are Kafka Connect's::

    status-connector-<name>   {"state", "trace", "worker_id", "generation"}
    status-task-<name>-<n>    {"state", "trace", "worker_id", "generation"}

A worker writes ``UNASSIGNED`` for what it stops and tombstones for a deleted connector's
records. A worker that dies writes nothing: its last states stay until the worker that takes
its work over writes new ones.
"""

from __future__ import annotations

from typing import Any

from sluice.connect.runtime.backing_map import BackingMap

__all__ = ["StatusStore", "connector_key", "task_key"]


def connector_key(name: str) -> str:
    """The status record key of a connector."""
    return f"status-connector-{name}"


def task_key(name: str, task: int) -> str:
    """The status record key of a task."""
    return f"status-task-{name}-{task}"


class StatusStore:
    """States of every connector and task of the group, in ``records``; see the module
    docstring."""

    def __init__(self, records: BackingMap) -> None:
        self.map = records
        self._written: dict[str, Any] = {}

    def connector(self, name: str) -> dict[str, Any] | None:
        """The last state written for the connector."""
        found: dict[str, Any] | None = self.map.get(connector_key(name))
        return found

    def task(self, name: str, task: int) -> dict[str, Any] | None:
        """The last state written for one task."""
        found: dict[str, Any] | None = self.map.get(task_key(name, task))
        return found

    def put(self, key: str, value: dict[str, Any] | None) -> None:
        """Write a state (None: a tombstone), unless it is what this worker wrote last."""
        if key in self._written and self._written[key] == value:
            return
        self.map.put(key, value, wait=False)
        self._written[key] = value

    def close(self) -> None:
        """Stop following the records (a topic's)."""
        self.map.close()
