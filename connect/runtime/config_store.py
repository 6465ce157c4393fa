"""Connector configs, target states, task sets and restart requests: Kafka Connect's config store.

Kept in a :class:`~sluice.connect.runtime.backing_map.BackingMap`: in memory on a standalone
worker, in ``connect-configs`` on a distributed one (one partition, compacted, read whole by
every worker). The records are Kafka Connect's, in both::

    connector-<name>          {"properties": {...}}            the connector's config
    target-state-<name>       {"state": ..., "state.v2": ...}  RUNNING | PAUSED | STOPPED
    task-<name>-<n>           {"properties": {...}}            task n's config
    commit-<name>             {"tasks": N}                     tasks 0..N-1 are the current set
    restart-connector-<name>  {"include-tasks", "only-failed"} a restart request (Kafka 3.0)
    restart-task-<name>-<n>   {"requested": <time>}            Sluice's own: restart one task

A task set becomes current only with its ``commit-`` record, written after the task records,
so a worker never starts half of a new set. Deleting a connector writes tombstones for all its
keys. Sluice adds ``"secrets"`` (the names of keys whose values are never shown) beside
``"properties"`` in a connector record; Kafka's readers ignore it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sluice.connect.runtime.backing_map import BackingMap

__all__ = ["ConfigStore", "RestartRequest"]

CONNECTOR = "connector-"
TARGET = "target-state-"
TASK = "task-"
COMMIT = "commit-"
RESTART_CONNECTOR = "restart-connector-"
RESTART_TASK = "restart-task-"


class RestartRequest:
    """A restart asked through the REST API, as read from the topic."""

    def __init__(
        self, connector: str, task: int | None, include_tasks: bool, only_failed: bool
    ) -> None:
        self.connector = connector
        self.task = task
        self.include_tasks = include_tasks
        self.only_failed = only_failed


def _restart(key: str, value: Any) -> RestartRequest | None:
    if value is None:
        return None
    if key.startswith(RESTART_CONNECTOR):
        name = key[len(RESTART_CONNECTOR) :]
        return RestartRequest(
            name, None, bool(value.get("include-tasks")), bool(value.get("only-failed"))
        )
    if key.startswith(RESTART_TASK):
        name, _, task = key[len(RESTART_TASK) :].rpartition("-")
        if task.isdigit():
            return RestartRequest(name, int(task), False, False)
    return None


class ConfigStore:
    """Connector configs, target states and task sets, in ``records``; see the module docstring.

    Once :meth:`listen` is called, ``on_change`` is called (in the reading thread) after any
    record is read, and ``on_restart`` with each restart request — not for the records that
    were there before: requests already in the topic were served before this worker started.
    """

    def __init__(self, records: BackingMap) -> None:
        self._on_change: Callable[[], None] = lambda: None
        self._on_restart: Callable[[RestartRequest], None] = lambda request: None
        self.map = records
        records.on_change = self._changed

    def listen(
        self, on_change: Callable[[], None], on_restart: Callable[[RestartRequest], None]
    ) -> None:
        """Call ``on_change`` after each change read from now on, ``on_restart`` with each
        restart request."""
        self._on_change, self._on_restart = on_change, on_restart

    def _changed(self, key: str, value: Any) -> None:
        request = _restart(key, value)
        if request is not None:
            self._on_restart(request)
        self._on_change()

    # -- reading -------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        """Names of the configured connectors, sorted."""
        return [key[len(CONNECTOR) :] for key, _ in self.map.items(CONNECTOR)]

    def config(self, name: str) -> dict[str, Any] | None:
        """The connector's config (None: no such connector)."""
        record = self.map.get(CONNECTOR + name)
        return None if record is None else dict(record["properties"])

    def secrets(self, name: str) -> frozenset[str]:
        """Keys of the connector's config whose values are never shown."""
        record = self.map.get(CONNECTOR + name)
        return frozenset(record.get("secrets", ())) if record else frozenset()

    def target_state(self, name: str) -> str:
        """RUNNING, PAUSED or STOPPED (RUNNING when never set)."""
        record = self.map.get(TARGET + name) or {}
        return str(record.get("state.v2") or record.get("state") or "RUNNING")

    def tasks(self, name: str) -> list[dict[str, Any]]:
        """The current task set's configs (empty before the first commit or while STOPPED)."""
        commit = self.map.get(COMMIT + name)
        if commit is None:
            return []
        found = []
        for task in range(int(commit["tasks"])):
            record = self.map.get(f"{TASK}{name}-{task}")
            if record is None:  # compacted away under a newer set: wait for its commit
                return []
            found.append(dict(record["properties"]))
        return found

    def committed(self, name: str) -> bool:
        """Whether the connector has had a task set committed (possibly an empty one)."""
        return self.map.get(COMMIT + name) is not None

    # -- writing -------------------------------------------------------------------------------

    def put_connector(
        self, name: str, config: Mapping[str, Any], secrets: Iterable[str] = ()
    ) -> None:
        """Write the connector's config (read back before this returns)."""
        record: dict[str, Any] = {"properties": dict(config)}
        if secrets:
            record["secrets"] = sorted(secrets)
        self.map.put(CONNECTOR + name, record)

    def put_target_state(self, name: str, state: str) -> None:
        """Write the connector's target state (read back before this returns)."""
        self.map.put(TARGET + name, {"state": state, "state.v2": state})

    def put_tasks(self, name: str, configs: list[dict[str, Any]]) -> None:
        """Write a new task set: its configs, then the commit record that makes it current."""
        for task, config in enumerate(configs):
            self.map.put(f"{TASK}{name}-{task}", {"properties": config}, wait=False)
        self.map.put(COMMIT + name, {"tasks": len(configs)})

    def request_restart(
        self, name: str, task: int | None = None, *, include_tasks: bool, only_failed: bool
    ) -> None:
        """Ask the workers running the connector (or one task) to restart it."""
        if task is None:
            value = {"include-tasks": include_tasks, "only-failed": only_failed}
            self.map.put(RESTART_CONNECTOR + name, value)
        else:
            self.map.put(f"{RESTART_TASK}{name}-{task}", {"requested": time.time()})

    def remove(self, name: str) -> None:
        """Tombstones for every record of the connector."""
        keys = [CONNECTOR + name, TARGET + name, COMMIT + name, RESTART_CONNECTOR + name]
        for prefix in (f"{TASK}{name}-", f"{RESTART_TASK}{name}-"):
            # "task-a-" also starts "task-a-b-0", connector a-b's
            keys += [k for k, _ in self.map.items(prefix) if k[len(prefix) :].isdigit()]
        for key in keys:
            self.map.put(key, None, wait=False)
        self.map.sync()

    def close(self) -> None:
        """Stop following the records (a topic's)."""
        self.map.close()
