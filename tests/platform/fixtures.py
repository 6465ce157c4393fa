"""Fixtures of the ``sluice up`` tests: a real ``sluice up`` of a file, in its own folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

SLUICE = str(Path(sys.executable).with_name("sluice"))


class Running:
    """`sluice up` of the ``sluice.yaml`` in ``folder``, with ``options`` (``--secure``, say)."""

    def __init__(self, folder: Path, *options: str) -> None:
        self.folder = folder
        self.log = (folder / "up.out").open("ab")
        self.process = subprocess.Popen(
            [SLUICE, "up", "-f", "sluice.yaml", *options],
            cwd=folder,
            stdout=self.log,
            stderr=self.log,
        )
        self.pids: set[int] = set()

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads((self.folder / ".sluice/up.json").read_text())
        self.pids |= {c["pid"] for c in state["components"] if c["pid"]}
        return state

    def pid(self, name: str) -> int | None:
        pids = [c["pid"] for c in self.state()["components"] if c["name"] == name]
        return pids[0] if pids else None

    def output(self) -> str:
        return (self.folder / "up.out").read_text(errors="replace")

    def wait_running(self, names: set[str], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.output()
            try:
                state = self.state()
            except (OSError, ValueError):
                state = {"components": []}
            running = {c["name"] for c in state["components"] if c["state"] == "running"}
            if running == names:
                return
            time.sleep(0.3)
        raise AssertionError(f"not running {names}:\n{self.output()}")

    def component(self, name: str) -> dict[str, Any] | None:
        """The state file's entry of child ``name`` (None if unreadable or absent)."""
        try:
            components = self.state()["components"]
        except (OSError, ValueError):
            return None
        found = [c for c in components if c["name"] == name]
        return found[0] if found else None

    def wait_component(
        self,
        name: str,
        expected: dict[str, Any],
        timeout: float = 60,
        until: Callable[[dict[str, Any]], bool] = lambda component: True,
    ) -> dict[str, Any]:
        """Child ``name``'s entry once it holds every key of ``expected`` with that value (and
        ``until`` of it is true)."""
        deadline = time.monotonic() + timeout
        last: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.output()
            last = self.component(name)
            if (
                last is not None
                and all(last.get(k) == v for k, v in expected.items())
                and until(last)
            ):
                return last
            time.sleep(0.2)
        raise AssertionError(f"{name}: expected {expected}, last {last}:\n{self.output()}")

    def stop(self) -> None:
        """SIGTERM to ``sluice up`` (it stops its children), then SIGKILL to any child left."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(120)
        self.log.close()
        for pid in self.pids:
            if psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)
