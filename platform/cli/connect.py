"""``sluice connect``: run a Connect worker with connectors deployed from YAML.

::

    sluice connect standalone connectors.yaml [-b HOST:PORT] [--offsets FILE] [--rest HOST:PORT]
    sluice connect start [--group G] [-b HOST:PORT] [--rest HOST:PORT]
    sluice connect apply connectors.yaml|DIR [--url URL] [--prune] [--watch] [REST OPTIONS]
    sluice connect status [NAME] [--url URL] [REST OPTIONS]

REST OPTIONS reach a worker whose REST API is on HTTPS with basic authentication:
``--rest-ca-file FILE``, ``--rest-user USER``, ``--rest-password-file FILE`` (or
``$SLUICE_CONNECT_PASSWORD``, or a prompt), ``--rest-config FILE``
(:mod:`sluice.cli._rest_options`).

The standalone worker (Kafka's ``connect-standalone``) runs every connector of the file (or of
every ``*.yaml`` in a directory) in this process, keeps source offsets in a local file, and
stops cleanly — committing what was delivered — on Ctrl-C or SIGTERM. A bad file is refused as
a whole, each problem named at ``file:line: key``, and nothing starts. A distributed worker
(Kafka's ``connect-distributed``) joins a group of workers that share the connectors deployed
to any of them (:mod:`sluice.connect.runtime.distributed`).
"""

from __future__ import annotations

import gc
import logging
import signal
import socket
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from sluice import clients
from sluice.cli._common import Bootstrap, ClientConfig, parse_pairs, stderr
from sluice.cli._rest_options import (
    RestCaFile,
    RestConfig,
    RestPasswordFile,
    RestUser,
    rest_client_security,
)
from sluice.client_properties import read_entries
from sluice.connect_rest import ConnectRest, apply_when_ready
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_USAGE, CliError
from sluice.metrics import LISTEN_OPTION, parse_listen, serve_metrics

if TYPE_CHECKING:
    from collections.abc import Callable

    from prometheus_client import CollectorRegistry

    from sluice.connect.rest import RestServer
    from sluice.connect.rest_security import RestSecurity
    from sluice.connect.runtime.herder import Herder
    from sluice.connect.runtime.task_runner import TaskRunner

__all__ = ["app"]

MetricsListen = Annotated[
    str | None,
    typer.Option(
        LISTEN_OPTION,
        metavar="HOST:PORT",
        help="Serve Prometheus metrics at http://HOST:PORT/metrics (default: off).",
    ),
]

WorkerConfig = Annotated[
    Path | None,
    typer.Option(
        "--worker-config",
        metavar="FILE",
        help="Worker properties (Kafka Connect's worker .properties file: security, "
        "listeners, converters…); -X wins over it.",
    ),
]


def _worker_settings(bootstrap: str, path: Path | None, pairs: list[str] | None) -> dict[str, str]:
    """``bootstrap.servers``, then the worker file's settings, then ``-X``'s."""
    settings = {"bootstrap.servers": bootstrap}
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise CliError(f"--worker-config: cannot read {path}: {error.strerror}",
                           exit_code=EXIT_USAGE) from None  # fmt: skip
        settings.update({key: value for _, key, value in read_entries(text)})
    settings.update(parse_pairs(pairs, "-X"))
    return settings


def _rest_security(settings: dict[str, str], rest: str) -> tuple[str, RestSecurity]:
    """The REST API's address (``listeners`` wins over ``--rest``) and security."""
    from sluice.connect.rest_security import rest_security

    try:
        security = rest_security(settings)
    except ConfigError as error:
        raise CliError(f"cannot start the worker: {error}", exit_code=EXIT_USAGE) from None
    return security.listen or rest, security


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
    worker_file: WorkerConfig = None,
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
    metrics_listen: MetricsListen = None,
) -> None:
    """Run the connectors of FILE (or of every YAML file in DIR) until interrupted.

    `-X KEY=VALUE` sets worker properties under Kafka Connect's names
    (`value.converter=json`, `offset.flush.interval.ms=1000`, `producer.linger.ms=20`…).
    Example: `sluice connect standalone examples/connect/files.yaml`
    """
    from sluice.connect.deploy import DeploymentError, load, resolve_class
    from sluice.connect.runtime.herder import Herder, HerderError
    from sluice.connect.runtime.metrics import worker_registry
    from sluice.connect.runtime.offsets import FileOffsetStore
    from sluice.connect.runtime.plugins import connector_class, known_plugins
    from sluice.connect.runtime.standalone import standalone_worker

    _log_to_stderr(log_level)
    _check_listen(metrics_listen)
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
        settings = _worker_settings(bootstrap, worker_file, worker_config)
        rest, security = _rest_security(settings, rest)
        runtime = standalone_worker(settings, FileOffsetStore(offsets))
    except (ConfigError, OSError) as error:
        raise CliError(str(error), exit_code=EXIT_USAGE) from None
    herder = Herder(runtime)
    worker = runtime.worker

    def deploy(server: RestServer | None) -> None:
        # Kafka Connect's worker id is its REST address: host:port
        runtime.start(worker.worker_id if server is None else _worker_id(server.host, server.port))
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

    def tasks() -> list[TaskRunner]:
        return list(worker.tasks.values())

    metrics = None
    if metrics_listen:
        metrics = (metrics_listen, worker_registry(lambda: list(worker.connectors), tasks))
    try:
        _serve_until_signal(herder, rest, deploy, metrics, security)
    finally:
        runtime.stop()


