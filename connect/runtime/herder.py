"""The herder: what Kafka Connect's REST API asks of a worker, in either mode.

A :class:`Herder` serves the REST API from a
:class:`~sluice.connect.runtime.reconciler.Reconciler` — a standalone worker's
(:func:`~sluice.connect.runtime.standalone.standalone_worker`) or a group's
(:func:`~sluice.connect.runtime.distributed.cluster_worker`). Reads come from the config and
status stores; a change is written to the config store, and the worker whose slot holds the
connector or task acts on it: at once on a standalone worker (the change is in effect when the
request returns), a moment later on a distributed one (any worker answers any request, as in
Kafka Connect where requests are forwarded to the leader). A connector whose state no worker
has written yet (just created, or its worker just started) shows ``UNASSIGNED`` rather than
Kafka's 404.

Each connector has a *target state* (Kafka 3.5): ``RUNNING``, ``PAUSED`` (tasks run but do not
poll) or ``STOPPED`` (the connector and its tasks are shut down, its config is kept); a restart
or a new config brings a connector back to its target state. Offsets may be altered or reset
only while the connector is ``STOPPED`` (Kafka 3.6), source offsets in the worker's offset
store, sink offsets in each connector's consumer group ``connect-<name>``
(:mod:`sluice.connect.runtime.offset_admin`).

Errors carry the HTTP status the REST API answers with::

    ConnectError
    └── HerderError                500: the request failed for another reason
        ├── BadRequestError        400: invalid config or request body, connector not stopped
        ├── NotFoundError          404: unknown connector, task or plugin
        ├── AlreadyExistsError     409: a connector of that name exists
        └── RebalanceNeededError   409: :attr:`Herder.rebalancing`; try again later

While :attr:`Herder.rebalancing` is true (the worker has no slots: joining, or a rebalance
under way) every request that changes something raises :class:`RebalanceNeededError`, as
Kafka's ``RebalanceNeededException``. Changes are serialised by one lock.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka.admin import AdminClient

from sluice import clients
from sluice.connect.api.connector import Connector
from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.client_configs import task_clients
from sluice.connect.runtime.exactly_once import add_problems, problems
from sluice.connect.runtime.offset_admin import ConnectorOffsets
from sluice.connect.runtime.plugins import connector_class, known_plugins, plugin_type
from sluice.connect.runtime.reconciler import Reconciler
from sluice.connect.runtime.validation import (
    class_name,
    config_infos,
    invalid_config_message,
    masked,
    plugin_infos,
    secret_keys,
)

__all__ = [
    "AlreadyExistsError",
    "BadRequestError",
    "Herder",
    "HerderError",
    "NotFoundError",
    "RebalanceNeededError",
    "check_initial_state",
]

log = logging.getLogger("sluice.connect")

TARGET_STATES = ("RUNNING", "PAUSED", "STOPPED")


class HerderError(ConnectError):
    """A request the herder could not complete; :attr:`status` is the HTTP status."""

    status = 500


class BadRequestError(HerderError):
    status = 400


def check_initial_state(state: str) -> None:
    """Raise :class:`BadRequestError` unless a connector can be created in ``state``."""
    if state not in TARGET_STATES:
        raise BadRequestError(f"Invalid initial state {state}: must be RUNNING, PAUSED or STOPPED")


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


class Herder:
    """Serves the REST API from ``runtime``; see the module docstring.

    ``plugins`` adds connector classes to ``GET /connector-plugins`` beyond the registered ones
    (``sluice.connectors`` entry points); ``timeout_s`` bounds each admin request.
    """

    def __init__(
        self,
        runtime: Reconciler,
        *,
        plugins: Iterable[type[Connector]] = (),
        timeout_s: float = 15.0,
    ) -> None:
        self.runtime = runtime
        self.configs = runtime.configs
        self.worker_config = runtime.config
        self.offset_store = runtime.offsets
        self.distributed = runtime.worker.distributed
        """Whether the worker is distributed (exactly-once sources are possible only then)."""
        self.timeout_s = timeout_s
        self._extra_plugins = list(plugins)
        self._lock = threading.RLock()
        self._admin: AdminClient | None = None
        self._cluster_id: str | None = None

    @property
    def rebalancing(self) -> bool:
        """Whether changes are refused for now (409): the worker has no slots."""
        return self.runtime.rebalancing

    def server_info(self) -> dict[str, Any]:
        """``GET /``: version, commit and the Kafka cluster's id (null if unreachable)."""
        if self._cluster_id is None:
            try:
                described = self.admin().describe_cluster(request_timeout=self.timeout_s)
                self._cluster_id = described.result(self.timeout_s + 5).cluster_id
            except Exception as error:
                log.warning("cannot read the Kafka cluster id: %s", error)
        return {"version": _version(), "commit": "unknown", "kafka_cluster_id": self._cluster_id}

    # -- reading -------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        """Names of the connectors, sorted."""
        return self.configs.connectors()

    def _config(self, name: str) -> dict[str, Any]:
        config = self.configs.config(name)
        if config is None:
            raise NotFoundError(f"Connector {name} not found")
        return config

    def _masked(self, name: str, config: Mapping[str, Any]) -> dict[str, Any]:
        cls = connector_class(str(config.get("connector.class")))
        return masked(config, self.configs.secrets(name) | secret_keys(cls))

    @staticmethod
    def _kind(config: Mapping[str, Any]) -> str:
        cls = connector_class(str(config.get("connector.class")))
        return "unknown" if cls is None else plugin_type(cls)

    def connector_info(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}``: name, config (secrets hidden), tasks and type."""
        config = self._config(name)
        return {
            "name": name,
            "config": self._masked(name, config),
            "tasks": [
                {"connector": name, "task": task} for task in range(len(self.configs.tasks(name)))
            ],
            "type": self._kind(config),
        }

    def connector_config(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/config`` (secrets hidden)."""
        return self._masked(name, self._config(name))

    def connector_status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/status``."""
        config = self._config(name)
        found = self.runtime.status.connector(name)
        connector: dict[str, Any] = {"state": "UNASSIGNED", "worker_id": None}
        if found is not None:
            connector = {"state": found["state"], "worker_id": found["worker_id"]}
            if found.get("trace"):
                connector["trace"] = found["trace"]
        tasks = []
        for task in range(len(self.configs.tasks(name))):
            state = self.runtime.status.task(name, task)
            if state is None:
                continue
            entry = {"id": task, "state": state["state"], "worker_id": state["worker_id"]}
            if state.get("trace"):
                entry["trace"] = state["trace"]
            if state.get("warnings"):
                entry["warnings"] = state["warnings"]
            tasks.append(entry)
        return {"name": name, "connector": connector, "tasks": tasks, "type": self._kind(config)}

    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """``GET /connectors/{name}/tasks`` (secrets hidden, placeholders unresolved)."""
        self._config(name)
        return [
            {"id": {"connector": name, "task": task}, "config": self._masked(name, config)}
            for task, config in enumerate(self.configs.tasks(name))
        ]

    # -- changing ------------------------------------------------------------------------------

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
        check_initial_state(initial_state)
        with self._change():
            if self.configs.config(name) is not None:
                raise AlreadyExistsError(f"Connector {name} already exists")
            checked = self._checked({**config, "name": name})
            self.configs.put_target_state(name, initial_state)
            self.configs.put_connector(name, checked, secrets)
        return self.connector_info(name)

    def put_connector_config(
        self, name: str, config: Mapping[str, Any], secrets: Iterable[str] = ()
    ) -> tuple[bool, dict[str, Any]]:
        """``PUT /connectors/{name}/config``: create (True) or reconfigure (False) a connector.

        A reconfigured connector is stopped and started again with the new config, in its
        target state; an invalid config leaves the running one alone.
        """
        with self._change():
            checked = self._checked({**config, "name": name})
            created = self.configs.config(name) is None
            self.configs.put_connector(name, checked, secrets)
        return created, self.connector_info(name)

    def delete_connector(self, name: str) -> None:
        """``DELETE /connectors/{name}``: stop and forget it (its offsets stay)."""
        with self._change():
            self._config(name)
            self.configs.remove(name)

    def _retarget(self, name: str, target: str) -> None:
        """Set the connector's target state (RUNNING, PAUSED or STOPPED)."""
        with self._change():
            self._config(name)
            self.configs.put_target_state(name, target)

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
            status = self.connector_status(name)
            self.configs.request_restart(name, include_tasks=include_tasks, only_failed=only_failed)
            if not include_tasks and not only_failed:
                return None
            if not only_failed or status["connector"]["state"] == "FAILED":
                status["connector"]["state"] = "RESTARTING"
            for task in status["tasks"]:
                if include_tasks and (not only_failed or task["state"] == "FAILED"):
                    task["state"] = "RESTARTING"
            return status

    def restart_task(self, name: str, task: int) -> None:
        """``POST /connectors/{name}/tasks/{task}/restart``."""
        with self._change():
            self._config(name)
            if not 0 <= task < len(self.configs.tasks(name)):
                raise NotFoundError(f"Task {name}-{task} not found")
            self.configs.request_restart(name, task, include_tasks=False, only_failed=False)

    def _offset_state(self, name: str) -> tuple[str, bool]:
        """The connector's type (source/sink) and whether it is STOPPED with no tasks."""
        config = self._config(name)
        stopped = (
            self.configs.target_state(name) == "STOPPED"
            and self.configs.committed(name)
            and not self.configs.tasks(name)
        )
        return self._kind(config), stopped

    # -- shared --------------------------------------------------------------------------------

    def task_status(self, name: str, task: int) -> dict[str, Any]:
        """``GET /connectors/{name}/tasks/{task}/status``."""
        for status in self.connector_status(name)["tasks"]:
            if status["id"] == task:
                return dict(status)
        raise NotFoundError(f"No status found for task {name}-{task}")

    def pause(self, name: str) -> None:
        """``PUT /connectors/{name}/pause``: tasks stop polling (a stopped connector starts)."""
        self._retarget(name, "PAUSED")

    def resume(self, name: str) -> None:
        """``PUT /connectors/{name}/resume``: tasks poll again (a stopped connector starts)."""
        self._retarget(name, "RUNNING")

    def stop(self, name: str) -> None:
        """``PUT /connectors/{name}/stop``: shut the connector and its tasks down, keep config."""
        self._retarget(name, "STOPPED")

    @contextmanager
    def _change(self) -> Iterator[None]:
        """Refuse while rebalancing; serialise; have the change applied (at once on a
        standalone worker) once it is written."""
        if self.rebalancing:
            raise RebalanceNeededError()
        with self._lock:
            if self.rebalancing:
                raise RebalanceNeededError()
            yield
            self.runtime.settle()

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
        found = problems(cls, config, self.worker_config, distributed=self.distributed)
        return add_problems(config_infos(cls, config), found)

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
        """The herder's admin client (the worker's security and ``admin.*`` settings apply),
        made on first use."""
        if self._admin is None:
            settings = self.worker_config
            overrides = task_clients(settings, "admin")
            self._admin = clients.admin(
                settings["bootstrap.servers"],
                **{"client.id": "connect-herder-admin", **overrides},
            )
        return self._admin

    @contextmanager
    def _offsets(self, name: str, stopped: bool = True) -> Iterator[tuple[ConnectorOffsets, str]]:
        kind, is_stopped = self._offset_state(name)
        if stopped and not is_stopped:
            raise BadRequestError(OFFSETS_NEED_STOP.format(name=name))
        try:
            yield ConnectorOffsets(self.offset_store, self.admin, self.timeout_s), kind
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
