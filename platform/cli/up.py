"""``sluice up [-f sluice.yaml]``: run the whole platform a YAML file declares.

The file is read and checked whole first (connectors against their classes too): any problem
is printed at ``file:line: key:`` and nothing starts. Then the broker, topics, Connect worker,
connectors, Streams apps and processes start in order, each child logging to
``<home>/logs/<name>.log``; the supervisor says how a child ended (its exit code or signal and
the last error line of its log), starts it again as its ``restart:`` policy says (with backoff;
a crash loop is shown as ``crash-loop``) and stops everything in order on Ctrl-C or SIGTERM.
Run again with an edited file while it runs, and the running one reconciles (only what changed
restarts; a cluster's brokers one at a time: a rolling restart, also asked for with
``--rolling-restart``).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from sluice.cli._common import DEFAULT_HOME, Home
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from collections.abc import Callable

    from sluice.up import Deployment
    from sluice.up.state import UpState

__all__ = ["up"]

_RELOAD_TIMEOUT = 1800.0  # a rolling restart waits for each broker to catch up


def up(
    file: Annotated[
        Path, typer.Option("--file", "-f", metavar="FILE", help="The deployment (YAML).")
    ] = Path("sluice.yaml"),
    *,
    rolling_restart: Annotated[
        bool,
        typer.Option(
            "--rolling-restart",
            help="Ask the running `sluice up` to restart the cluster's brokers one at a time.",
        ),
    ] = False,
    home: Home = DEFAULT_HOME,
    secure: Annotated[
        bool,
        typer.Option(
            "--secure",
            help="Run it on SASL_SSL: a generated CA and certificate, SCRAM users per "
            "component and their ACLs (in HOME/secure/).",
        ),
    ] = False,
) -> None:
    """Start everything FILE declares and supervise it until Ctrl-C.

    Example: `sluice up -f examples/quickstart/sluice.yaml`. Logs: `.sluice/logs/`; state:
    `.sluice/up.json` (what `sluice status` reads).
    """
    from sluice.up import Supervisor

    deployment = _checked(file)
    transform: Callable[[Deployment], Deployment] | None = None
    if secure:
        from sluice.up.secure import secure_deployment

        transform = functools.partial(secure_deployment, home=home)
        try:
            deployment = transform(deployment)
        except ConfigError as error:
            raise CliError(f"--secure: {error}", exit_code=EXIT_USAGE) from None
    running = _running_supervisor(home)
    if rolling_restart and running is None:
        raise CliError(
            f"no sluice up is running with home {home}: --rolling-restart asks a running one",
            exit_code=EXIT_USAGE,
        )
    if running is not None:
        _ask_reload(home, running, file, rolling_restart)
        return
    console = Console(stderr=False)
    if console.is_terminal:
        with Live(console=console, auto_refresh=False, transient=False) as live:

            def report(line: str) -> None:
                live.console.print(line, markup=False, highlight=False)

            def tick(supervisor: Supervisor) -> None:
                live.update(_table(supervisor.state()), refresh=True)

            code = Supervisor(deployment, home, report, transform).run(on_tick=tick)
    else:

        def report(line: str) -> None:
            print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)

        code = Supervisor(deployment, home, report, transform).run()
    if code:
        raise typer.Exit(code)


def _checked(file: Path) -> Deployment:
    """The deployment; any problem is an error (exit 2) listing them all."""
    from sluice.connect.deploy import DeploymentError
    from sluice.up import load

    try:
        return load(file)
    except DeploymentError as error:
        raise CliError(str(error), exit_code=EXIT_USAGE) from None


def _running_supervisor(home: Path) -> int | None:
    """The pid of the ``sluice up`` that owns ``home``, if one runs."""
    from sluice.up import state

    try:
        found = state.read(home)
        if found is None or found.pid is None:
            return None
        pid = found.pid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, state.StateFileError):
        return None
    return pid if b"up" in cmdline.split(b"\0") and pid != os.getpid() else None


def _ask_reload(home: Path, pid: int, file: Path, rolling_restart: bool = False) -> None:
    """Have the running supervisor re-read ``file`` (and restart the brokers one at a time,
    with ``rolling_restart``); print what it answered."""
    import signal

    from sluice.up import RELOAD_FILE, state

    request = uuid.uuid4().hex
    body = {"file": str(file.absolute()), "id": request, "rolling_restart": rolling_restart}
    (home / RELOAD_FILE).write_text(json.dumps(body), encoding="utf-8")
    os.kill(pid, signal.SIGHUP)
    print(f"sluice up is running (pid {pid}): asked it to apply {file}", file=sys.stderr)
    deadline = time.monotonic() + _RELOAD_TIMEOUT
    while time.monotonic() < deadline:
        time.sleep(0.3)
        try:
            found = state.read(home)
        except state.StateFileError:
            continue
        outcome = (found.last_reload if found is not None else None) or {}
        if outcome.get("id") == request:
            if outcome["ok"]:
                print("applied", file=sys.stderr)
                return
            raise CliError(f"not applied: {outcome['message']}", exit_code=EXIT_FAILED)
    raise CliError(f"sluice up (pid {pid}) did not answer in {_RELOAD_TIMEOUT:.0f} s")


def _table(state: UpState) -> Table:
    table = Table(title=f"sluice up: {state.file}", title_justify="left")
    columns = ("component", "kind", "state", "pid", "restarts", "up for", "last exit", "log")
    for column in columns:
        table.add_column(column)
    now = time.time()
    for child in state.components:
        running = child.pid is not None and child.since is not None
        shown = child.state
        if child.backoff:
            shown += f", back-off {child.backoff:.0f} s"
        if child.next_start is not None:
            shown += f", next start in {max(0.0, child.next_start - now):.0f} s"
        last = child.exit or ""
        if child.last_error:
            last += f": {child.last_error}"
        table.add_row(
            child.name,
            child.kind,
            shown,
            str(child.pid or ""),
            str(child.restarts),
            f"{now - child.since:.0f} s" if running and child.since is not None else "",
            last,
            os.path.relpath(child.log) if child.log else "",
        )
    return table
