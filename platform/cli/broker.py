"""``sluice broker start``: run the Kafka-protocol broker in the foreground."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from sluice.broker.config import BrokerConfig, parse_listener
from sluice.errors import ConfigError, StorageError
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError
from sluice.metrics import parse_listen

app = typer.Typer(help="Run a broker.", no_args_is_help=True, rich_markup_mode="markdown")


@app.command()
def start(
    *,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            "-c",
            metavar="FILE",
            help="A server.properties file (Kafka's keys).",
        ),
    ] = None,
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            metavar="HOST:PORT",
            help="Address to accept clients on (overrides listeners): a PLAINTEXT listener, "
            "or PROTOCOL://HOST:PORT (SASL_SSL://…) for one of that protocol.",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            metavar="DIR",
            help="Directory of the log, or several comma-separated (JBOD: log.dirs); "
            "overrides log.dir and log.dirs.",
        ),
    ] = None,
    broker_id: Annotated[
        int | None,
        typer.Option(
            "--broker-id",
            metavar="N",
            min=0,
            help="This broker's id in the cluster (overrides broker.id and node.id).",
        ),
    ] = None,
    zookeeper: Annotated[
        str | None,
        typer.Option(
            "--zookeeper",
            metavar="HOST:PORT[/CHROOT]",
            help="Join the cluster coordinated by this ZooKeeper (overrides zookeeper.connect; "
            "without it the broker runs as one node).",
        ),
    ] = None,
    log_level: Annotated[
        str,
        typer.Option(
            "--log-level",
            envvar="SLUICE_LOG_LEVEL",
            metavar="LEVEL",
            help="DEBUG, INFO, WARNING or ERROR.",
        ),
    ] = "INFO",
    metrics_listen: Annotated[
        str | None,
        typer.Option(
            "--metrics-listen",
            metavar="HOST:PORT",
            help="Serve Prometheus metrics at http://HOST:PORT/metrics (default: off).",
        ),
    ] = None,
) -> None:
    """Start a broker in the foreground.

    Ctrl-C or SIGTERM stop it cleanly. Example:
    `sluice broker start --listen 127.0.0.1:9092 --data-dir .sluice/data`; in a cluster:
    `sluice broker start --broker-id 1 --zookeeper 127.0.0.1:2181/sluice --listen
    127.0.0.1:9092 --data-dir .sluice/broker-1`
    """
    level = logging.getLevelName(log_level.upper())
    if not isinstance(level, int):
        raise typer.BadParameter(f"unknown level {log_level!r}", param_hint="--log-level")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides: dict[str, str] = {}
    if listen is not None:
        try:
            parse_listener(listen)
        except ConfigError:
            raise typer.BadParameter(
                f"expected HOST:PORT, got {listen!r}", param_hint="--listen"
            ) from None
        overrides["listeners"] = listen if "://" in listen else f"PLAINTEXT://{listen}"
    if metrics_listen is not None:
        try:
            parse_listen(metrics_listen)
        except ConfigError as error:
            raise typer.BadParameter(error.reason, param_hint="--metrics-listen") from None
    try:
        if broker_id is not None:
            overrides["broker.id"] = overrides["node.id"] = str(broker_id)
        if zookeeper is not None:
            overrides["zookeeper.connect"] = zookeeper
        if data_dir is not None:
            overrides["log.dir"] = overrides["log.dirs"] = str(data_dir)
        broker_config = BrokerConfig.load(config, overrides)
        from sluice.broker.app import serve

        serve(broker_config, metrics_listen=metrics_listen)
    except ConfigError as exc:
        raise CliError(str(exc), exit_code=EXIT_USAGE) from None
    except StorageError as exc:  # a log directory that cannot be used (docs/broker.md)
        raise CliError(str(exc), exit_code=EXIT_FAILED) from None
