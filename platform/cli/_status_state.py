"""``sluice up``'s state file (``<home>/up.json``) as ``sluice status`` reads it: checked, with
whether each process it names still lives."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sluice.cli._common import EXIT_USAGE, CliError

STATE_FILE = "up.json"
"""The file ``sluice up`` keeps its state in, under its home directory (the supervisor's
``sluice.up.STATE_FILE``; not imported from there to keep ``sluice status`` light)."""


@dataclass
class Component:
    """A process the supervisor runs, as its state file last said, plus whether its pid lives."""

    name: str
    kind: str
    app: str | None
    application_id: str | None
    pid: int | None
    state: str
    alive: bool
    restarts: int
    since: float | None
    log: str | None


@dataclass
class Supervisor:
    """``sluice up``'s state file and whether the process that writes it still runs."""

    state_file: str
    pid: int | None
    running: bool
    file: str | None
    updated: float | None
    bootstrap: str | None
    connect_url: str | None
    components: list[Component]


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists and is not a zombie.

    >>> pid_alive(os.getpid())
    True
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def read_supervisor(home: Path) -> Supervisor | None:
    """``<home>/up.json`` read and checked; ``None`` if there is none. A file that is not what
    ``sluice up`` writes is a :class:`CliError` naming it."""
    path = home / STATE_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); it is written by `sluice up`",
            EXIT_USAGE,
        ) from None
    try:
        return _supervisor(path, data)
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(
            f"{path}: not a state file of `sluice up` ({exc}); remove it if no `sluice up` runs",
            EXIT_USAGE,
        ) from None


def _supervisor(path: Path, data: Any) -> Supervisor:
    if not isinstance(data, dict):
        raise TypeError("expected a JSON object")
    pid = _int(data.get("pid"), "pid")
    components = data.get("components") or []
    if not isinstance(components, list):
        raise TypeError("components: expected a list")
    return Supervisor(
        state_file=str(path.resolve()),
        pid=pid,
        running=pid is not None and pid_alive(pid),
        file=_str(data.get("file"), "file"),
        updated=_float(data.get("updated"), "updated"),
        bootstrap=_str(data.get("bootstrap"), "bootstrap"),
        connect_url=_str(data.get("connect_url"), "connect_url"),
        components=[_component(i, c) for i, c in enumerate(components)],
    )


def _component(index: int, data: Any) -> Component:
    if not isinstance(data, dict):
        raise TypeError(f"components[{index}]: expected an object")
    where = f"components[{index}]"
    name = _str(data["name"], f"{where}.name")
    pid = _int(data.get("pid"), f"{where}.pid")
    return Component(
        name=name or "",
        kind=_str(data.get("kind"), f"{where}.kind") or "process",
        app=_str(data.get("app"), f"{where}.app"),
        application_id=_str(data.get("application_id"), f"{where}.application_id"),
        pid=pid,
        state=_str(data.get("state"), f"{where}.state") or "unknown",
        alive=pid is not None and pid_alive(pid),
        restarts=_int(data.get("restarts"), f"{where}.restarts") or 0,
        since=_float(data.get("since"), f"{where}.since"),
        log=_str(data.get("log"), f"{where}.log"),
    )


def _str(value: Any, key: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{key}: expected a string, got {value!r}")


def _int(value: Any, key: str) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise TypeError(f"{key}: expected a whole number, got {value!r}")


def _float(value: Any, key: str) -> float | None:
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return None if value is None else float(value)
    raise TypeError(f"{key}: expected a number, got {value!r}")