@app.command()
def start(
    *,
    group: Annotated[
        str, typer.Option("--group", "-g", metavar="GROUP", help="The Connect group to join.")
    ] = "connect-cluster",
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    worker_config: ClientConfig = None,
    worker_file: WorkerConfig = None,
    rest: Annotated[
        str,
        typer.Option("--rest", metavar="HOST:PORT", help="Serve Kafka Connect's REST API there."),
    ] = "127.0.0.1:8083",
    log_level: Annotated[
        str, typer.Option("--log-level", envvar="SLUICE_LOG_LEVEL", metavar="LEVEL")
    ] = "INFO",
    metrics_listen: MetricsListen = None,
) -> None:
    """Run a distributed worker of GROUP until interrupted (Kafka's `connect-distributed`).

    The workers of a group share connectors and tasks through the broker: configs in
    `connect-configs`, source offsets in `connect-offsets`, states in `connect-status`. Deploy
    connectors with `sluice connect apply` or the REST API of any worker. `-X KEY=VALUE` sets
    worker properties under Kafka Connect's names (`session.timeout.ms=10000`,
    `config.storage.topic=…`, `value.converter=json`…).
    Example: `sluice connect start --group etl --rest 127.0.0.1:8083`
    """
    from sluice.connect.api.errors import ConnectError
    from sluice.connect.runtime.distributed import cluster_worker
    from sluice.connect.runtime.herder import Herder
    from sluice.connect.runtime.metrics import worker_registry

    _log_to_stderr(log_level)
    _check_listen(metrics_listen)
    settings = _worker_settings(bootstrap, worker_file, worker_config)
    settings["group.id"] = group
    rest, security = _rest_security(settings, rest)
    try:
        cluster = cluster_worker(settings)
    except (ConfigError, ConnectError, ValueError) as error:
        raise CliError(f"cannot start the worker: {error}", exit_code=EXIT_USAGE) from None
    if not rest:
        raise CliError("a distributed worker needs its REST API (--rest HOST:PORT)")

    def join(server: RestServer | None) -> None:
        assert server is not None
        cluster.start(_worker_id(server.host, server.port))
        logging.getLogger("sluice.connect").info(
            "worker %s:%d of group %s, REST API on %s", server.host, server.port, group, server.url
        )

    metrics = None
    if metrics_listen:
        registry = worker_registry(
            lambda: list(cluster.connectors), lambda: list(cluster.tasks.values())
        )
        metrics = (metrics_listen, registry)
    try:
        _serve_until_signal(Herder(cluster), rest, join, metrics, security)
    finally:
        cluster.stop()


def _worker_id(host: str, port: int) -> str:
    """A worker's id from the address its REST API listens on, as Kafka Connect derives it
    from the advertised listener: ``host:port``, with the machine's name for a wildcard host.

    >>> _worker_id("127.0.0.1", 8084)
    '127.0.0.1:8084'
    >>> _worker_id("0.0.0.0", 8083) == f"{socket.gethostname()}:8083"
    True
    """
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    return f"{host}:{port}"


def _log_to_stderr(level: str) -> None:
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def _check_listen(metrics_listen: str | None) -> None:
    if metrics_listen:
        try:
            parse_listen(metrics_listen)
        except ConfigError as error:
            raise typer.BadParameter(error.reason, param_hint=LISTEN_OPTION) from None


def _serve_until_signal(
    herder: Herder,
    rest: str,
    started: Callable[[RestServer | None], None],
    metrics: tuple[str, CollectorRegistry] | None = None,
    security: RestSecurity | None = None,
) -> None:
    """Serve the REST API on ``rest`` ('' for none, with ``security``) and ``metrics``
    (address, registry) if given, call ``started``, run until a signal."""
    from sluice.connect.rest import serve

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    server = None
    exporter = None
    try:
        if metrics is not None:
            try:
                exporter = serve_metrics(*metrics)
            except ConfigError as error:
                raise CliError(str(error), exit_code=EXIT_USAGE) from None
        if rest:
            host, _, port = rest.rpartition(":")
            try:
                server = serve(herder, host or "127.0.0.1", int(port), security=security)
            except (OSError, ValueError) as error:
                raise CliError(f"cannot serve the REST API on {rest!r}: {error}") from None
        started(server)
        # What the start made (modules, plugins, clients) lives as long as the worker: out of
        # the collector's sight, so that its full collections scan only what the tasks make
        # (a CDC task spent ~17 % of its time in them, at 5,000 changes/s).
        gc.freeze()
        while not stop.wait(0.5):
            pass
    finally:
        if server is not None:
            server.stop()
        if exporter is not None:
            exporter.close()


