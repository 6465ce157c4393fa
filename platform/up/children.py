"""Child processes of ``sluice up``: started with a log file, restarted with backoff, stopped
in order.

A child runs in its own session (Ctrl-C at the terminal reaches only the supervisor, which stops
the children in order) and, on Linux, is sent SIGTERM by the kernel if the supervisor dies
without stopping it (``PR_SET_PDEATHSIG``), so that no process is left behind.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = ["Child", "ChildState", "Launch"]

ChildState = Literal["starting", "running", "restarting", "stopped", "failed"]

_FIRST_BACKOFF = 1.0
_MAX_BACKOFF = 30.0
_HEALTHY_AFTER = 60.0
"""A child that ran this long starts again from the first backoff when it dies."""
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Launch:
    """How to start one child: its command line, environment (added to ours) and log file."""

    command: tuple[str, ...]
    environment: tuple[tuple[str, str], ...] = ()
    stop_timeout: float = 30.0
    fingerprint: str = ""
    """What else makes two launches differ (the content of a file the command reads)."""


@dataclass
class Child:
    """One supervised process.

    ``kind`` and ``app`` say what it is (``broker``, ``connect``, ``streams``, ``process``);
    :meth:`check` notices an exit and schedules the restart, :meth:`stop` ends it.
    """

    name: str
    kind: str
    launch: Launch
    log: Path
    app: str | None = None
    application_id: str | None = None
    state: ChildState = "stopped"
    restarts: int = 0
    since: float | None = None
    process: subprocess.Popen[bytes] | None = None
    exit_code: int | None = None
    next_start: float = 0.0
    backoff: float = _FIRST_BACKOFF
    events: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int | None:
        """The running process's id."""
        return None if self.process is None else self.process.pid

    def start(self) -> None:
        """Start the process (appending to its log)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        environment = {**os.environ, **dict(self.launch.environment)}
        with self.log.open("ab") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                list(self.launch.command),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,
                # prctl through a preloaded libc: nothing that takes a Python lock
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
            )
        self.state = "running"
        self.since = time.time()
        self.exit_code = None
        self.note(f"started, pid {self.process.pid}")

    def check(self, now: float) -> None:
        """Notice an exit (and schedule a restart); start again when its time has come."""
        if self.state == "running" and self.process is not None:
            code = self.process.poll()
            if code is None:
                return
            self.exit_code = code
            ran = now - (self.since or now)
            if ran >= _HEALTHY_AFTER:
                self.backoff = _FIRST_BACKOFF
            self.state = "restarting"
            self.next_start = now + self.backoff
            self.note(f"exited with {_describe(code)}; restarting in {self.backoff:.0f} s")
            self.backoff = min(self.backoff * 2, _MAX_BACKOFF)
            self.process = None
        elif self.state == "restarting" and now >= self.next_start:
            self.restarts += 1
            try:
                self.start()
            except OSError as error:
                self.state = "failed"
                self.note(f"cannot start: {error}")

    def alive(self) -> bool:
        """Whether the process runs."""
        return self.process is not None and self.process.poll() is None

    def terminate(self) -> None:
        """Ask the process to stop (SIGTERM) without waiting."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after the launch's timeout; the child is stopped after."""
        process = self.process
        self.state = "stopped"
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(self.launch.stop_timeout)
            except subprocess.TimeoutExpired:
                self.note(f"still running {self.launch.stop_timeout:.0f} s after SIGTERM: killed")
                process.kill()
                process.wait()
        self.exit_code = process.returncode
        self.process = None
        self.note("stopped")

    def note(self, event: str) -> None:
        """Remember an event (the console prints them)."""
        self.events.append(event)

    def to_json(self) -> dict[str, Any]:
        """The child as ``up.json`` shows it."""
        shown: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.app is not None:
            shown["app"] = self.app
        if self.application_id is not None:
            shown["application_id"] = self.application_id
        shown.update(
            pid=self.pid,
            state=self.state,
            restarts=self.restarts,
            since=self.since,
            log=str(self.log),
            command=list(self.launch.command),
        )
        return shown


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


# Loaded once here: between fork and exec nothing may be looked up (no lock, no subprocess).
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    assert _LIBC is not None
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
