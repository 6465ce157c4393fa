"""What the worker's source and sink task runners share: the thread, the state, pausing.

States are Kafka Connect's: ``UNASSIGNED`` → ``RUNNING`` ⇄ ``PAUSED``, and ``FAILED`` (with
the trace shown by the REST API) when the task raised, or the tolerance policy gave up. A
running task's :meth:`~sluice.connect.Task.warnings` appear in its status as
``warnings`` (a list of lines; an extra field Kafka Connect's clients ignore).
"""

from __future__ import annotations

import logging
import threading
import traceback
from abc import ABC, abstractmethod
from typing import Any

from sluice.connect.api.connector import Task
from sluice.connect.converters import Converter, converter_from
from sluice.connect.runtime.metrics import TaskMetrics
from sluice.connect.runtime.tolerance import ErrorPolicy
from sluice.connect.transforms import TransformChain

__all__ = ["TaskRunner"]

log = logging.getLogger("sluice.connect")

DEFAULT_CONVERTER = "json"


def _converter(config: dict[str, Any], worker: dict[str, Any], is_key: bool) -> Converter:
    prefix = "key.converter" if is_key else "value.converter"
    source = config if prefix in config else worker
    name = str(source.get(prefix, DEFAULT_CONVERTER))
    settings = {k[len(prefix) + 1 :]: v for k, v in source.items() if k.startswith(prefix + ".")}
    return converter_from(name, settings, is_key)


class TaskRunner(ABC):
    """One task of a connector, in its own thread."""

    kind = ""
    """``source`` or ``sink`` (the metrics' groups)."""

    def __init__(
        self, connector: str, task_id: int, config: dict[str, Any], worker_config: dict[str, Any]
    ) -> None:
        self.connector = connector
        self.task_id = task_id
        self.config = config
        self.state = "UNASSIGNED"
        self.trace: str | None = None
        self.metrics = TaskMetrics()
        """Counters read by :mod:`sluice.connect.runtime.metrics` (added to once per batch)."""
        self.key_converter = _converter(config, worker_config, is_key=True)
        self.value_converter = _converter(config, worker_config, is_key=False)
        self.transforms = TransformChain.from_config(config)
        self.errors = ErrorPolicy.from_config(config)
        self.offset_flush_interval_s = (
            int(
                config.get(
                    "offset.flush.interval.ms",
                    worker_config.get("offset.flush.interval.ms", 10_000),
                )
            )
            / 1000
        )
        self._stop = threading.Event()
        self._resume = threading.Event()
        self._resume.set()
        self._thread: threading.Thread | None = None

    @property
    def name(self) -> str:
        """``connector-N``, as logs and the REST API name tasks."""
        return f"{self.connector}-{self.task_id}"

    def start(self) -> None:
        """Run in a new thread."""
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.state = "RUNNING" if self._resume.is_set() else "PAUSED"
            self.execute()
            if self.state == "RUNNING":
                self.state = "UNASSIGNED"
        except BaseException as error:
            # the trace first: the status is published from another thread, and a FAILED
            # state read before its trace was set went out without one
            self.trace = "".join(
                traceback.format_exception(type(error), error, error.__traceback__)
            )
            self.state = "FAILED"
            log.error("task %s failed: %s", self.name, error)
        finally:
            self.close_converters()

    def close_converters(self) -> None:
        """Release what the converters hold (a schema registry's connections) once the task's
        loop is over; a failure to close is logged, never raised."""
        for converter in (self.key_converter, self.value_converter):
            try:
                converter.close()
            except Exception:  # a converter's own trouble must not hide the task's
                log.exception("task %s: closing converter %s", self.name, converter)

    @abstractmethod
    def execute(self) -> None:
        """The task's loop; returns when :meth:`stopping` is true."""

    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stop.is_set()

    def wait_if_paused(self) -> None:
        """Block while paused (returns at once when stopping)."""
        while not self._resume.wait(0.2):
            if self._stop.is_set():
                return

    def pause(self) -> None:
        """Stop polling until :meth:`resume`."""
        self._resume.clear()
        if self.state == "RUNNING":
            self.state = "PAUSED"

    def resume(self) -> None:
        """Poll again."""
        self._resume.set()
        if self.state == "PAUSED":
            self.state = "RUNNING"

    def stop(self, timeout_s: float = 30.0) -> None:
        """Ask the loop to finish, commit what is done, and wait for it."""
        self._stop.set()
        self._resume.set()
        if self._thread is None:
            self.release()  # never started: only its clients to close
            self.close_converters()
            return
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.warning("task %s did not stop within %.0f s", self.name, timeout_s)

    def release(self) -> None:  # noqa: B027 - runners with clients override it
        """Close the clients of a runner whose thread never ran."""

    def warnings(self) -> list[str]:
        """The task's :meth:`~sluice.connect.Task.warnings` while it runs (a broken
        plugin's own failure is one too)."""
        task = getattr(self, "task", None)
        if not isinstance(task, Task) or self.state not in ("RUNNING", "PAUSED"):
            return []
        try:
            return [str(warning) for warning in task.warnings()]
        except Exception as error:
            return [f"{type(task).__name__}.warnings() failed: {error!r}"]

    def status(self) -> dict[str, Any]:
        """The REST API's task status (Kafka Connect's, plus ``warnings`` when there are)."""
        status: dict[str, Any] = {"id": self.task_id, "state": self.state}
        if self.trace:
            status["trace"] = self.trace
        warnings = self.warnings()
        if warnings:
            status["warnings"] = warnings
        return status
