"""A Connect worker: runs connectors and their tasks (threads), and reports their status.

The worker validates a connector's config against its ``CONFIG``, starts it, asks it for at most
``tasks.max`` task configs and runs one task runner per config
(:mod:`sluice.connect.source_runner`, :mod:`sluice.connect.sink_runner`). Worker settings use
Kafka Connect's names: ``bootstrap.servers``, ``key.converter`` / ``value.converter`` (and their
``.schemas.enable``), ``offset.flush.interval.ms``, ``producer.*`` / ``consumer.*`` overrides.
A source task runs exactly-once (:mod:`sluice.connect.exactly_once`) on a distributed worker
with ``exactly.once.source.support=enabled``; this standalone worker refuses that setting, as
Kafka's exactly-once source support is distributed-only.
"""

from __future__ import annotations

import logging
import socket
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from sluice.connect.api import Connector, SinkConnector, SinkTask, SourceTask
from sluice.connect.config_providers import resolve_config
from sluice.connect.errors import ConnectError
from sluice.connect.exactly_once import (
    ExactlyOnceSourceTaskRunner,
    check_worker_config,
    exactly_once_enabled,
    problems,
)
from sluice.connect.offsets import OffsetStore
from sluice.connect.plugins import connector_class, plugin_type
from sluice.connect.sink_runner import SinkTaskRunner
from sluice.connect.source_runner import SourceTaskRunner
from sluice.connect.task_runner import TaskRunner
from sluice.errors import ConfigError

__all__ = ["ConnectorState", "Worker", "task_runner"]

log = logging.getLogger("sluice.connect")


def task_runner(
    name: str,
    task_id: int,
    connector: Connector,
    config: dict[str, Any],
    worker_config: dict[str, Any],
    offsets: OffsetStore,
) -> TaskRunner:
    """A runner (not started) for task ``task_id`` of ``connector``, named ``name``."""
    task = connector.task_class()()
    if isinstance(connector, SinkConnector):
        assert isinstance(task, SinkTask)
        return SinkTaskRunner(name, task_id, task, config, worker_config)
    assert isinstance(task, SourceTask)
    if exactly_once_enabled(worker_config):
        return ExactlyOnceSourceTaskRunner(name, task_id, task, config, worker_config, offsets)
    if config.get("exactly.once.support") == "required":  # the worker's setting changed since
        raise ConfigError(
            "This worker does not have exactly-once source support enabled.",
            key="exactly.once.support",
        )
    return SourceTaskRunner(name, task_id, task, config, worker_config, offsets)


@dataclass
class ConnectorState:
    """A connector running on this worker."""

    name: str
    config: dict[str, Any]
    connector: Connector
    kind: str
    state: str = "RUNNING"
    trace: str | None = None
    tasks: list[TaskRunner] = field(default_factory=list)


class _Context:
    def __init__(self, worker: Worker, name: str) -> None:
        self.worker = worker
        self.name = name

    def request_task_reconfiguration(self) -> None:
        threading.Thread(target=self._reconfigure, daemon=True).start()

    def _reconfigure(self) -> None:
        try:
            self.worker.restart_connector(self.name)
        except Exception as error:  # never lose it: the connector shows FAILED with the trace
            log.error("connector %s could not reconfigure its tasks: %s", self.name, error)
            self.raise_error(error)

    def raise_error(self, error: Exception) -> None:
        state = self.worker.connectors.get(self.name)
        if state is not None:
            state.state = "FAILED"
            state.trace = repr(error)


