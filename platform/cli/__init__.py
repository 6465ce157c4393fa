"""The ``sluice`` command line: Kafka's tools and ``rpk`` habits over confluent-kafka.

::

    sluice broker start [--config FILE] [--listen HOST:PORT] [--data-dir DIR]
    sluice cluster describe
    sluice leader-election --preferred|--unclean [TOPIC[:PARTITION]]...
    sluice topics create|list|describe|alter|delete …
    sluice produce TOPIC …
    sluice consume TOPIC …
    sluice groups list|describe|reset-offsets|delete …
    sluice transactions list|describe …
    sluice connect standalone FILE.yaml|DIR …
    sluice schema-registry start [--listen HOST:PORT]
    sluice schemas register|list|get|versions|delete|compat|config|mode …
    sluice rest-proxy start [--listen HOST:PORT] [--schema-registry URL]
    sluice up [-f sluice.yaml]
    sluice status [--json]

Every client command takes ``--bootstrap-server``/``-b`` (env ``SLUICE_BOOTSTRAP``, default
``localhost:9092``). Exit codes: 0 success, 1 the operation failed, 2 wrong usage or
configuration, 130 interrupted. The reference is ``docs/cli.md``.
"""

from __future__ import annotations

import logging
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated

import typer
from confluent_kafka import KafkaException

from sluice import clients
from sluice.cli import (
    acls,
    broker,
    brokers,
    cluster,
    connect,
    groups,
    partitions,
    quotas,
    rest_proxy,
    schema_registry,
    schemas,
    status,
    topics,
    transactions,
    users,
)
from sluice.cli._common import describe_error, error_of
from sluice.cli.consume import consume
from sluice.cli.leader_election import leader_election
from sluice.cli.produce import produce
from sluice.cli.up import up
from sluice.exit_codes import EXIT_FAILED, CliError

__all__ = ["app", "main"]

app = typer.Typer(
    name="sluice",
    help="Sluice: a Kafka-compatible streaming platform.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(broker.app, name="broker")
app.add_typer(cluster.app, name="cluster")
app.add_typer(brokers.app, name="brokers")
app.add_typer(topics.app, name="topics")
app.add_typer(partitions.app, name="partitions")
app.add_typer(groups.app, name="groups")
app.add_typer(transactions.app, name="transactions")
app.add_typer(users.app, name="users")
app.add_typer(acls.app, name="acls")
app.add_typer(quotas.app, name="quotas")
app.add_typer(connect.app, name="connect")
app.add_typer(rest_proxy.app, name="rest-proxy")
app.add_typer(schema_registry.app, name="schema-registry")
app.add_typer(schemas.app, name="schemas")
app.command()(produce)
app.command()(consume)
app.command()(up)
app.command()(status.status)
app.command(name="leader-election")(leader_election)


def _print_version(value: bool) -> None:
    if value:
        try:
            typer.echo(f"sluice {version('sluice')}")
        except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
            typer.echo("sluice (not installed)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Sluice: a Kafka-compatible streaming platform."""


def main() -> None:
    """The ``sluice`` executable."""
    _quiet_rdkafka()
    try:
        app()
    except CliError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    except KafkaException as exc:  # a client error no command foresaw: still no traceback
        error = error_of(exc)
        typer.echo(f"error: {describe_error(error) if error else exc}", err=True)
        sys.exit(EXIT_FAILED)


def _quiet_rdkafka() -> None:
    """librdkafka's own log lines (retries, reconnects) are noise on a terminal: the commands
    report what matters themselves. ``SLUICE_DEBUG=1`` shows them."""
    logger = clients.RDKAFKA_LOGGER
    if os.environ.get("SLUICE_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, format="%(name)s: %(message)s")
    else:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
