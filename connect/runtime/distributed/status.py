"""The records of ``connect-status``, in Kafka Connect's format.

Each worker writes the state of the connectors and tasks it runs; every worker reads them all,
so any worker's REST API answers for the whole group::

    status-connector-<name>   {"state", "trace", "worker_id", "generation"}
    status-task-<name>-<n>    {"state", "trace", "worker_id", "generation"}

A worker writes ``UNASSIGNED`` for what it stops and tombstones for a deleted connector's
records. A worker that dies writes nothing: its last states stay until the worker that takes
its work over writes new ones.
"""

from __future__ import annotations

from typing import Any

from sluice.connect.runtime.topic_store import TopicMap

__all__ = ["StatusLog", "connector_key", "task_key"]


def connector_key(name: str) -> str:
    """The status record key of a connector."""
    return f"status-connector-{name}"


def task_key(name: str, task: int) -> str:
    """The status record key of a task."""
    return f"status-task-{name}-{task}"


class StatusLog:
    """States of every connector and task of the group; see the module docstring."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = 5) -> None:
        self.map = TopicMap(bootstrap, topic, partitions=partitions)
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

    def forget(self, name: str, tasks: int) -> None:
        """Tombstones for a deleted connector's records (tasks 0..``tasks``-1)."""
        self.put(connector_key(name), None)
        for task in range(tasks):
            self.put(task_key(name, task), None)

    def close(self) -> None:
        """Stop following the topic."""
        self.map.close()