class Worker:
    """Runs connectors; see the module docstring."""

    def __init__(self, config: dict[str, Any], offsets: OffsetStore) -> None:
        if "bootstrap.servers" not in config:
            raise ConfigError("missing required configuration", key="bootstrap.servers")
        check_worker_config(config, distributed=False)
        self.config = config
        self.offsets = offsets
        self.worker_id = f"{socket.gethostname()}:{config.get('rest.port', 8083)}"
        self.connectors: dict[str, ConnectorState] = {}
        self._lock = threading.RLock()

    @staticmethod
    def connector_class_of(config: dict[str, Any]) -> type[Connector]:
        """The class named by ``connector.class`` (alias, Kafka name or dotted path)."""
        name = config.get("connector.class")
        if not name:
            raise ConfigError("missing required configuration", key="connector.class")
        cls = connector_class(str(name))
        if cls is None:
            raise ConfigError(f"unknown connector class {name!r}", key="connector.class")
        return cls

    def validate(self, config: dict[str, Any]) -> None:
        """Raise a ConfigError naming every problem of ``config``."""
        cls = self.connector_class_of(config)
        found = [(v.name, e) for v in cls().validate(config) for e in v.errors]
        found += problems(cls, config, self.config, distributed=False)
        if found:
            key, first = found[0]
            more = "; ".join(f"{k}: {e}" for k, e in found[1:])
            raise ConfigError(first + (f" (also {more})" if more else ""), key=key)

    def start_connector(self, name: str, config: dict[str, Any], state: str = "RUNNING") -> None:
        """Validate, start the connector and its tasks (``state`` PAUSED/STOPPED start idle)."""
        with self._lock:
            if name in self.connectors:
                raise ConnectError(f"connector {name} is already running")
            config = {**config, "name": name}
            resolved = resolve_config(config)  # Kafka's config providers: never shown or kept
            self.validate(resolved)
            cls = self.connector_class_of(config)
            connector = cls()
            connector.initialize(_Context(self, name))
            running = ConnectorState(name, config, connector, plugin_type(cls))
            self.connectors[name] = running
            if state == "STOPPED":
                running.state = "STOPPED"
                return
            try:
                connector.start({**resolved, **cls.CONFIG.parse(resolved)})
                max_tasks = int(config.get("tasks.max", 1))
                configs = connector.task_configs(max_tasks)[:max_tasks]
                for task_id, task_config in enumerate(configs):
                    running.tasks.append(
                        self._task(name, task_id, connector, {**resolved, **task_config})
                    )
            except Exception as error:
                running.state = "FAILED"
                running.trace = "".join(traceback.format_exception(error))
                log.error("connector %s failed to start: %s", name, error)
                for task in running.tasks:
                    task.stop()  # never started: closes their clients
                running.tasks.clear()
                return
            for task in running.tasks:
                task.start()
            if state == "PAUSED":
                self.pause(name)
            log.info("connector %s started with %d tasks", name, len(running.tasks))

    def _task(
        self, name: str, task_id: int, connector: Connector, config: dict[str, Any]
    ) -> TaskRunner:
        return task_runner(name, task_id, connector, config, self.config, self.offsets)

    def restart_task(self, name: str, task_id: int) -> None:
        """Stop one task (committing) and start it again with the same config."""
        running = self.connectors[name]
        index = next(i for i, t in enumerate(running.tasks) if t.task_id == task_id)
        old = running.tasks[index]
        old.stop()
        new = self._task(name, task_id, running.connector, old.config)
        running.tasks[index] = new
        new.start()
        if running.state == "PAUSED":
            new.pause()

    def stop_connector(self, name: str) -> None:
        """Stop the tasks (committing), then the connector, and forget it."""
        with self._lock:
            running = self.connectors.pop(name, None)
        if running is None:
            return
        for task in running.tasks:
            task.stop()
        if running.state != "STOPPED":  # a STOPPED connector was never started
            running.connector.stop()
        log.info("connector %s stopped", name)

    def restart_connector(self, name: str) -> None:
        """Stop and start again with the same config."""
        with self._lock:
            running = self.connectors.get(name)
            if running is None:
                raise ConnectError(f"connector {name} not found")
            config, state = running.config, running.state
            self.stop_connector(name)
            self.start_connector(name, config, "RUNNING" if state == "FAILED" else state)

    def pause(self, name: str) -> None:
        """Tasks stop polling; their position is kept."""
        running = self.connectors[name]
        running.state = "PAUSED"
        for task in running.tasks:
            task.pause()

    def resume(self, name: str) -> None:
        """Tasks poll again."""
        running = self.connectors[name]
        running.state = "RUNNING"
        for task in running.tasks:
            task.resume()

    def status(self, name: str) -> dict[str, Any]:
        """Kafka Connect's ``GET /connectors/{name}/status`` body."""
        running = self.connectors[name]
        connector: dict[str, Any] = {"state": running.state, "worker_id": self.worker_id}
        if running.trace:
            connector["trace"] = running.trace
        tasks = [{**t.status(), "worker_id": self.worker_id} for t in running.tasks]
        return {"name": name, "connector": connector, "tasks": tasks, "type": running.kind}

    def names(self) -> list[str]:
        """The connectors' names, sorted (safe while another thread starts or stops one)."""
        with self._lock:
            return sorted(self.connectors)

    def stop(self) -> None:
        """Stop every connector."""
        for name in list(self.connectors):
            self.stop_connector(name)
