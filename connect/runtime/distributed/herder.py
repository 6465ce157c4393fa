"""The herder of a distributed worker: the REST API's requests as records in the group's topics.

Any worker of the group answers any request. Reads come from ``connect-configs`` and
``connect-status`` as this worker has read them; changes are written to ``connect-configs``
(read back before the answer), and the workers whose slots hold the connector or its tasks act
on them (:mod:`.worker`). So a change is *accepted* when the request
returns and *in effect* a moment later, on whichever worker runs the work — as in Kafka Connect,
where requests are forwarded to the leader.

While this worker has no slots (joining the group, or a rebalance under way) every request that
changes something is answered 409, as Kafka's ``RebalanceNeededException``. A connector whose
state no worker has written yet (just created, or its worker just started) shows
``UNASSIGNED`` rather than Kafka's 404.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from sluice.connect.api.connector import Connector
from sluice.connect.runtime.distributed.worker import ClusterWorker
from sluice.connect.runtime.herder import (
    AlreadyExistsError,
    HerderBase,
    NotFoundError,
    check_initial_state,
)
from sluice.connect.runtime.plugins import connector_class, plugin_type
from sluice.connect.runtime.validation import masked, secret_keys

__all__ = ["DistributedHerder"]

log = logging.getLogger("sluice.connect")


class DistributedHerder(HerderBase):
    """Serves the REST API from a :class:`ClusterWorker`; see the module docstring."""

    distributed = True

    def __init__(
        self,
        cluster: ClusterWorker,
        *,
        plugins: Iterable[type[Connector]] = (),
        timeout_s: float = 15.0,
    ) -> None:
        super().__init__(cluster.config, cluster.offsets, plugins=plugins, timeout_s=timeout_s)
        self.cluster = cluster
        self.configs = cluster.configs

    @property
    def rebalancing(self) -> bool:
        return self.cluster.rebalancing

    # -- reading -------------------------------------------------------------------------------

    def connectors(self) -> list[str]:
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
        return self._masked(name, self._config(name))

    def connector_status(self, name: str) -> dict[str, Any]:
        config = self._config(name)
        found = self.cluster.status.connector(name)
        connector: dict[str, Any] = {"state": "UNASSIGNED", "worker_id": None}
        if found is not None:
            connector = {"state": found["state"], "worker_id": found["worker_id"]}
            if found.get("trace"):
                connector["trace"] = found["trace"]
        tasks = []
        for task in range(len(self.configs.tasks(name))):
            state = self.cluster.status.task(name, task)
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
        with self._change():
            checked = self._checked({**config, "name": name})
            created = self.configs.config(name) is None
            self.configs.put_connector(name, checked, secrets)
            return created, self.connector_info(name)

    def delete_connector(self, name: str) -> None:
        with self._change():
            self._config(name)
            self.configs.remove(name)

    def _retarget(self, name: str, target: str) -> None:
        with self._change():
            self._config(name)
            self.configs.put_target_state(name, target)

    def restart_connector(
        self, name: str, include_tasks: bool = False, only_failed: bool = False
    ) -> dict[str, Any] | None:
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
        with self._change():
            self._config(name)
            if not 0 <= task < len(self.configs.tasks(name)):
                raise NotFoundError(f"Task {name}-{task} not found")
            self.configs.request_restart(name, task, include_tasks=False, only_failed=False)

    def _offset_state(self, name: str) -> tuple[str, bool]:
        config = self._config(name)
        stopped = (
            self.configs.target_state(name) == "STOPPED"
            and self.configs.committed(name)
            and not self.configs.tasks(name)
        )
        return self._kind(config), stopped
