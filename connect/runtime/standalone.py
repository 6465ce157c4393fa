"""The herder of a standalone worker: the REST API's requests carried out on one :class:`Worker`.

As Kafka's ``StandaloneHerder``: connector configs live in the worker's memory (the deployment
files are the durable copy), source offsets in its offset store, sink offsets in each
connector's consumer group ``connect-<name>`` (:mod:`sluice.connect.runtime.offset_admin`).

Each connector has a *target state* (Kafka 3.5): ``RUNNING``, ``PAUSED`` (tasks run but do not
poll) or ``STOPPED`` (the connector and its tasks are shut down, its config is kept); a restart
or a new config brings a connector back to its target state. Offsets may be altered or reset
only while the connector is ``STOPPED`` (Kafka 3.6). Errors and the shared requests are
:mod:`sluice.connect.runtime.herder`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from sluice.connect.api.connector import Connector
from sluice.connect.runtime.config_providers import placeholder_keys, resolve_config
from sluice.connect.runtime.herder import (
    TARGET_STATES,
    AlreadyExistsError,
    BadRequestError,
    HerderBase,
    HerderError,
    NotFoundError,
    RebalanceNeededError,
    check_initial_state,
)
from sluice.connect.runtime.plugins import connector_class
from sluice.connect.runtime.validation import masked, secret_keys
from sluice.connect.runtime.worker import ConnectorState, Worker, trace_of

__all__ = [
    "AlreadyExistsError",
    "BadRequestError",
    "Herder",
    "HerderError",
    "NotFoundError",
    "RebalanceNeededError",
]

log = logging.getLogger("sluice.connect")


class Herder(HerderBase):
    """Serves the REST API from a :class:`Worker`; see the module docstring and
    :class:`~sluice.connect.runtime.herder.HerderBase` for ``plugins`` and ``timeout_s``."""

    def __init__(
        self, worker: Worker, *, plugins: Iterable[type[Connector]] = (), timeout_s: float = 15.0
    ) -> None:
        super().__init__(worker.config, worker.offsets, plugins=plugins, timeout_s=timeout_s)
        self.worker = worker
        self._rebalancing = False
        self._targets: dict[str, str] = {}
        self._secrets: dict[str, frozenset[str]] = {}

    @property
    def rebalancing(self) -> bool:
        """Set by hand (tests, tooling): a standalone worker never rebalances."""
        return self._rebalancing

    @rebalancing.setter
    def rebalancing(self, value: bool) -> None:
        self._rebalancing = value

    # -- reading -------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
        """Names of the connectors, sorted."""
        return self.worker.names()

    def _state(self, name: str) -> ConnectorState:
        running = self.worker.connectors.get(name)
        if running is None:
            raise NotFoundError(f"Connector {name} not found")
        return running

    def _masked(
        self, name: str, config: Mapping[str, Any], also: frozenset[str] = frozenset()
    ) -> dict[str, Any]:
        cls = connector_class(str(config.get("connector.class")))
        return masked(config, self._secrets.get(name, frozenset()) | secret_keys(cls) | also)

    def connector_info(self, name: str) -> dict[str, Any]:
        """``GET /connectors/{name}``: name, config (secrets hidden), tasks and type."""
        running = self._state(name)
        return {
            "name": name,
            "config": self._masked(name, running.config),
            "tasks": [{"connector": name, "task": t.task_id} for t in self.worker.tasks_of(name)],
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
        """``GET /connectors/{name}/tasks`` (a task's config holds the resolved values of its
        connector's placeholders: hidden)."""
        running = self._state(name)
        resolved = placeholder_keys(running.config)
        return [
            {
                "id": {"connector": name, "task": t.task_id},
                "config": self._masked(name, t.config, resolved),
            }
            for t in self.worker.tasks_of(name)
        ]

    def target_state(self, name: str) -> str:
        """The state the connector is meant to be in."""
        running = self._state(name)
        default = running.state if running.state in TARGET_STATES else "RUNNING"
        return self._targets.get(name, default)

    # -- changing ------------------------------------------------------------------------------

    def create_connector(
        self,
        name: str,
        config: Mapping[str, Any],
        initial_state: str = "RUNNING",
        secrets: Iterable[str] = (),
    ) -> dict[str, Any]:
        check_initial_state(initial_state)
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
            for task in self.worker.tasks_of(name):
                if target == "PAUSED":
                    task.pause()
                else:
                    task.resume()
            if running.state != "FAILED":  # a failed connector stays FAILED until restarted
                running.state = target

    def restart_connector(
        self, name: str, include_tasks: bool = False, only_failed: bool = False
    ) -> dict[str, Any] | None:
        """``POST /connectors/{name}/restart``; see :meth:`HerderBase.restart_connector`."""
        with self._change():
            running = self._state(name)
            if not include_tasks and not only_failed:
                self._restart_instance(name)
                return None
            status = self.worker.status(name)
            connector = not only_failed or running.state == "FAILED"
            runners = self.worker.tasks_of(name)
            tasks = [
                t.task_id
                for t in runners
                if include_tasks and (not only_failed or t.state == "FAILED")
            ]
            if connector:
                status["connector"]["state"] = "RESTARTING"
            for task_status in status["tasks"]:
                if task_status["id"] in tasks:
                    task_status["state"] = "RESTARTING"
            if connector and len(tasks) == len(runners):
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
            self._state(name)
            if (name, task) not in self.worker.tasks:
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
            running.state, running.trace = "FAILED", trace_of(error)

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
        if connector is None:  # could not be made: it stays FAILED
            return
        try:
            connector.stop()
            resolved = resolve_config(config)
            connector.start({**resolved, **type(connector).CONFIG.parse(resolved)})
            wanted = self.worker.task_configs(name)
        except Exception as error:
            log.error("connector %s failed to restart: %s", name, error)
            running.state, running.trace = "FAILED", trace_of(error)
            return
        running.state, running.trace = target, None
        if wanted != [t.config for t in self.worker.tasks_of(name)]:
            self._shut_down(name)
            self._start(name, config)

    def _restart_task(self, name: str, task_id: int) -> None:
        running = self._state(name)
        if self.target_state(name) == "PAUSED":
            running.state = "PAUSED"
        self.worker.restart_task(name, task_id)

    def _offset_state(self, name: str) -> tuple[str, bool]:
        running = self._state(name)
        return running.kind, running.state == "STOPPED" and not self.worker.tasks_of(name)
