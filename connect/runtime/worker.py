"""A Connect worker: the connectors and tasks that run in this process (Kafka's ``Worker``).

One worker serves both modes. It makes, starts and stops connector instances — each with its
context (:class:`~sluice.connect.ConnectorContext`), its state and trace — and task runners
(:mod:`.source_runner`, :mod:`.sink_runner`, :mod:`.exactly_once`) with the worker's offsets,
converters, error tolerance and metrics. What runs here is its herder's decision, and the two
herders differ only in where configs and statuses live:

- standalone (:mod:`.standalone`): every connector runs here with all its tasks, its config in
  memory; :meth:`Worker.start_connector` does the whole of it (validate, start the connector, ask
  for at most ``tasks.max`` task configs, run a task per config);
- distributed (:mod:`.distributed`): a group of workers reads configs from ``connect-configs``
  and writes statuses to ``connect-status``; each runs the connector instances
  (:meth:`Worker.start_instance`) and tasks (:meth:`Worker.start_task`) of its slots.

Worker settings use Kafka Connect's names: ``bootstrap.servers``, ``key.converter`` /
``value.converter`` (and their ``.schemas.enable``), ``offset.flush.interval.ms``, ``producer.*``
/ ``consumer.*`` overrides. A source task runs exactly-once (:mod:`.exactly_once`) on a
distributed worker with ``exactly.once.source.support=enabled``; a standalone worker refuses
that setting, as Kafka's exactly-once source support is distributed-only.
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
from sluice.connect.runtime.config_providers import resolve_config
from sluice.connect.runtime.exactly_once import (
    ExactlyOnceSourceTaskRunner,
    check_worker_config,
    exactly_once_enabled,
    problems,
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

    ``on_reconfigure(name)`` is called when a connector asks for its task configs to be computed
    again (by default, standalone: the connector restarts, in a thread of its own).
    """

    def __init__(
        self,
        config: dict[str, Any],
        offsets: OffsetStore,
        *,
        distributed: bool = False,
        on_reconfigure: Callable[[str], None] | None = None,
    ) -> None:
        if "bootstrap.servers" not in config:
            raise ConfigError("missing required configuration", key="bootstrap.servers")
        check_worker_config(config, distributed=distributed)
        self.config = config
        self.offsets = offsets
        self.distributed = distributed
        self.worker_id = f"{socket.gethostname()}:{config.get('rest.port', 8083)}"
        self.connectors: dict[str, ConnectorState] = {}
        self.tasks: dict[TaskId, TaskRunner] = {}
        self.on_reconfigure = on_reconfigure or self._restart_in_background
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

    def validate(self, config: dict[str, Any]) -> None:
        """Raise a ConfigError naming every problem of ``config``."""
        cls = self.connector_class_of(config)
        found = [(v.name, e) for v in cls().validate(config) for e in v.errors]
        found += problems(cls, config, self.config, distributed=self.distributed)
        if found:
            key, first = found[0]
            more = "; ".join(f"{k}: {e}" for k, e in found[1:])
            raise ConfigError(first + (f" (also {more})" if more else ""), key=key)

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

    def _restart_in_background(self, name: str) -> None:
        threading.Thread(target=self._reconfigure, args=(name,), daemon=True).start()

    def _reconfigure(self, name: str) -> None:
        try:
            self.restart_connector(name)
        except Exception as error:  # never lose it: the connector shows FAILED with the trace
            log.error("connector %s could not reconfigure its tasks: %s", name, error)
            self.fail_connector(name, error)

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

    # -- a connector with all its tasks (standalone) -------------------------------------------

    def start_connector(self, name: str, config: dict[str, Any], state: str = "RUNNING") -> None:
        """Validate, start the connector and its tasks (``state`` PAUSED/STOPPED start idle)."""
        with self._lock:
            if name in self.connectors:
                raise ConnectError(f"connector {name} is already running")
            config = {**config, "name": name}
            self.validate(resolve_config(config))
            running = self.start_instance(name, config, start=state != "STOPPED")
            if running.state == "FAILED":
                return
            if state == "STOPPED":
                running.state = "STOPPED"
                return
            runners: list[TaskRunner] = []
            try:
                for task_id, task_config in enumerate(self.task_configs(name)):
                    runners.append(self.make_task(name, task_id, task_config))
            except Exception as error:
                running.state, running.trace = "FAILED", trace_of(error)
                log.error("connector %s failed to start: %s", name, error)
                for runner in runners:
                    runner.stop()  # never started: closes their clients
                return
            for runner in runners:
                self.tasks[(name, runner.task_id)] = runner
                runner.start()
            if state == "PAUSED":
                self.pause(name)
            log.info("connector %s started with %d tasks", name, len(runners))

    def restart_task(self, name: str, task_id: int) -> None:
        """Stop one task (committing) and start it again with the same config."""
        config = self.stop_task(name, task_id).config
        runner = self.start_task(name, task_id, config)
        if self.connectors[name].state == "PAUSED":
            runner.pause()

    def stop_connector(self, name: str) -> None:
        """Stop the tasks (committing), then the connector, and forget it."""
        with self._lock:  # taken from the maps at once: a second stop finds nothing to stop
            if name not in self.connectors:
                return
            runners = [self.tasks.pop((name, runner.task_id)) for runner in self.tasks_of(name)]
        for runner in runners:
            runner.stop()
        self.stop_instance(name)
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
        self.connectors[name].state = "PAUSED"
        for runner in self.tasks_of(name):
            runner.pause()

    def resume(self, name: str) -> None:
        """Tasks poll again."""
        self.connectors[name].state = "RUNNING"
        for runner in self.tasks_of(name):
            runner.resume()

    def status(self, name: str) -> dict[str, Any]:
        """Kafka Connect's ``GET /connectors/{name}/status`` body."""
        running = self.connectors[name]
        connector: dict[str, Any] = {"state": running.state, "worker_id": self.worker_id}
        if running.trace:
            connector["trace"] = running.trace
        tasks = [{**t.status(), "worker_id": self.worker_id} for t in self.tasks_of(name)]
        return {"name": name, "connector": connector, "tasks": tasks, "type": running.kind}

    def names(self) -> list[str]:
        """The connectors' names, sorted (safe while another thread starts or stops one)."""
        with self._lock:
            return sorted(self.connectors)

    def stop(self) -> None:
        """Stop every connector and task."""
        for name in list(self.connectors):
            self.stop_connector(name)
        for name, task_id in list(self.tasks):
            self.stop_task(name, task_id)
