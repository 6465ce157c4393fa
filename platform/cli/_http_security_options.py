"""The options that secure an HTTP service that Sluice runs (``sluice schema-registry start``,
``sluice rest-proxy start``), after Confluent's settings of those services::

    --ssl-keystore FILE       listeners=https://…, ssl.keystore.location (PEM: key and chain)
    --ssl-truststore FILE     ssl.truststore.location (PEM: the CAs of client certificates)
    --ssl-client-auth MODE    ssl.client.authentication: none, requested, required
    --ssl-cipher-suites LIST  ssl.cipher.suites (standard names, comma-separated)
    --jaas-config FILE        authentication.method=BASIC, java.security.auth.login.config
    --auth-realm REALM        authentication.realm: the JAAS section of the users

and the option of the commands that are clients of a schema registry (``--schema-registry-config``:
:mod:`sluice.schemas.registry_client`'s settings in a properties file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from sluice.cipher_suites import parse as parse_suites
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_USAGE, CliError
from sluice.http_security import (
    CLIENT_AUTH,
    HttpSecurity,
    TlsSettings,
    check_tls,
    jaas_users,
    pem_file,
)

__all__ = [
    "AuthRealm",
    "JaasConfig",
    "RegistryConfig",
    "SslCipherSuites",
    "SslClientAuth",
    "SslKeystore",
    "SslTruststore",
    "http_security",
    "registry_settings",
]

_PANEL = "HTTPS and authentication"

SslKeystore = Annotated[
    Path | None,
    typer.Option(
        "--ssl-keystore",
        metavar="FILE",
        help="Serve HTTPS with FILE (PEM: the key, then the certificate chain); Confluent's "
        "`listeners=https://…` with `ssl.keystore.location`.",
        rich_help_panel=_PANEL,
    ),
]
SslCipherSuites = Annotated[
    str | None,
    typer.Option(
        "--ssl-cipher-suites",
        metavar="LIST",
        help="Negotiate only these suites, by their standard names, comma-separated "
        "(`ssl.cipher.suites`: TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256).",
        rich_help_panel=_PANEL,
    ),
]
SslTruststore = Annotated[
    Path | None,
    typer.Option(
        "--ssl-truststore",
        metavar="FILE",
        help="The CAs (PEM) that sign client certificates (`ssl.truststore.location`).",
        rich_help_panel=_PANEL,
    ),
]
SslClientAuth = Annotated[
    str,
    typer.Option(
        "--ssl-client-auth",
        metavar="MODE",
        help="Ask clients for a certificate: none, requested or required "
        "(`ssl.client.authentication`; needs --ssl-truststore).",
        rich_help_panel=_PANEL,
    ),
]
JaasConfig = Annotated[
    Path | None,
    typer.Option(
        "--jaas-config",
        metavar="FILE",
        help="HTTP basic authentication (`authentication.method=BASIC`): the JAAS file whose "
        "--auth-realm section names a PropertyFileLoginModule and its users file.",
        rich_help_panel=_PANEL,
    ),
]
AuthRealm = Annotated[
    str | None,
    typer.Option(
        "--auth-realm",
        metavar="REALM",
        help="The JAAS section of the users (`authentication.realm`; default: Confluent's "
        "SchemaRegistry, KafkaRest).",
        rich_help_panel=_PANEL,
    ),
]
RegistryConfig = Annotated[
    Path | None,
    typer.Option(
        "--schema-registry-config",
        metavar="FILE",
        help="Schema registry client properties: `basic.auth.user.info=USER:PASSWORD`, "
        "`ssl.ca.location` (PEM), `ssl.certificate.location`, `ssl.key.location` "
        "(default: $SLUICE_SCHEMA_REGISTRY_CONFIG's).",
        rich_help_panel="Schema registry",
    ),
]

_OPTIONS = {
    "ssl.keystore.location": "--ssl-keystore",
    "ssl.truststore.location": "--ssl-truststore",
    "ssl.client.authentication": "--ssl-client-auth",
    "ssl.cipher.suites": "--ssl-cipher-suites",
    "java.security.auth.login.config": "--jaas-config",
}


def http_security(
    keystore: Path | None,
    truststore: Path | None,
    client_auth: str,
    jaas: Path | None,
    realm: str,
    cipher_suites: str | None = None,
) -> HttpSecurity:
    """The service's security from the options; CliError (exit 2) naming the option."""
    try:
        tls = None
        mode = client_auth.strip().lower()
        if mode not in CLIENT_AUTH:
            raise ConfigError(f"one of {', '.join(CLIENT_AUTH)}, got {client_auth!r}",
                              key="ssl.client.authentication")  # fmt: skip
        if keystore is not None:
            trusted = None
            if truststore is not None:
                trusted = pem_file(truststore, key="ssl.truststore.location")
            if mode != "none" and trusted is None:
                raise ConfigError("client certificates need the CAs that sign them",
                                  key="ssl.truststore.location")  # fmt: skip
            tls = TlsSettings(
                pem_file(keystore, key="ssl.keystore.location"),
                truststore=trusted,
                client_auth=CLIENT_AUTH[mode],
                cipher_suites=tuple(parse_suites(cipher_suites)),
            )
            check_tls(tls)
        elif truststore is not None or mode != "none":
            raise ConfigError("client certificates need HTTPS", key="ssl.keystore.location")
        elif cipher_suites:
            raise ConfigError("cipher suites need HTTPS (--ssl-keystore)", key="ssl.cipher.suites")
        basic = None
        if jaas is not None:
            basic = jaas_users(jaas, realm, key="java.security.auth.login.config")
    except ConfigError as error:
        option = _OPTIONS.get(error.key or "", error.key or "")
        raise CliError(f"{option}: {error.reason}", exit_code=EXIT_USAGE) from None
    return HttpSecurity(tls, basic, realm)


def registry_settings(path: Path | None) -> dict[str, Any]:
    """The registry client settings of ``--schema-registry-config`` (none: {})."""
    from sluice.schemas.registry_client import load_registry_config

    if path is None:
        return {}
    try:
        return load_registry_config(path)
    except ConfigError as error:
        raise CliError(f"--schema-registry-config: {error}", exit_code=EXIT_USAGE) from None
