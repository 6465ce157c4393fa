"""Child processes of ``sluice up``: started with a log file, restarted with backoff by their
restart policy, stopped in order.

A child that exits is described (``exited 1``, ``killed by SIGKILL``, and the last error line of
its log, :mod:`sluice.up.exits`); what follows depends on its policy, as in Kubernetes and
docker-compose: ``always`` starts it again, ``on-failure`` only when it did not exit 0 (a
finished generator is ``completed``), ``never`` leaves it ``completed`` or ``failed``. Starts
are spaced by a backoff (1 s, doubling up to 30 s; back to 1 s after a run of a minute); a child
that ended :data:`CRASH_LOOP_AFTER` times in a row, each before a minute, is in ``crash-loop``
(Kubernetes' CrashLoopBackOff) until a run lasts a minute — still retried, but shown.

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
from typing import Literal

from sluice.up.exits import describe_exit, last_error_line, signal_name
from sluice.up.spec import RestartPolicy
from sluice.up.state import Component

__all__ = ["CRASH_LOOP_AFTER", "Child", "ChildState", "Launch", "sluice_command"]

ChildState = Literal[
    "starting", "running", "restarting", "crash-loop", "completed", "failed", "stopped"
]
CRASH_LOOP_AFTER = 3
"""Ends in a row, each before :data:`_HEALTHY_AFTER`, that make a crash loop."""

_FIRST_BACKOFF = 1.0
_MAX_BACKOFF = 30.0
_HEALTHY_AFTER = 60.0
"""A child that ran this long starts again from the first backoff when it dies."""
_PR_SET_PDEATHSIG = 1


def sluice_command() -> list[str]:
    """The command line that runs the ``sluice`` CLI with this Python."""
    return [sys.executable, "-m", "sluice.cli"]


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

    ``kind`` and ``app`` say what it is (``zookeeper``, ``broker``, ``connect``, ``streams``,
    ``process``);
    :meth:`check` notices an exit and, by ``restart``, schedules the next start; :meth:`stop`
    ends it.
    """

    name: str
    kind: str
    launch: Launch
    log: Path
    app: str | None = None
    application_id: str | None = None
    restart: RestartPolicy = "always"
    dead_letter_topic: str | None = None
    state: ChildState = "stopped"
    restarts: int = 0
    since: float | None = None
    process: subprocess.Popen[bytes] | None = None
    returncode: int | None = None
    """The last run's ``returncode`` (negative: the signal that ended it)."""
    last_error: str | None = None
    failures: int = 0
    """Runs in a row that ended before :data:`_HEALTHY_AFTER`."""
    next_start: float | None = None
    wait: float | None = None
    """The backoff before :attr:`next_start`."""
    backoff: float = _FIRST_BACKOFF
    """The backoff the next end will wait."""
    events: list[str] = field(default_factory=list)
    _log_start: int = field(default=0, init=False, repr=False)
    """Where the current run's output begins in the log."""

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
            self._log_start = log.tell()
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
        # a retry in a crash loop stays there until it has run a while
        self.state = "crash-loop" if self.failures >= CRASH_LOOP_AFTER else "running"
        self.since = time.time()
        self.next_start = self.wait = None
        self.note(f"started, pid {self.process.pid}")

    @property
    def waiting(self) -> bool:
        """Whether it waits for its next start (``restarting`` or ``crash-loop``)."""
        return self.process is None and self.next_start is not None

    def check(self, now: float) -> None:
        """Notice an exit (and schedule the next start by the policy); start again when its
        time has come; leave a crash loop after a run that lasts."""
        if self.process is not None and self.state in ("running", "crash-loop"):
            code = self.process.poll()
            ran = now - (self.since or now)
            if code is not None:
                self._ended(code, ran, now)
            elif ran >= _HEALTHY_AFTER and self.failures:
                self.failures = 0
                self.backoff = _FIRST_BACKOFF
                if self.state == "crash-loop":
                    self.state = "running"
                    self.note(f"out of the crash loop: running for {ran:.0f} s")
        elif self.waiting and self.next_start is not None and now >= self.next_start:
            self.restarts += 1
            try:
                self.start()
            except OSError as error:
                self.state = "failed"
                self.next_start = self.wait = None
                self.note(f"cannot start: {error}")

    def _ended(self, code: int, ran: float, now: float) -> None:
        self.process = None
        self.returncode = code
        self.last_error = last_error_line(self.log, self._log_start)
        ended = describe_exit(code) + (f": {self.last_error}" if self.last_error else "")
        if ran >= _HEALTHY_AFTER:
            self.failures = 0
            self.backoff = _FIRST_BACKOFF
        if self.restart == "never" or (self.restart == "on-failure" and code == 0):
            self.state = "completed" if code == 0 else "failed"
            self.note(f"{ended}; {self.state}, not restarted (restart: {self.restart})")
            return
        self.failures += 1
        self.wait = self.backoff
        self.next_start = now + self.wait
        self.backoff = min(self.backoff * 2, _MAX_BACKOFF)
        if self.failures >= CRASH_LOOP_AFTER:
            self.state = "crash-loop"
            self.note(
                f"{ended}; crash-loop: ended {self.failures} times in a row, each within "
                f"{_HEALTHY_AFTER:.0f} s of its start; back-off {self.wait:.0f} s"
            )
        else:
            self.state = "restarting"
            self.note(f"{ended}; restarting in {self.wait:.0f} s")

    def set_restart(self, policy: RestartPolicy) -> None:
        """Change the restart policy; a child it left ended that the new one restarts is
        started at once."""
        self.restart = policy
        code = self.returncode
        ended = self.state in ("completed", "failed") and self.process is None
        wanted = policy == "always" or (policy == "on-failure" and code != 0)
        if ended and code is not None and wanted:
            self.state = "restarting"
            self.next_start, self.wait = time.time(), 0.0
            self.note(f"restart: {policy}: starting again")

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
        if process is None:
            if self.state not in ("completed", "failed"):
                self.state = "stopped"
            self.next_start = self.wait = None
            return
        self.state = "stopped"
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(self.launch.stop_timeout)
            except subprocess.TimeoutExpired:
                self.note(f"still running {self.launch.stop_timeout:.0f} s after SIGTERM: killed")
                process.kill()
                process.wait()
        self.returncode = process.returncode
        self.process = None
        self.note("stopped")

    def note(self, event: str) -> None:
        """Remember an event (the console prints them)."""
        self.events.append(event)

    def record(self) -> Component:
        """The child as the state file (:mod:`sluice.up.state`) holds it."""
        code = self.returncode
        return Component(
            name=self.name,
            kind=self.kind,
            app=self.app,
            application_id=self.application_id,
            pid=self.pid,
            state=self.state,
            restarts=self.restarts,
            since=self.since,
            log=str(self.log),
            command=list(self.launch.command),
            restart=self.restart,
            exit_code=code if code is not None and code >= 0 else None,
            signal=None if code is None else signal_name(code),
            exit=None if code is None else describe_exit(code),
            last_error=self.last_error,
            failures=self.failures,
            backoff=self.wait if self.waiting else None,
            next_start=self.next_start if self.waiting else None,
            dead_letter_topic=self.dead_letter_topic,
        )


# Loaded once here: between fork and exec nothing may be looked up (no lock, no subprocess).
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, between fork and exec
    assert _LIBC is not None
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
