"""What both herders share: the REST API's errors, plugins, validation, offsets and server info.

A *herder* carries out what Kafka Connect's REST API asks of the runtime:
:class:`~sluice.connect.runtime.standalone.Herder` for a standalone worker,
:class:`~sluice.connect.runtime.distributed.herder.DistributedHerder` for a worker of a group.
Errors carry the HTTP status the REST API answers with::

    ConnectError
    └── HerderError                500: the request failed for another reason
        ├── BadRequestError        400: invalid config or request body, connector not stopped
        ├── NotFoundError          404: unknown connector, task or plugin
        ├── AlreadyExistsError     409: a connector of that name exists
        └── RebalanceNeededError   409: :attr:`HerderBase.rebalancing`; try again later

While :attr:`HerderBase.rebalancing` is true every request that changes something raises
:class:`RebalanceNeededError`. Changes are serialised by one lock.
"""

from __future__ import annotations

import importlib.metadata
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from confluent_kafka.admin import AdminClient

from sluice import clients
from sluice.connect.api.connector import Connector
from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.exactly_once import add_problems, problems
from sluice.connect.runtime.offset_admin import ConnectorOffsets
from sluice.connect.runtime.offsets import OffsetStore
from sluice.connect.runtime.plugins import connector_class, known_plugins
from sluice.connect.runtime.validation import (
    class_name,
    config_infos,
    invalid_config_message,
    plugin_infos,
)

__all__ = [
    "AlreadyExistsError",
    "BadRequestError",
    "HerderBase",
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


class HerderBase(ABC):
    """The REST API's view of a runtime; see the module docstring.

    ``worker_config`` holds the worker's settings (``bootstrap.servers``, ``admin.*``),
    ``offset_store`` its source offsets; ``plugins`` adds connector classes to
    ``GET /connector-plugins`` beyond the registered ones (``sluice.connectors`` entry points);
    ``timeout_s`` bounds each admin request.
    """

    distributed = False
    """Whether the worker is distributed (exactly-once sources are possible only then)."""

    def __init__(
        self,
        worker_config: Mapping[str, Any],
        offset_store: OffsetStore,
        *,
        plugins: Iterable[type[Connector]] = (),
        timeout_s: float = 15.0,
    ) -> None:
        self.worker_config = dict(worker_config)
        self.offset_store = offset_store
        self.timeout_s = timeout_s
        self._extra_plugins = list(plugins)
        self._lock = threading.RLock()
        self._admin: AdminClient | None = None
        self._cluster_id: str | None = None

    @property
    @abstractmethod
    def rebalancing(self) -> bool:
        """Whether changes are refused for now (409)."""

    def server_info(self) -> dict[str, Any]:
        """``GET /``: version, commit and the Kafka cluster's id (null if unreachable)."""
        if self._cluster_id is None:
            try:
                described = self.admin().describe_cluster(request_timeout=self.timeout_s)
                self._cluster_id = described.result(self.timeout_s + 5).cluster_id
            except Exception as error:
                log.warning("cannot read the Kafka cluster id: %s", error)
        return {"version": _version(), "commit": "unknown", "kafka_cluster_id": self._cluster_id}

    # -- what each runtime answers ---------------------------------------------------------------

    @abstractmethod
    def connectors(self) -> list[str]:
        """Names of the connectors, sorted."""

    @abstractmethod
    def connector_info(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}``: name, config (secrets hidden), tasks and type."""

    @abstractmethod
    def connector_config(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/config`` (secrets hidden)."""

    @abstractmethod
    def connector_status(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}/status``."""

    @abstractmethod
    def task_configs(self, name: str) -> list[dict[str, Any]]:
        """``GET /connectors/{name}/tasks``."""

    @abstractmethod
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

    @abstractmethod
    def put_connector_config(
        self, name: str, config: Mapping[str, Any], secrets: Iterable[str] = ()
    ) -> tuple[bool, dict[str, Any]]:
        """``PUT /connectors/{name}/config``: create (True) or reconfigure (False) a connector."""

    @abstractmethod
    def delete_connector(self, name: str) -> None:
        """``DELETE /connectors/{name}``: stop and forget it (its offsets stay)."""

    @abstractmethod
    def _retarget(self, name: str, target: str) -> None:
        """Set the connector's target state (RUNNING, PAUSED or STOPPED)."""

    @abstractmethod
    def restart_connector(
        self, name: str, include_tasks: bool = False, only_failed: bool = False
    ) -> dict[str, Any] | None:
        """``POST /connectors/{name}/restart`` (Kafka 3.0 semantics).

        Without flags only the connector instance restarts and None is returned. Otherwise the
        connector restarts unless ``only_failed`` and it did not fail, and with
        ``include_tasks`` every task (or every failed one) too; the answer is the status from
        before, with ``RESTARTING`` for each instance restarted.
        """

    @abstractmethod
    def restart_task(self, name: str, task: int) -> None:
        """``POST /connectors/{name}/tasks/{task}/restart``."""

    @abstractmethod
    def _offset_state(self, name: str) -> tuple[str, bool]:
        """The connector's type (source/sink) and whether it is STOPPED with no tasks."""

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
        if self.rebalancing:
            raise RebalanceNeededError()
        with self._lock:
            if self.rebalancing:
                raise RebalanceNeededError()
            yield

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
        """The herder's admin client (``admin.*`` worker settings apply), made on first use."""
        if self._admin is None:
            settings = self.worker_config
            overrides = {k[6:]: v for k, v in settings.items() if k.startswith("admin.")}
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