@app.command()
def status(
    name: Annotated[str | None, typer.Argument(help="One connector (default: all).")] = None,
    *,
    url: Annotated[
        str,
        typer.Option("--url", envvar="SLUICE_CONNECT_URL", help="A worker's REST API."),
    ] = "http://127.0.0.1:8083",
    rest_ca_file: RestCaFile = None,
    rest_user: RestUser = None,
    rest_password_file: RestPasswordFile = None,
    rest_config: RestConfig = None,
) -> None:
    """Print connectors, their tasks, states and worker ids (through the REST API)."""
    from sluice.cli._common import print_table

    security = rest_client_security(rest_ca_file, rest_user, rest_password_file, rest_config)
    rest = ConnectRest(url, security=security)
    get = rest.get
    names = [name] if name else list(get("/connectors"))
    rows = []
    warnings = []
    for connector in sorted(names):
        body = get(f"/connectors/{connector}/status")
        assert isinstance(body, dict)
        state = body["connector"]
        kind = body.get("type") or "-"
        rows.append([connector, "-", kind, state["state"], state["worker_id"] or "-"])
        for task in body["tasks"]:
            rows.append([connector, task["id"], "", task["state"], task["worker_id"] or "-"])
            warnings += [f"{connector}-{task['id']}: {w}" for w in task.get("warnings", [])]
    print_table(["CONNECTOR", "TASK", "TYPE", "STATE", "WORKER"], rows)
    for warning in warnings:
        typer.echo(f"warning: {warning}")


@app.command()
def apply(
    path: Annotated[Path, typer.Argument(metavar="FILE|DIR", help="Connectors (YAML).")],
    *,
    url: Annotated[
        str,
        typer.Option("--url", envvar="SLUICE_CONNECT_URL", help="A worker's REST API."),
    ] = "http://127.0.0.1:8083",
    prune: Annotated[
        bool, typer.Option("--prune", help="Delete running connectors no file declares.")
    ] = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Apply again whenever a file changes.")
    ] = False,
    rest_ca_file: RestCaFile = None,
    rest_user: RestUser = None,
    rest_password_file: RestPasswordFile = None,
    rest_config: RestConfig = None,
) -> None:
    """Make the worker run exactly the connectors of FILE (or of every YAML file in DIR).

    New connectors are created, changed ones updated, `state:` applied (running, paused,
    stopped); with `--prune`, connectors no file declares are deleted. Every file is checked
    first (locally and by the worker's validation): with any problem, nothing changes.
    A REST API on HTTPS with basic authentication: `--rest-ca-file`, `--rest-user` and the
    password from `--rest-password-file`, `$SLUICE_CONNECT_PASSWORD` or a prompt.
    """
    security = rest_client_security(rest_ca_file, rest_user, rest_password_file, rest_config)
    rest = ConnectRest(url, security=security)
    _apply_once(rest, path, prune)
    if not watch:
        return
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    changed = threading.Event()

    class _Changed(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            # reading the files (opened, closed_no_write) must not trigger another apply
            if event.event_type not in ("created", "modified", "moved", "deleted", "closed"):
                return
            names = [str(event.src_path), str(getattr(event, "dest_path", "") or "")]
            if any(
                n.endswith((".yaml", ".yml")) and not Path(n).name.startswith(".") for n in names
            ):
                changed.set()

    observer = Observer()
    folder = path if path.is_dir() else path.parent
    observer.schedule(_Changed(), str(folder), recursive=False)
    observer.start()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stderr.print(f"watching {folder} for changes (Ctrl-C stops)")
    try:
        while not stop.wait(0.3):
            if changed.is_set():
                time.sleep(0.3)  # let an editor finish writing
                changed.clear()
                try:
                    _apply_once(rest, path, prune)
                except CliError as error:  # keep watching: the next save may fix it
                    stderr.print(f"error: {error.message}", markup=False)
    finally:
        observer.stop()
        observer.join(5)


def _apply_once(rest: ConnectRest, path: Path, prune: bool) -> None:
    from sluice.connect.deploy import DeploymentError, load

    try:
        specs = load(path, resolve=False)  # the worker resolves placeholders
    except (DeploymentError, OSError) as error:
        raise CliError(str(error), exit_code=EXIT_USAGE) from None

    def report(line: str) -> None:
        stderr.print(line, markup=False)

    # a worker that is (re)joining its group answers 409 for a moment: wait that out
    apply_when_ready(rest, specs, prune=prune, report=report, wait=rest.timeout)
