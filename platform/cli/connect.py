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
    rest: Annotated[
        str,
        typer.Option(
            "--rest",
            metavar="HOST:PORT",
            help="Serve Kafka Connect's REST API there ('' for none).",
        ),
    ] = "127.0.0.1:8083",
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
    from sluice.connect.herder import Herder, HerderError
    from sluice.connect.offsets import FileOffsetStore
    from sluice.connect.plugins import connector_class, known_plugins
    from sluice.connect.rest import serve
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
    herder = Herder(worker)
    server = None
    try:
        if rest:
            host, _, port = rest.rpartition(":")
            try:
                server = serve(herder, host or "127.0.0.1", int(port))
            except (OSError, ValueError) as error:
                raise CliError(f"cannot serve the REST API on {rest!r}: {error}") from None
        for spec in specs:
            try:
                herder.create_connector(
                    spec.name, spec.config, spec.state.upper(), secrets=spec.secret_keys
                )
            except HerderError as error:
                raise CliError(f"{spec.where('name')}: {spec.name}: {error}") from None
        logging.getLogger("sluice.connect").info(
            "standalone worker running %d connectors%s",
            len(specs),
            f", REST API on {server.url}" if server is not None else "",
        )
        while not stop.wait(0.5):
            pass
    finally:
        if server is not None:
            server.stop()
        worker.stop()


@app.command()
def status(
    name: Annotated[str | None, typer.Argument(help="One connector (default: all).")] = None,
    *,
    url: Annotated[
        str,
        typer.Option("--url", envvar="SLUICE_CONNECT_URL", help="A worker's REST API."),
    ] = "http://127.0.0.1:8083",
) -> None:
    """Print connectors, their tasks, states and worker ids (through the REST API)."""
    import json
    import urllib.error
    import urllib.request

    from sluice.cli._common import print_table

    def get(path: str) -> object:
        try:
            with urllib.request.urlopen(f"{url.rstrip('/')}{path}", timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
            raise CliError(f"{error.code}: {body.get('message', error.reason)}") from None
        except (urllib.error.URLError, OSError) as error:
            raise CliError(f"cannot reach the Connect worker at {url}: {error}") from None

    names = [name] if name else list(get("/connectors"))  # type: ignore[call-overload]
    rows = []
    for connector in sorted(names):
        body = get(f"/connectors/{connector}/status")
        assert isinstance(body, dict)
        state = body["connector"]
        rows.append([connector, "connector", state["state"], state["worker_id"], body["type"]])
        for task in body["tasks"]:
            rows.append([connector, f"task {task['id']}", task["state"], task["worker_id"], ""])
    print_table(["connector", "what", "state", "worker", "type"], rows)
