"""``sluice connect``: run a Connect worker with connectors deployed from YAML.

::

    sluice connect standalone connectors.yaml [-b HOST:PORT] [--offsets FILE]

The standalone worker (Kafka's ``connect-standalone``) runs every connector of the file (or of
every ``*.yaml`` in a directory) in this process, keeps source offsets in a local file, and
stops cleanly — committing what was delivered — on Ctrl-C or SIGTERM. A bad file is refused as
a whole, each problem named at ``file:line: key``, and nothing starts.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from sluice import clients
from sluice.cli._common import EXIT_USAGE, Bootstrap, ClientConfig, CliError, parse_pairs
from sluice.errors import ConfigError

__all__ = ["app"]

app = typer.Typer(
    help="Run Connect workers; deploy connectors from YAML.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


@app.command()
def standalone(
    path: Annotated[Path, typer.Argument(metavar="FILE|DIR", help="Connectors to run (YAML).")],
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    offsets: Annotated[
        Path,
        typer.Option("--offsets", metavar="FILE", help="Where source offsets are kept."),
    ] = Path(".sluice/connect.offsets"),
    worker_config: ClientConfig = None,
    log_level: Annotated[
        str, typer.Option("--log-level", envvar="SLUICE_LOG_LEVEL", metavar="LEVEL")
    ] = "INFO",
) -> None:
    """Run the connectors of FILE (or of every YAML file in DIR) until interrupted.

    `-X KEY=VALUE` sets worker properties under Kafka Connect's names
    (`value.converter=json`, `offset.flush.interval.ms=1000`, `producer.linger.ms=20`…).
    Example: `sluice connect standalone examples/connect/files.yaml`
    """
    from sluice.connect.deploy import DeploymentError, load, resolve_class
    from sluice.connect.offsets import FileOffsetStore
    from sluice.connect.plugins import connector_class, known_plugins
    from sluice.connect.worker import Worker

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        specs = load(path)
        known = known_plugins()
        problems: list[ConfigError] = []
        for spec in specs:
            try:
                resolve_class(spec, connector_class, known=known)
            except DeploymentError as error:
                problems.extend(error.problems)
        if problems:
            raise CliError("\n".join(str(p) for p in problems), exit_code=EXIT_USAGE)
        settings = {"bootstrap.servers": bootstrap, **parse_pairs(worker_config, "-X")}
        worker = Worker(settings, FileOffsetStore(offsets))
    except (ConfigError, OSError) as error:
        raise CliError(str(error), exit_code=EXIT_USAGE) from None
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        for spec in specs:
            worker.start_connector(spec.name, spec.config, spec.state.upper())
        logging.getLogger("sluice.connect").info(
            "standalone worker running %d connectors", len(specs)
        )
        while not stop.wait(0.5):
            pass
    finally:
        worker.stop()
