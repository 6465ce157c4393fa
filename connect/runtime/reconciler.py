"""What a worker runs, reconciled with the config store: the one lifecycle of both herders.

A :class:`Reconciler` drives this process's :class:`~sluice.connect.runtime.worker.Worker` from
a :class:`~.config_store.ConfigStore` (connector configs, target states, task sets, restart
requests), writes the states of what runs here to a :class:`~.status_store.StatusStore`, and
runs the share of the work its :class:`Assignment` gives it. The two modes differ only in where
configs and statuses live and in who shares the work (as Kafka's ``StandaloneHerder`` and
``DistributedHerder`` differ in their backing stores):

- standalone (:func:`sluice.connect.runtime.standalone.standalone_worker`): the stores in
  memory, every slot this worker's (:class:`LocalAssignment`), and a change made through the
  REST API applied before the request returns (``synchronous``);
- distributed (:func:`sluice.connect.runtime.distributed.cluster_worker`): the stores in
  ``connect-configs`` and ``connect-status``, read whole by every worker of the group, and the
  slots given by the group (:class:`~.distributed.membership.GroupAssignment`); a change is
  applied by whichever worker holds its slot, a moment after the request returns.

The reconciler's thread *reconciles*, on every change of the configs or of the slots and twice
a second:

- a connector whose slot is this worker's runs here (unless its target state is STOPPED); when
  it starts — or asks for it with ``context.request_task_reconfiguration()`` — this worker
  computes its task configs and, if they changed, writes the new set to the config store;
- a task of the current set whose slot is this worker's runs here, with its config from the
  store; a task whose config changed is restarted, one no longer in the set is stopped;
- PAUSED / RUNNING target states pause and resume the tasks here;
- the states of what runs here are written to the status store.

A rebalance (a worker joined, left or was dropped after ``session.timeout.ms``) first stops all
that runs here — committing source offsets (``connect-offsets`` in distributed mode, so that the
next worker resumes there) — and then reconciles against the new slots. Sink tasks keep their
consumer group ``connect-<name>`` whichever worker runs them.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from sluice.connect.runtime.config_providers import placeholder_keys, resolve_config
from sluice.connect.runtime.config_store import ConfigStore, RestartRequest
from sluice.connect.runtime.slots import connector_slot, task_slot
from sluice.connect.runtime.status_store import StatusStore, connector_key, task_key
from sluice.connect.runtime.task_runner import TaskRunner
from sluice.connect.runtime.worker import ConnectorState, TaskId, Worker, trace_of

__all__ = ["Assignment", "LocalAssignment", "Reconciler"]

log = logging.getLogger("sluice.connect")

TICK_S = 0.5


class Assignment(Protocol):
    """Who runs what: the slots (:mod:`.slots`) this worker holds, ``None`` while it has none
    (joining, or a rebalance under way)."""

    slots: frozenset[int] | None
    slot_count: int

    def join(
        self,
        worker_id: str,
        on_revoke: Callable[[], None],
        on_assign: Callable[[frozenset[int]], None],
    ) -> None:
        """Start taking part; ``on_revoke()`` before slots are given up (everything here must
        stop), ``on_assign(slots)`` when slots are given."""

    def close(self) -> None:
        """Stop taking part (what this worker runs must be stopped first)."""


class LocalAssignment:
    """A standalone worker's :class:`Assignment`: one slot, its own from :meth:`join` on.

    :meth:`revoke` and :meth:`assign` do what a group's rebalance does (tooling and tests use
    them to see a worker through one).
    """

    slot_count = 1

    def __init__(self) -> None:
        self.slots: frozenset[int] | None = None
        self._on_revoke: Callable[[], None] = lambda: None
        self._on_assign: Callable[[frozenset[int]], None] = lambda slots: None

    def join(
        self,
        worker_id: str,
        on_revoke: Callable[[], None],
        on_assign: Callable[[frozenset[int]], None],
    ) -> None:
        """Take the one slot."""
        self._on_revoke, self._on_assign = on_revoke, on_assign
        self.assign()

    def revoke(self) -> None:
        """Give the slot up: everything here stops, changes are refused until :meth:`assign`."""
        self.slots = None
        self._on_revoke()

    def assign(self) -> None:
        """Take the slot (again)."""
        self.slots = frozenset({0})
        self._on_assign(self.slots)

    def close(self) -> None:
        """Give the slot up for good."""
        self.slots = None


def _unresolved(task: dict[str, Any], connector: Mapping[str, Any]) -> dict[str, Any]:
    """A task config with the connector's placeholders put back where their resolved values
    stand (Kafka's reverse transform), so that no secret is written to the config store."""
    keys = placeholder_keys(connector)
    if not keys:
        return task
    resolved = resolve_config({key: connector[key] for key in keys})
    return {
        key: connector[key] if key in keys and value == resolved[key] else value
        for key, value in task.items()
    }


def _normalised(configs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Task configs as they read back from the store (JSON: tuples become lists…)."""
    result: list[dict[str, Any]] = json.loads(json.dumps(configs, sort_keys=True))
    return result


class Reconciler:
    """Runs on ``worker`` what ``configs`` says for the slots of ``assignment``; see the module
    docstring.

    :meth:`start` joins under ``worker_id`` (the REST API's ``host:port``, shown in statuses)
    and starts reconciling; :meth:`stop` stops what runs here, committing, leaves, and closes
    the stores and the worker's offset store. With ``synchronous``, :meth:`settle` (called by
    the herder after each change) reconciles in the caller's thread.
    """

    def __init__(
        self,
        worker: Worker,
        configs: ConfigStore,
        status: StatusStore,
        assignment: Assignment,
        *,
        synchronous: bool = False,
    ) -> None:
        self.worker = worker
        """Runs the connector instances and tasks this worker's slots hold."""
        worker.on_reconfigure = self.reconfigure
        self.config = worker.config
        self.offsets = worker.offsets
        self.configs = configs
        self.status = status
        self.assignment = assignment
        self.synchronous = synchronous
        self._wake = threading.Event()
        self._restarts: queue.SimpleQueue[RestartRequest] = queue.SimpleQueue()
        self._reconfigure: queue.SimpleQueue[str] = queue.SimpleQueue()
        configs.listen(self._wake.set, self._restart_requested)
        self.task_sources: dict[TaskId, dict[str, Any]] = {}  # as in the store: placeholders kept
        # tasks that could not even be made (unknown class, bad converter…): config and trace,
        # so that they are tried again only when their config changes or on a restart request
        self.broken: dict[TaskId, tuple[dict[str, Any], str]] = {}
        self.generation = 0
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="connect-herder", daemon=True)

    # -- life ----------------------------------------------------------------------------------

    def start(self, worker_id: str) -> None:
        """Join as ``worker_id`` and run this worker's share of the work."""
        self.worker.worker_id = worker_id
        self.assignment.join(worker_id, self._revoked, self._assigned)
        self._thread.start()
        self.settle()

    @property
    def worker_id(self) -> str:
        """The REST API's ``host:port`` this worker joined as (shown in statuses)."""
        return self.worker.worker_id

    @property
    def connectors(self) -> dict[str, ConnectorState]:
        """The connector instances running here."""
        return self.worker.connectors

    @property
    def tasks(self) -> dict[TaskId, TaskRunner]:
        """The tasks running here."""
        return self.worker.tasks

    @property
    def rebalancing(self) -> bool:
        """True until this worker has its slots (and during each rebalance)."""
        return self.assignment.slots is None

    def stop(self) -> None:
        """Stop everything here (committing), leave, close the stores."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(60)
        self._stop_all()
        self.assignment.close()
        self.configs.close()
        self.status.close()
        self.offsets.close()

    def settle(self) -> None:
        """With ``synchronous``, reconcile now, in this thread (a failure is logged: the next
        tick tries again); else let the reconciler's thread do it."""
        if not self.synchronous:
            self._wake.set()
            return
        try:
            self.tick()
        except Exception:
            log.exception("connect worker %s: reconciling failed", self.worker_id)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(TICK_S)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.tick()
            except Exception:  # keep the worker up: the next tick tries again
                log.exception("connect worker %s: reconciling failed", self.worker_id)

    # -- the assignment ---------------------------------------------------------------------------

    def _revoked(self) -> None:
        self._stop_all()

    def _assigned(self, slots: frozenset[int]) -> None:
        self.generation += 1
        self._wake.set()

    def _stop_all(self) -> None:
        with self._lock:
            for key in list(self.tasks):
                self._stop_task(key, forget=False)
            for key in list(self.broken):
                self._forget_broken(key, forget=False)
            for name in list(self.connectors):
                self._stop_connector(name, forget=False)

    def _owns(self, slot_of: int) -> bool:
        slots = self.assignment.slots
        return slots is not None and slot_of in slots

    def _slot_count(self) -> int:
        return self.assignment.slot_count

    # -- requests from connectors and the REST API ---------------------------------------------

    def reconfigure(self, name: str) -> None:
        """Compute the connector's task configs again (asked by the connector)."""
        self._reconfigure.put(name)
        self._wake.set()

    def fail_connector(self, name: str, error: Exception) -> None:
        """Mark the connector running here FAILED (asked by the connector)."""
        self.worker.fail_connector(name, error)

    def _restart_requested(self, request: RestartRequest) -> None:
        self._restarts.put(request)
        self._wake.set()

    # -- reconciling ---------------------------------------------------------------------------

    def tick(self) -> None:
        """Serve requests, reconcile with configs and slots, write states (see the module)."""
        with self._lock:
            if self.rebalancing:
                return
            self._serve_restarts()
            self._reconcile_connectors()
            self._serve_reconfigurations()
            self._reconcile_tasks()
            self._publish()

    def _serve_restarts(self) -> None:
        while not self._restarts.empty():
            request = self._restarts.get_nowait()
            name = request.connector
            if request.task is not None:
                self.broken.pop((name, request.task), None)  # tried again below
                if (name, request.task) in self.tasks:
                    self._restart_task((name, request.task))
                continue
            instance = self.connectors.get(name)
            if instance is not None and (not request.only_failed or instance.state == "FAILED"):
                self._stop_connector(name, forget=False)  # started again just below
            if request.include_tasks:
                for key in [k for k in self.broken if k[0] == name]:
                    del self.broken[key]  # failed by definition: tried again below
                for key, runner in list(self.tasks.items()):
                    if key[0] == name and (not request.only_failed or runner.state == "FAILED"):
                        self._restart_task(key)

    def _serve_reconfigurations(self) -> None:
        while not self._reconfigure.empty():
            instance = self.connectors.get(self._reconfigure.get_nowait())
            if instance is not None and instance.state != "FAILED":
                self._commit_tasks(instance)

    def _reconcile_connectors(self) -> None:
        names = self.configs.connectors()
        for name, instance in list(self.connectors.items()):
            config = self.configs.config(name)
            if (
                config is None
                or config != instance.config
                or not self._owns(connector_slot(name, self._slot_count()))
                or self.configs.target_state(name) == "STOPPED"
            ):
                self._stop_connector(name, forget=config is None)
        for name in names:
            if not self._owns(connector_slot(name, self._slot_count())):
                continue
            target = self.configs.target_state(name)
            if target == "STOPPED":
                if self.configs.tasks(name) or not self.configs.committed(name):
                    self.configs.put_tasks(name, [])  # Kafka 3.5: a stopped connector has none
                self.status.put(connector_key(name), self._record("STOPPED", None))
                continue
            config = self.configs.config(name)
            if config is None:
                continue
            instance = self.connectors.get(name) or self._start_connector(name, config)
            if instance.state != "FAILED":
                instance.state = target

    def _reconcile_tasks(self) -> None:
        wanted: dict[TaskId, dict[str, Any]] = {}
        counts: dict[str, int] = {}
        for name in self.configs.connectors():
            if self.configs.target_state(name) == "STOPPED":
                continue
            configs = self.configs.tasks(name)
            counts[name] = len(configs)
            for task, config in enumerate(configs):
                if self._owns(task_slot(name, task, self._slot_count())):
                    wanted[(name, task)] = config
        for key, source in list(self.task_sources.items()):
            if wanted.get(key) != source:
                self._stop_task(key, forget=key[1] >= counts.get(key[0], 0))
        for key, (config, _) in list(self.broken.items()):
            if wanted.get(key) != config:
                self._forget_broken(key, forget=key[1] >= counts.get(key[0], 0))
        for key, config in wanted.items():
            if key in self.broken:
                continue
            runner = self.tasks.get(key) or self._start_task(key, config)
            if runner is None:
                continue
            if self.configs.target_state(key[0]) == "PAUSED":
                runner.pause()
            else:
                runner.resume()

    # -- connectors and tasks ------------------------------------------------------------------

    def _start_connector(self, name: str, config: dict[str, Any]) -> ConnectorState:
        instance = self.worker.start_instance(name, config)
        if instance.state == "FAILED":
            return instance
        try:
            self._commit_tasks(instance)
            log.info("connector %s started on %s", name, self.worker_id)
        except Exception as error:
            log.error("connector %s failed to start: %s", name, error)
            instance.trace, instance.state = trace_of(error), "FAILED"  # trace first
        return instance

    def _commit_tasks(self, instance: ConnectorState) -> None:
        """Write the connector's task set if it is not the current one."""
        name, config = instance.name, instance.config
        configs = self.worker.task_configs(name)
        wanted = _normalised([_unresolved(task, config) for task in configs])
        if wanted != self.configs.tasks(name) or not self.configs.committed(name):
            self.configs.put_tasks(name, wanted)
            log.info("connector %s: %d task configs written", name, len(wanted))

    def _stop_connector(self, name: str, *, forget: bool) -> None:
        self.worker.stop_instance(name)
        self.status.put(connector_key(name), None if forget else self._record("UNASSIGNED", None))

    def _start_task(self, key: TaskId, config: dict[str, Any]) -> TaskRunner | None:
        """Start a task (None: it could not be made, and shows FAILED with the reason)."""
        name, task = key
        try:
            runner = self.worker.start_task(name, task, resolve_config(config))
        except Exception as error:
            log.error("task %s-%d cannot be started: %s", name, task, error)
            self.broken[key] = (config, trace_of(error))
            return None
        self.task_sources[key] = config
        log.info("task %s-%d started on %s", name, task, self.worker_id)
        return runner

    def _stop_task(self, key: TaskId, *, forget: bool) -> None:
        self.worker.stop_task(*key)
        del self.task_sources[key]
        record = None if forget else self._record("UNASSIGNED", None)
        self.status.put(task_key(*key), record)

    def _forget_broken(self, key: TaskId, *, forget: bool) -> None:
        del self.broken[key]
        self.status.put(task_key(*key), None if forget else self._record("UNASSIGNED", None))

    def _restart_task(self, key: TaskId) -> None:
        config = self.task_sources[key]
        self._stop_task(key, forget=False)
        self._start_task(key, config)

    # -- states --------------------------------------------------------------------------------

    def _record(
        self, state: str, trace: str | None, warnings: list[str] | None = None
    ) -> dict[str, Any]:
        """A status record in Kafka Connect's format (plus a task's ``warnings``, if any)."""
        record: dict[str, Any] = {
            "state": state,
            "trace": trace,
            "worker_id": self.worker_id,
            "generation": self.generation,
        }
        if warnings:
            record["warnings"] = warnings
        return record

    def _publish(self) -> None:
        for name, instance in self.connectors.items():
            self.status.put(connector_key(name), self._record(instance.state, instance.trace))
        for (name, task), runner in self.tasks.items():
            record = self._record(runner.state, runner.trace, runner.warnings())
            self.status.put(task_key(name, task), record)
        for (name, task), (_, trace) in self.broken.items():
            self.status.put(task_key(name, task), self._record("FAILED", trace))
