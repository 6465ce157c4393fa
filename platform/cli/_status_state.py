"""``sluice up``'s state file as ``sluice status`` shows it: read by :mod:`sluice.up.state`
(which owns the format), with whether each process it names still lives."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from sluice.exit_codes import EXIT_USAGE, CliError
from sluice.up import state


@dataclass
class Component(state.Component):
    """A process the supervisor runs, as its state file last said, plus whether its pid lives."""

    alive: bool = False


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
    connect_config: str | None = None
    """The REST client properties (CA, login) of a worker with a secured REST API."""


def read_supervisor(home: Path) -> Supervisor | None:
    """``<home>/up.json`` read and checked; ``None`` if there is none. A file that is not what
    ``sluice up`` writes is a :class:`CliError` naming it."""
    try:
        found = state.read(home)
    except state.StateFileError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    if found is None:
        return None
    return Supervisor(
        state_file=str(state.state_path(home).resolve()),
        pid=found.pid,
        running=found.pid is not None and state.pid_alive(found.pid),
        file=found.file,
        updated=found.updated,
        bootstrap=found.bootstrap,
        connect_url=found.connect_url,
        connect_config=found.connect_config,
        components=[
            Component(**asdict(c), alive=c.pid is not None and state.pid_alive(c.pid))
            for c in found.components
        ],
    )
