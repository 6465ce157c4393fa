"""A Connect worker: the connectors and tasks that run in this process (Kafka's ``Worker``).

One worker serves both modes. It makes, starts and stops connector instances — each with its
context (:class:`~sluice.connect.ConnectorContext`), its state and trace — and task runners
(:mod:`.source_runner`, :mod:`.sink_runner`, :mod:`.exactly_once`) with the worker's offsets,
converters, error tolerance and metrics. What runs here is decided by the
:class:`~.reconciler.Reconciler` driving it, the same in both modes: the connector instances
(:meth:`Worker.start_instance`) and tasks (:meth:`Worker.start_task`) of its slots, from the
configs of its config store.

Worker settings use Kafka Connect's names: ``bootstrap.servers``, ``key.converter`` /
``value.converter`` (and their ``.schemas.enable``), ``offset.flush.interval.ms``, ``producer.*``
/ ``consumer.*`` / ``admin.*`` overrides, and the clients' security settings
(``security.protocol``, ``sasl.*``, ``ssl.*``: :mod:`.client_configs`). A source task runs
exactly-once (:mod:`.exactly_once`) on a distributed worker with
``exactly.once.source.support=enabled``; a standalone worker refuses that setting, as Kafka's
exactly-once source support is distributed-only.
"""

from __future__ import annotations

import logging
import socket
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.connect.api.connector import Connector, SinkConnector, SinkTask, SourceTask
from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.client_configs import check_client_settings
from sluice.connect.runtime.config_providers import resolve_config
from sluice.connect.runtime.exactly_once import (
    ExactlyOnceSourceTaskRunner,
    check_worker_config,
    exactly_once_enabled,
)
from sluice.connect.runtime.offsets import OffsetStore
from sluice.connect.runtime.plugins import connector_class, plugin_type
from sluice.connect.runtime.sink_runner import SinkTaskRunner
from sluice.connect.runtime.source_runner import SourceTaskRunner
from sluice.connect.runtime.task_runner import TaskRunner
from sluice.errors import ConfigError

__all__ = ["ConnectorState", "TaskId", "Worker", "task_runner", "trace_of"]

log = logging.getLogger("sluice.connect")

TaskId = tuple[str, int]
"""A task: its connector's name and its number."""


def trace_of(error: BaseException) -> str:
    """The formatted traceback of ``error``, as statuses and the REST API show it."""
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


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
    """A connector instance running on this worker (its tasks are :attr:`Worker.tasks`)."""

    name: str
    config: dict[str, Any]
    connector: Connector | None = None
    """None when it could not be made (then FAILED)."""
    kind: str = "unknown"
    state: str = "RUNNING"
    trace: str | None = None


class _Context:
    """What a connector running here may ask of the worker."""

    def __init__(self, worker: Worker, name: str) -> None:
        self.worker = worker
        self.name = name

    def request_task_reconfiguration(self) -> None:
        self.worker.on_reconfigure(self.name)

    def raise_error(self, error: Exception) -> None:
        self.worker.fail_connector(self.name, error)


class Worker:
    """Runs connectors and tasks; see the module docstring.

    :attr:`on_reconfigure` is called with a connector's name when it asks for its task configs
    to be computed again (the :class:`~.reconciler.Reconciler` driving this worker sets it).
    """

    def __init__(
        self, config: dict[str, Any], offsets: OffsetStore, *, distributed: bool = False
    ) -> None:
        if "bootstrap.servers" not in config:
            raise ConfigError("missing required configuration", key="bootstrap.servers")
        check_worker_config(config, distributed=distributed)
        check_client_settings(config)
        self.config = config
        self.offsets = offsets
        self.distributed = distributed
        self.worker_id = f"{socket.gethostname()}:{config.get('rest.port', 8083)}"
        self.connectors: dict[str, ConnectorState] = {}
        self.tasks: dict[TaskId, TaskRunner] = {}
        self.on_reconfigure: Callable[[str], None] = lambda name: None
        self._lock = threading.RLock()

    # -- connectors ----------------------------------------------------------------------------

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

    def start_instance(
        self, name: str, config: dict[str, Any], start: bool = True
    ) -> ConnectorState:
        """Make connector ``name`` from ``config``, initialize it and (if ``start``) start it with
        its config resolved (Kafka's config providers: never shown or kept). A connector that
        cannot be made or started is kept FAILED, with the trace."""
        instance = ConnectorState(name, config)
        with self._lock:
            if name in self.connectors:
                raise ConnectError(f"connector {name} is already running")
            self.connectors[name] = instance
        try:
            cls = self.connector_class_of(config)
            instance.kind = plugin_type(cls)
            instance.connector = connector = cls()
            connector.initialize(_Context(self, name))
            if start:
                resolved = resolve_config(config)
                connector.start({**resolved, **cls.CONFIG.parse(resolved)})
        except Exception as error:
            log.error("connector %s failed to start: %s", name, error)
            instance.trace, instance.state = trace_of(error), "FAILED"  # trace first
        return instance

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """The started connector's task configs (at most ``tasks.max``), each on top of the
        connector's resolved config."""
        instance = self.connectors[name]
        assert instance.connector is not None, "only a started connector has task configs"
        max_tasks = int(instance.config.get("tasks.max", 1))
        resolved = resolve_config(instance.config)
        configs = instance.connector.task_configs(max_tasks)[:max_tasks]
        return [{**resolved, **task} for task in configs]

    def stop_instance(self, name: str) -> ConnectorState | None:
        """Stop the connector instance (not its tasks) and forget it."""
        with self._lock:
            instance = self.connectors.pop(name, None)
        if instance is None:
            return None
        # A STOPPED connector was never started; one that could not be made has no instance.
        if instance.connector is not None and instance.state != "STOPPED":
            try:
                instance.connector.stop()
            except Exception as error:
                log.error("connector %s failed to stop: %s", name, error)
        return instance

    def fail_connector(self, name: str, error: Exception) -> None:
        """Mark the connector FAILED with ``error``'s trace (asked by the connector)."""
        with self._lock:
            instance = self.connectors.get(name)
            if instance is not None:
                instance.trace, instance.state = trace_of(error), "FAILED"  # trace first

    # -- tasks ---------------------------------------------------------------------------------

    def make_task(self, name: str, task_id: int, config: dict[str, Any]) -> TaskRunner:
        """A runner (not started) for task ``task_id`` of connector ``name``; ``config`` is the
        task's resolved config (its ``connector.class`` gives the task class, as in Kafka)."""
        connector = self.connector_class_of(config)()
        return task_runner(name, task_id, connector, config, self.config, self.offsets)

    def start_task(self, name: str, task_id: int, config: dict[str, Any]) -> TaskRunner:
        """Make and start task ``task_id`` of ``name`` (raises if it cannot be made)."""
        runner = self.make_task(name, task_id, config)
        self.tasks[(name, task_id)] = runner
        runner.start()
        return runner

    def stop_task(self, name: str, task_id: int) -> TaskRunner:
        """Stop the task (committing) and forget it."""
        runner = self.tasks.pop((name, task_id))
        runner.stop()
        return runner

    def tasks_of(self, name: str) -> list[TaskRunner]:
        """The tasks of connector ``name`` running here, by number."""
        found = [runner for (owner, _), runner in list(self.tasks.items()) if owner == name]
        return sorted(found, key=lambda runner: runner.task_id)
