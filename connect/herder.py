"""The herder: what Kafka Connect's REST API asks of the runtime, on top of one :class:`Worker`.

Standalone mode, as Kafka's ``StandaloneHerder``: connector configs live in the worker's memory
(the deployment files are the durable copy), source offsets in its offset store, sink offsets in
each connector's consumer group ``connect-<name>`` (:mod:`sluice.connect.offset_admin`).

Each connector has a *target state* (Kafka 3.5): ``RUNNING``, ``PAUSED`` (tasks run but do not
poll) or ``STOPPED`` (the connector and its tasks are shut down, its config is kept); a restart
or a new config brings a connector back to its target state. Offsets may be altered or reset
only while the connector is ``STOPPED`` (Kafka 3.6).

Errors carry the HTTP status the REST API answers with::

    ConnectError
    └── HerderError                500: the request failed for another reason
        ├── BadRequestError        400: invalid config or request body, connector not stopped
        ├── NotFoundError          404: unknown connector, task or plugin
        ├── AlreadyExistsError     409: a connector of that name exists
        └── RebalanceNeededError   409: :attr:`Herder.rebalancing` is set; try again later

While :attr:`Herder.rebalancing` is true every request that changes something raises
:class:`RebalanceNeededError`. Thread-safe: changes are serialised by one lock.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
import traceback
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka.admin import AdminClient

from sluice import clients
from sluice.connect.api import Connector
from sluice.connect.errors import ConnectError
from sluice.connect.offset_admin import ConnectorOffsets
from sluice.connect.plugins import connector_class, known_plugins
from sluice.connect.validation import (
    class_name,
    config_infos,
    invalid_config_message,
    masked,
    plugin_infos,
    secret_keys,
)
from sluice.connect.worker import ConnectorState, Worker

__all__ = [
    "AlreadyExistsError",
    "BadRequestError",
    "Herder",
    "HerderError",
    "NotFoundError",
    "RebalanceNeededError",
]

log = logging.getLogger("sluice.connect")

TARGET_STATES = ("RUNNING", "PAUSED", "STOPPED")


class HerderError(ConnectError):
    """A request the herder could not complete; :attr:`status` is the HTTP status."""

    status = 500


class BadRequestError(HerderError):
    status = 400


class NotFoundError(HerderError):
    status = 404


class AlreadyExistsError(HerderError):
    status = 409


class RebalanceNeededError(HerderError):
    status = 409

    def __init__(self) -> None:
        super().__init__(
            "Cannot complete request momentarily due to stale configuration "
            "(typically caused by a concurrent config change)"
        )


OFFSETS_NEED_STOP = (
    "Connectors must be in the STOPPED state before their offsets can be modified. This can be "
    "done for the specified connector by issuing a 'PUT' request to the "
    "'/connectors/{name}/stop' endpoint"
)
ALTERED = (
    "The Connect framework-managed offsets for this connector have been altered successfully. "
    "However, if this connector manages offsets externally, they will need to be manually "
    "altered in the system that the connector uses."
)
RESET = (
    "The Connect framework-managed offsets for this connector have been reset successfully. "
    "However, if this connector manages offsets externally, they will need to be manually "
    "reset in the system that the connector uses."
)


def _version() -> str:
    try:
        return importlib.metadata.version("sluice")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _trace(error: BaseException) -> str:
    return "".join(traceback.format_exception(type(error), error, error.__traceback__))


class Herder:
    """Serves the REST API from a :class:`Worker`; see the module docstring.

    ``plugins`` adds connector classes to ``GET /connector-plugins`` beyond the registered
    ones (``sluice.connectors`` entry points); ``timeout_s`` bounds each admin request.
    """

    def __init__(
        self, worker: Worker, *, plugins: Iterable[type[Connector]] = (), timeout_s: float = 15.0
    ) -> None:
        self.worker = worker
        self.rebalancing = False
        self.timeout_s = timeout_s
        self._extra_plugins = list(plugins)
        self._targets: dict[str, str] = {}
        self._secrets: dict[str, frozenset[str]] = {}
        self._lock = threading.RLock()
        self._admin: AdminClient | None = None
        self._cluster_id: str | None = None

    # -- reading -------------------------------------------------------------------------------

    def server_info(self) -> dict[str, Any]:
        """``GET /``: version, commit and the Kafka cluster's id (null if unreachable)."""
        if self._cluster_id is None:
            try:
                described = self.admin().describe_cluster(request_timeout=self.timeout_s)
                self._cluster_id = described.result(self.timeout_s + 5).cluster_id
            except Exception as error:
                log.warning("cannot read the Kafka cluster id: %s", error)
        return {"version": _version(), "commit": "unknown", "kafka_cluster_id": self._cluster_id}

    def connectors(self) -> list[str]:
        """Names of the connectors, sorted."""
        return sorted(self.worker.connectors)

    def _state(self, name: str) -> ConnectorState:
        running = self.worker.connectors.get(name)
        if running is None:
            raise NotFoundError(f"Connector {name} not found")
        return running

    def _masked(self, name: str, config: Mapping[str, Any]) -> dict[str, Any]:
        cls = connector_class(str(config.get("connector.class")))
        return masked(config, self._secrets.get(name, frozenset()) | secret_keys(cls))

    def connector_info(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}``: name, config (secrets hidden), tasks and type."""
        running = self._state(name)
        return {
            "name": name,
            "config": self._masked(name, running.config),
            "tasks": [{"connector": name, "task": t.task_id} for t in running.tasks],
            "type": running.kind,
        }

    def connector_config(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/config`` (secrets hidden)."""
        return self._masked(name, self._state(name).config)

    def connector_status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/status``."""
        self._state(name)
        try:
            return self.worker.status(name)
        except KeyError:  # deleted meanwhile
            raise NotFoundError(f"Connector {name} not found") from None

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """``GET /connectors/{name}/tasks``."""
        return [
            {"id": {"connector": name, "task": t.task_id}, "config": self._masked(name, t.config)}
            for t in self._state(name).tasks
        ]

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        """``GET /connectors/{name}/tasks/{task}/status``."""
        for status in self.connector_status(name)["tasks"]:
            if status["id"] == task:
                return dict(status)
        raise NotFoundError(f"No status found for task {name}-{task}")

    def target_state(self, name: str) -> str:
        """The state the connector is meant to be in."""
        running = self._state(name)
        default = running.state if running.state in TARGET_STATES else "RUNNING"
        return self._targets.get(name, default)

    # -- changing ------------------------------------------------------------------------------

    @contextmanager
    def _change(self) -> Iterator[None]:
        if self.rebalancing:
            raise RebalanceNeededError()
        with self._lock:
            if self.rebalancing:
                raise RebalanceNeededError()
            yield

    def create_connector(
        self,
        name: str,
        config: Mapping[str, Any],
        initial_state: str = "RUNNING",
        secrets: Iterable[str] = (),
    ) -> dict[str, Any]:
        """``POST /connectors``: validate and start a new connector in ``initial_state``.

        ``secrets`` names keys whose values are never shown (beyond ``password`` settings and
        keys that look secret): the deployment's resolved placeholders.
        """
        if initial_state not in TARGET_STATES:
            raise BadRequestError(
                f"Invalid initial state {initial_state}: must be RUNNING, PAUSED or STOPPED"
            )
        with self._change():
            if name in self.worker.connectors:
                raise AlreadyExistsError(f"Connector {name} already exists")
            config = self._checked({**config, "name": name})
            self._targets[name] = initial_state
            self._secrets[name] = frozenset(secrets)
            self._start(name, config)
            return self.connector_info(name)

    def put_connector_config(
        self, name: str, config: Mapping[str, Any], secrets: Iterable[str] = ()
    ) -> tuple[bool, dict[str, Any]]:
        """``PUT /connectors/{name}/config``: create (True) or reconfigure (False) a connector.

        A reconfigured connector is stopped and started again with the new config, in its
        target state; an invalid config leaves the running one alone.
        """
        with self._change():
            config = self._checked({**config, "name": name})
            created = name not in self.worker.connectors
            self._targets[name] = "RUNNING" if created else self.target_state(name)
            self._secrets[name] = frozenset(secrets)
            if not created:
                self._shut_down(name)
            self._start(name, config)
            return created, self.connector_info(name)

    def delete_connector(self, name: str) -> None:
        """``DELETE /connectors/{name}``: stop and forget it (its offsets stay)."""
        with self._change():
            self._state(name)
            self._shut_down(name)
            self._targets.pop(name, None)
            self._secrets.pop(name, None)

    def pause(self, name: str) -> None:
        """``PUT /connectors/{name}/pause``: tasks stop polling (a stopped connector starts)."""
        self._retarget(name, "PAUSED")

    def resume(self, name: str) -> None:
        """``PUT /connectors/{name}/resume``: tasks poll again (a stopped connector starts)."""
        self._retarget(name, "RUNNING")

    def stop(self, name: str) -> None:
        """``PUT /connectors/{name}/stop``: shut the connector and its tasks down, keep config."""
        self._retarget(name, "STOPPED")

    def _retarget(self, name: str, target: str) -> None:
        with self._change():
            running = self._state(name)
            self._targets[name] = target
            if running.state == target:
                return
            if "STOPPED" in (running.state, target):
                self._shut_down(name)
                self._start(name, running.config)
                return
            for task in running.tasks:
                if target == "PAUSED":
                    task.pause()
                else:
                    task.resume()
            if running.state != "FAILED":  # a failed connector stays FAILED until restarted
                running.state = target

    def restart_connector(
        self, name: str, include_tasks: bool = False, only_failed: bool = False
    ) -> dict[str, Any] | None:
        """``POST /connectors/{name}/restart`` (Kafka 3.0 semantics).

        Without flags only the connector instance restarts and None is returned. Otherwise the
        connector restarts unless ``only_failed`` and it did not fail, and with
        ``include_tasks`` every task (or every failed one) too; the answer is the status from
        before, with ``RESTARTING`` for each instance restarted.
        """
        with self._change():
            running = self._state(name)
            if not include_tasks and not only_failed:
                self._restart_instance(name)
                return None
            status = self.worker.status(name)
            connector = not only_failed or running.state == "FAILED"
            tasks = [
                t.task_id
                for t in running.tasks
                if include_tasks and (not only_failed or t.state == "FAILED")
            ]
            if connector:
                status["connector"]["state"] = "RESTARTING"
            for task_status in status["tasks"]:
                if task_status["id"] in tasks:
                    task_status["state"] = "RESTARTING"
            if connector and len(tasks) == len(running.tasks):
                self._shut_down(name)
                self._start(name, running.config)
                return status
            if connector:
                self._restart_instance(name)
            for task_id in tasks:
                self._restart_task(name, task_id)
            return status

    def restart_task(self, name: str, task: int) -> None:
        """``POST /connectors/{name}/tasks/{task}/restart``."""
        with self._change():
            if not any(t.task_id == task for t in self._state(name).tasks):
                raise NotFoundError(f"Task {name}-{task} not found")
            self._restart_task(name, task)

    # -- worker plumbing -----------------------------------------------------------------------

    def _start(self, name: str, config: dict[str, Any]) -> None:
        """Start in the target state; a connector that fails to start is shown FAILED."""
        try:
            self.worker.start_connector(name, config, self._targets.get(name, "RUNNING"))
        except Exception as error:
            running = self.worker.connectors.get(name)
            if running is None:  # refused before it was registered: forget it
                self._targets.pop(name, None)
                self._secrets.pop(name, None)
                raise BadRequestError(str(error)) from error
            log.error("connector %s failed to start: %s", name, error)
            running.state, running.trace = "FAILED", _trace(error)

    def _shut_down(self, name: str) -> None:
        running = self.worker.connectors.get(name)
        if running is not None and running.state == "STOPPED":
            # Never started, so not stopped either (Worker.stop_connector would stop it).
            self.worker.connectors.pop(name, None)
            return
        self.worker.stop_connector(name)

    def _restart_instance(self, name: str) -> None:
        """Restart the Connector object; its tasks restart only if their configs change."""
        running = self._state(name)
        target = self.target_state(name)
        if target == "STOPPED":
            return
        connector, config = running.connector, running.config
        try:
            connector.stop()
            connector.start({**config, **type(connector).CONFIG.parse(config)})
            max_tasks = int(config.get("tasks.max", 1))
            wanted = [{**config, **c} for c in connector.task_configs(max_tasks)][:max_tasks]
        except Exception as error:
            log.error("connector %s failed to restart: %s", name, error)
            running.state, running.trace = "FAILED", _trace(error)
            return
        running.state, running.trace = target, None
        if wanted != [t.config for t in running.tasks]:
            self._shut_down(name)
            self._start(name, config)

    def _restart_task(self, name: str, task_id: int) -> None:
        running = self._state(name)
        index = next(i for i, t in enumerate(running.tasks) if t.task_id == task_id)
        if self.target_state(name) == "PAUSED":
            running.state = "PAUSED"
        self.worker.restart_task(running.tasks[index].connector, task_id)

    # -- validation and plugins ----------------------------------------------------------------

    def _checked(self, config: dict[str, Any]) -> dict[str, Any]:
        """``config`` if valid, else BadRequestError listing every problem (Kafka's message)."""
        infos = self.validate(config)
        if infos["error_count"]:
            raise BadRequestError(invalid_config_message(infos))
        return config

    def validate(self, config: Mapping[str, Any], plugin: str | None = None) -> dict[str, Any]:
        """``PUT /connector-plugins/{plugin}/config/validate``: Kafka's ``ConfigInfos`` body.

        Without ``plugin`` (a new config), ``connector.class`` is required and resolved as the
        worker resolves it; with one, it defaults to ``plugin`` and must name the same class.
        """
        config = dict(config)
        included = config.get("connector.class")
        if plugin is not None:
            if included is None:
                config["connector.class"] = plugin
            elif self._plugin(str(included)) is not self._plugin(plugin):
                raise BadRequestError(
                    f"Included connector type {included} does not match request type {plugin}"
                )
        elif included is None:
            raise BadRequestError(f"Connector config {config} contains no connector type")
        cls = self._plugin(str(config["connector.class"]), strict=plugin is None)
        return config_infos(cls, config)

    def _connector_plugins(self) -> list[type[Connector]]:
        found = [*known_plugins().values(), *self._extra_plugins]
        return sorted(set(found), key=class_name)

    def _plugin(self, name: str, strict: bool = False) -> type[Connector]:
        """The connector class ``name`` means; not ``strict``: also a listed class's simple name
        or alias (``FileStreamSourceConnector``, ``FileStreamSource``), as Kafka allows."""
        cls = connector_class(name)
        if cls is None and not strict:
            short = name.rpartition(".")[2].removesuffix("Connector")
            names = [*known_plugins().items(), *((c.__name__, c) for c in self._extra_plugins)]
            for alias, candidate in names:
                simple = {alias.rpartition(".")[2], candidate.__name__}
                if short in {n.removesuffix("Connector") for n in simple}:
                    cls = candidate
                    break
        if cls is None:
            raise BadRequestError(
                f"Failed to find any class that implements Connector and which name matches {name}"
            )
        return cls

    def plugins(self, connectors_only: bool = True) -> list[dict[str, Any]]:
        """``GET /connector-plugins``: class, type and version of each plugin."""
        return plugin_infos(self._connector_plugins(), connectors_only, _version())

    def plugin_config(self, plugin: str) -> list[dict[str, Any]]:
        """``GET /connector-plugins/{plugin}/config``: the connector's own settings."""
        try:
            cls = self._plugin(plugin)
        except BadRequestError:
            raise NotFoundError(f"Unknown plugin {plugin}.") from None
        return cls.CONFIG.describe()

    # -- offsets -------------------------------------------------------------------------------

    def admin(self) -> AdminClient:
        """The herder's admin client (``admin.*`` worker settings apply), made on first use."""
        if self._admin is None:
            overrides = {k[6:]: v for k, v in self.worker.config.items() if k.startswith("admin.")}
            self._admin = clients.admin(
                self.worker.config["bootstrap.servers"],
                **{"client.id": "connect-herder-admin", **overrides},
            )
        return self._admin

    @contextmanager
    def _offsets(self, name: str, stopped: bool = True) -> Iterator[tuple[ConnectorOffsets, str]]:
        running = self._state(name)
        if stopped and (running.state != "STOPPED" or running.tasks):
            raise BadRequestError(OFFSETS_NEED_STOP.format(name=name))
        try:
            yield ConnectorOffsets(self.worker.offsets, self.admin, self.timeout_s), running.kind
        except ValueError as error:
            raise BadRequestError(str(error)) from None
        except ConnectError as error:
            raise HerderError(str(error)) from None

    def connector_offsets(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/offsets``: ``{"offsets": [{"partition", "offset"}]}``."""
        with self._offsets(name, stopped=False) as (offsets, kind):
            return {"offsets": offsets.get(name, kind)}

    def alter_offsets(self, name: str, entries: list[Any]) -> dict[str, str]:
        """``PATCH /connectors/{name}/offsets`` (connector STOPPED; a null offset removes)."""
        with self._change(), self._offsets(name) as (offsets, kind):
            offsets.alter(name, kind, entries)
            return {"message": ALTERED}

    def reset_offsets(self, name: str) -> dict[str, str]:
        """``DELETE /connectors/{name}/offsets`` (connector STOPPED)."""
        with self._change(), self._offsets(name) as (offsets, kind):
            offsets.reset(name, kind)
            return {"message": RESET}
