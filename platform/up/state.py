"""``<home>/up.json``: the state file ``sluice up`` writes and ``sluice status`` reads.

The supervisor replaces it atomically (a temporary file renamed over it) at start, every second
and at every change; a reader never sees half a file. One JSON object::

    {"pid": 4242 | null,            # the supervisor (null once it stopped)
     "file": "/abs/sluice.yaml", "updated": 1763781234.5, "generation": 1,
     "bootstrap": "127.0.0.1:9092", "connect_url": "http://127.0.0.1:8083" | null,
     "connect_config": "/abs/.sluice/connect-rest.properties" | null,  # a secured REST API's
                                     # CA and login (owner-only; sluice.connect_rest reads it)
     "last_reload": {"id": "...", "at": 1763781234.5, "ok": true, "message": "applied"} | null,
     "components": [{"name": "revenue-0", "kind": "streams", "app": "revenue",
                     "application_id": "shop-revenue", "pid": 4245 | null,
                     "state": "crash-loop", "restarts": 5, "since": 1763781230.0,
                     "log": ".sluice/logs/revenue-0.log", "command": ["python", "revenue.py"],
                     "restart": "always", "exit_code": 1 | null, "signal": "SIGKILL" | null,
                     "exit": "exited 1" | null, "last_error": "ProcessingError: ..." | null,
                     "failures": 3, "backoff": 4.0 | null, "next_start": 1763781238.0 | null,
                     "dead_letter_topic": "orders-dlq" | null}]}

Every key of a component but ``name`` may be missing (a file of an older ``sluice up``): it
then reads as ``null`` (``0`` for the counts). :data:`RELOAD_FILE` is the request a second
``sluice up`` leaves for the running one (``{"file": ..., "id": ...}``) before sending SIGHUP.

This module imports nothing heavy: ``sluice status`` reads the file without loading the
supervisor.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sluice.errors import SluiceError

__all__ = [
    "RELOAD_FILE",
    "STATE_FILE",
    "Component",
    "StateFileError",
    "UpState",
    "pid_alive",
    "read",
    "state_path",
    "write",
]

STATE_FILE = "up.json"
"""The state file's name under the supervisor's home directory."""
RELOAD_FILE = "up.reload"
"""The reload request's name under the supervisor's home directory."""


class StateFileError(SluiceError):
    """``up.json`` cannot be read or is not what ``sluice up`` writes (the message says why)."""


@dataclass
class Component:
    """One child of the supervisor, as the state file holds it."""

    name: str
    kind: str = "process"
    """``broker``, ``connect``, ``streams`` or ``process``."""
    app: str | None = None
    """The ``streams:``/``processes:`` entry it is an instance of."""
    application_id: str | None = None
    pid: int | None = None
    state: str = "unknown"
    """``starting``, ``running``, ``restarting``, ``crash-loop``, ``completed``, ``failed``,
    ``stopped``."""
    restarts: int = 0
    since: float | None = None
    """When it was last started (seconds since the epoch)."""
    log: str | None = None
    command: list[str] = field(default_factory=list)
    restart: str | None = None
    """Its restart policy: ``always``, ``on-failure`` or ``never``."""
    exit_code: int | None = None
    """The exit code of its last run (None: not exited, or killed by a signal)."""
    signal: str | None = None
    """The signal that ended its last run (``SIGKILL``), or None."""
    exit: str | None = None
    """How the last run ended, in words: ``exited 1``, ``killed by SIGKILL``."""
    last_error: str | None = None
    """The last line of its log's last run that looks like an error."""
    failures: int = 0
    """Runs in a row that ended before it ran a minute (reset by a run that lasts)."""
    backoff: float | None = None
    """Seconds it waits before the next start (while ``restarting`` or ``crash-loop``)."""
    next_start: float | None = None
    """When it starts again (seconds since the epoch), or None."""
    dead_letter_topic: str | None = None
    """A Streams app's ``errors.deadletterqueue.topic.name``, from its ``config:``."""


@dataclass
class UpState:
    """The whole state file."""

    pid: int | None
    file: str | None
    updated: float | None
    bootstrap: str | None
    connect_url: str | None
    generation: int = 0
    last_reload: dict[str, Any] | None = None
    components: list[Component] = field(default_factory=list)
    connect_config: str | None = None
    """With a Connect REST API on HTTPS or with basic authentication: the owner-only REST
    client properties file of its CA and login (:func:`sluice.connect_rest.load_rest_config`)."""


def state_path(home: Path) -> Path:
    """Where the state file of a supervisor whose home is ``home`` lives."""
    return home / STATE_FILE


def write(home: Path, state: UpState) -> None:
    """Replace the state file atomically."""
    path = state_path(home)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(asdict(state), indent=1), encoding="utf-8")
    temporary.replace(path)


def read(home: Path) -> UpState | None:
    """The state file of ``home``, checked; None if there is none.

    Raises :class:`StateFileError` naming the file when it cannot be read or is not what
    ``sluice up`` writes.
    """
    path = state_path(home)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise StateFileError(f"{path}: cannot read: {reason}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StateFileError(
            f"{path}:{exc.lineno}: not valid JSON ({exc.msg}); it is written by `sluice up`"
        ) from None
    try:
        return _state(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise StateFileError(
            f"{path}: not a state file of `sluice up` ({exc}); remove it if no `sluice up` runs"
        ) from None


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


def _state(data: Any) -> UpState:
    if not isinstance(data, dict):
        raise TypeError("expected a JSON object")
    components = data.get("components") or []
    if not isinstance(components, list):
        raise TypeError("components: expected a list")
    last_reload = data.get("last_reload")
    if last_reload is not None and not isinstance(last_reload, dict):
        raise TypeError("last_reload: expected an object")
    return UpState(
        pid=_int(data.get("pid"), "pid"),
        file=_str(data.get("file"), "file"),
        updated=_float(data.get("updated"), "updated"),
        bootstrap=_str(data.get("bootstrap"), "bootstrap"),
        connect_url=_str(data.get("connect_url"), "connect_url"),
        generation=_int(data.get("generation"), "generation") or 0,
        last_reload=last_reload,
        components=[_component(i, c) for i, c in enumerate(components)],
        connect_config=_str(data.get("connect_config"), "connect_config"),
    )


def _component(index: int, data: Any) -> Component:
    where = f"components[{index}]"
    if not isinstance(data, dict):
        raise TypeError(f"{where}: expected an object")
    command = data.get("command") or []
    if not isinstance(command, list) or not all(isinstance(part, str) for part in command):
        raise TypeError(f"{where}.command: expected a list of strings")

    def text(key: str) -> str | None:
        return _str(data.get(key), f"{where}.{key}")

    return Component(
        name=_str(data["name"], f"{where}.name") or "",
        kind=text("kind") or "process",
        app=text("app"),
        application_id=text("application_id"),
        pid=_int(data.get("pid"), f"{where}.pid"),
        state=text("state") or "unknown",
        restarts=_int(data.get("restarts"), f"{where}.restarts") or 0,
        since=_float(data.get("since"), f"{where}.since"),
        log=text("log"),
        command=list(command),
        restart=text("restart"),
        exit_code=_int(data.get("exit_code"), f"{where}.exit_code"),
        signal=text("signal"),
        exit=text("exit"),
        last_error=text("last_error"),
        failures=_int(data.get("failures"), f"{where}.failures") or 0,
        backoff=_float(data.get("backoff"), f"{where}.backoff"),
        next_start=_float(data.get("next_start"), f"{where}.next_start"),
        dead_letter_topic=text("dead_letter_topic"),
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
