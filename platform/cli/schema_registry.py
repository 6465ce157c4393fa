"""``sluice schema-registry start``: run a schema registry with Confluent's REST API.

::

    sluice schema-registry start [--listen HOST:PORT] [-b HOST:PORT] [--command-config FILE]
                                 [-X KEY=VALUE] [--advertised-url URL] [--group-id GROUP]
                                 [--topic TOPIC] [--ssl-keystore FILE [--ssl-truststore FILE]
                                 [--ssl-client-auth MODE]] [--jaas-config FILE [--auth-realm R]]

The registry keeps its schemas in the compacted topic ``--topic`` (``_schemas``, created when
missing) and serves Confluent Schema Registry's REST API v1 on ``--listen``; several instances
with the same ``--group-id`` and topic elect one writer and forward writes to it
(:mod:`sluice.schema_registry`). It runs until Ctrl-C or SIGTERM.

``--ssl-keystore`` serves HTTPS, ``--jaas-config`` asks for HTTP basic authentication (the
users of the JAAS file's ``SchemaRegistry`` section): Confluent's ``listeners=https://…``,
``ssl.*`` and ``authentication.method=BASIC`` (:mod:`sluice.cli._http_security_options`).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Annotated

import typer

from sluice import clients
from sluice.cli._common import (
    Bootstrap,
    ClientConfig,
    CommandConfig,
    client_properties,
    parse_pairs,
)
from sluice.cli._http_security_options import (
    AuthRealm,
    JaasConfig,
    SslCipherSuites,
    SslClientAuth,
    SslKeystore,
    SslTruststore,
    http_security,
)
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_USAGE, CliError
from sluice.metrics import parse_listen

__all__ = ["app"]

app = typer.Typer(
    help="Run a schema registry (Confluent Schema Registry's REST API).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


@app.command()
def start(
    *,
    listen: Annotated[
        str,
        typer.Option(
            "--listen",
            metavar="HOST:PORT",
            help="Serve the REST API there (Confluent's `listeners`).",
        ),
    ] = "127.0.0.1:8081",
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    command_config: CommandConfig = None,
    client_config: ClientConfig = None,
    advertised_url: Annotated[
        str | None,
        typer.Option(
            "--advertised-url",
            metavar="URL",
            help="The URL other instances forward writes to (default: http://HOST:PORT of "
            "--listen; this host's name when HOST is 0.0.0.0).",
        ),
    ] = None,
    group_id: Annotated[
        str,
        typer.Option(
            "--group-id",
            metavar="GROUP",
            help="The consumer group that elects the instance that writes.",
        ),
    ] = "schema-registry",
    topic: Annotated[
        str,
        typer.Option("--topic", metavar="TOPIC", help="Where the schemas are kept (compacted)."),
    ] = "_schemas",
    ssl_keystore: SslKeystore = None,
    ssl_truststore: SslTruststore = None,
    ssl_client_auth: SslClientAuth = "none",
    ssl_cipher_suites: SslCipherSuites = None,
    jaas_config: JaasConfig = None,
    auth_realm: AuthRealm = None,
    log_level: Annotated[
        str, typer.Option("--log-level", envvar="SLUICE_LOG_LEVEL", metavar="LEVEL")
    ] = "INFO",
) -> None:
    """Run a schema registry until interrupted (Confluent's `schema-registry-start`).

    Example: `sluice schema-registry start --listen 127.0.0.1:8081 -b localhost:9092`
    """
    from sluice.schema_registry.kafka_store import StoreStartError
    from sluice.schema_registry.service import REALM, RegistrySettings
    from sluice.schema_registry.service import start as start_registry

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        address = parse_listen(listen, key="--listen")
    except ConfigError as error:
        raise typer.BadParameter(error.reason, param_hint="--listen") from None
    if advertised_url is not None and not advertised_url.startswith(("http://", "https://")):
        raise typer.BadParameter("expected http://HOST:PORT", param_hint="--advertised-url")
    security = http_security(
        ssl_keystore,
        ssl_truststore,
        ssl_client_auth,
        jaas_config,
        auth_realm or REALM,
        ssl_cipher_suites,
    )
    settings = RegistrySettings(
        listen=address,
        bootstrap=bootstrap,
        advertised_url=advertised_url.rstrip("/") if advertised_url else None,
        group_id=group_id,
        topic=topic,
        client_config=parse_pairs(client_properties(client_config, command_config), "-X"),
        security=security,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        running = start_registry(settings)
    except StoreStartError as error:
        raise CliError(f"cannot start the schema registry: {error}") from None
    except OSError as error:
        raise CliError(
            f"--listen {listen}: {error.strerror or error}", exit_code=EXIT_USAGE
        ) from None
    logging.getLogger("sluice.schema_registry").info(
        "schema registry ready on %s (advertised as %s)", running.url, running.election.url
    )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        running.stop()
