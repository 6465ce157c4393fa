"""``sluice rest-proxy start``: serve Confluent REST Proxy's API (v3, and v2's consumers) in
the foreground.

::

    sluice rest-proxy start [--listen HOST:PORT] [-b BOOTSTRAP] [--schema-registry URL]
                            [--schema-registry-config FILE] [--command-config FILE]
                            [-X KEY=VALUE]… [--ssl-keystore FILE [--ssl-truststore FILE]
                            [--ssl-client-auth MODE]] [--jaas-config FILE [--auth-realm R]]
                            [--workers N]

Its Kafka clients take their security as every client command's do: ``--command-config``'s
Java client properties (translated), then ``-X``'s librdkafka properties. It stops cleanly on
Ctrl-C or SIGTERM: requests under way finish, consumer instances leave their groups, and what
the shared producer holds is delivered. ``--workers N`` serves the address from N processes
(:mod:`sluice.rest_proxy.workers`).

``--ssl-keystore`` serves HTTPS, ``--jaas-config`` asks for HTTP basic authentication (the
users of the JAAS file's ``KafkaRest`` section): Confluent REST Proxy's ``listeners=https://…``,
``ssl.*`` and ``authentication.method=BASIC``. The proxy reaches a secured Schema Registry with
``--schema-registry-config`` (``basic.auth.user.info``, ``ssl.ca.location``, …).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import Annotated

import typer
from confluent_kafka import KafkaException

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
    RegistryConfig,
    SslCipherSuites,
    SslClientAuth,
    SslKeystore,
    SslTruststore,
    http_security,
    registry_settings,
)
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_USAGE, CliError

__all__ = ["app"]

app = typer.Typer(
    help="Run the HTTP proxy (Confluent REST Proxy's API).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


def _address(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (IPv6 in brackets) as a host and a port.

    >>> _address("0.0.0.0:8082"), _address("[::1]:80")
    (('0.0.0.0', 8082), ('::1', 80))
    """
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise typer.BadParameter(f"expected HOST:PORT, got {listen!r}", param_hint="--listen")
    return host.strip("[]") or "127.0.0.1", int(port)


@app.command()
def start(
    *,
    listen: Annotated[
        str,
        typer.Option("--listen", metavar="HOST:PORT", help="Where to serve the HTTP API."),
    ] = "127.0.0.1:8082",
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    schema_registry: Annotated[
        str | None,
        typer.Option(
            "--schema-registry",
            envvar="SLUICE_SCHEMA_REGISTRY_URL",
            metavar="URL",
            help="The Schema Registry for AVRO, JSONSCHEMA and PROTOBUF keys and values.",
        ),
    ] = None,
    schema_registry_config: RegistryConfig = None,
    command_config: CommandConfig = None,
    client_config: ClientConfig = None,
    instance_timeout_ms: Annotated[
        int,
        typer.Option(
            "--consumer-instance-timeout-ms",
            min=1000,
            metavar="MS",
            help="Close a v2 consumer instance idle this long (Confluent's "
            "consumer.instance.timeout.ms).",
        ),
    ] = 300_000,
    ssl_keystore: SslKeystore = None,
    ssl_truststore: SslTruststore = None,
    ssl_client_auth: SslClientAuth = "none",
    ssl_cipher_suites: SslCipherSuites = None,
    jaas_config: JaasConfig = None,
    auth_realm: AuthRealm = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            metavar="N",
            help="Serve the address from N processes (produce scales with them; a v2 consumer "
            "instance stays in the process that created it).",
        ),
    ] = 1,
    log_level: Annotated[
        str, typer.Option("--log-level", envvar="SLUICE_LOG_LEVEL", metavar="LEVEL")
    ] = "INFO",
) -> None:
    """Serve the REST proxy until interrupted.

    Example: `sluice rest-proxy start --listen 0.0.0.0:8082 -b localhost:9092
    --schema-registry http://localhost:8081`
    """
    from sluice.rest_proxy import ProxyConfig, RestProxy, serve
    from sluice.rest_proxy.server import REALM
    from sluice.rest_proxy.workers import ProxyWorkers, serve_workers
    from sluice.schemas.registry_client import registry_client_config

    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    host, port = _address(listen)
    settings = parse_pairs(client_properties(client_config, command_config), "-X")
    settings.pop("bootstrap.servers", None)
    if schema_registry is not None and not schema_registry.startswith(("http://", "https://")):
        raise typer.BadParameter("expected an http(s):// URL", param_hint="--schema-registry")
    security = http_security(
        ssl_keystore,
        ssl_truststore,
        ssl_client_auth,
        jaas_config,
        auth_realm or REALM,
        ssl_cipher_suites,
    )
    registry: dict[str, object] = {}
    if schema_registry is not None:
        try:
            registry = registry_client_config(
                schema_registry, registry_settings(schema_registry_config)
            )
        except ConfigError as error:
            raise CliError(f"--schema-registry-config: {error}", exit_code=EXIT_USAGE) from None
    elif schema_registry_config is not None:
        raise CliError("--schema-registry-config needs --schema-registry", exit_code=EXIT_USAGE)
    config = ProxyConfig(
        bootstrap,
        dict(settings),
        schema_registry_url=schema_registry,
        consumer_instance_timeout_ms=instance_timeout_ms,
        schema_registry_config=registry,
        security=security,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        if workers > 1:
            proxy: RestProxy | ProxyWorkers = serve_workers(
                config, host, port, workers, log_level=log_level
            )
        else:
            proxy = serve(config, host, port)
    except KafkaException as error:
        raise CliError(f"cannot make the proxy's clients: {error}", exit_code=EXIT_USAGE) from None
    except (OSError, ValueError) as error:
        raise CliError(f"cannot serve the REST proxy on {listen!r}: {error}") from None
    logging.getLogger("sluice.rest_proxy").info(
        "REST proxy on %s for %s%s%s", proxy.url, bootstrap,
        f" (Schema Registry {schema_registry})" if schema_registry else "",
        f", {workers} worker processes" if workers > 1 else "",
    )  # fmt: skip
    try:
        while not stop.wait(0.5):
            pass
    finally:
        proxy.stop()
