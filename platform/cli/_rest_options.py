"""The options of the commands that call a Connect worker's REST API (``sluice connect
apply|status``, ``sluice status``): its URL, the CA to trust on HTTPS and HTTP basic-auth
credentials, as Kafka's users pass them to curl (``--cacert``, ``-u``).

The password is never an option's value (it would show in ``ps`` and in the shell's history)
and never printed: it comes from ``--rest-password-file`` (its first line), the environment
(``SLUICE_CONNECT_PASSWORD``), ``basic.auth.user.info`` of ``--rest-config``, or, on a
terminal, a prompt without echo. The options win over ``--rest-config``'s keys.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from sluice.connect_rest import CA_OPTION, RestClientSecurity, load_rest_config
from sluice.exit_codes import EXIT_USAGE, CliError

__all__ = [
    "PASSWORD_ENV",
    "RestCaFile",
    "RestConfig",
    "RestPasswordFile",
    "RestUser",
    "rest_client_security",
]

PASSWORD_ENV = "SLUICE_CONNECT_PASSWORD"
"""The environment variable a REST API's password may come from."""
_PANEL = "Connect REST API"

RestCaFile = Annotated[
    Path | None,
    typer.Option(
        CA_OPTION,
        envvar="SLUICE_CONNECT_CA_FILE",
        metavar="FILE",
        help="The CA (PEM) that signed the worker's HTTPS certificate (default: the system's).",
        rich_help_panel=_PANEL,
    ),
]
RestUser = Annotated[
    str | None,
    typer.Option(
        "--rest-user",
        envvar="SLUICE_CONNECT_USER",
        metavar="USER",
        help="HTTP basic authentication as USER (its password: --rest-password-file, "
        f"${PASSWORD_ENV} or a prompt).",
        rich_help_panel=_PANEL,
    ),
]
RestPasswordFile = Annotated[
    Path | None,
    typer.Option(
        "--rest-password-file",
        envvar="SLUICE_CONNECT_PASSWORD_FILE",
        metavar="FILE",
        help="Read the --rest-user's password from FILE (its first line).",
        rich_help_panel=_PANEL,
    ),
]
RestConfig = Annotated[
    Path | None,
    typer.Option(
        "--rest-config",
        envvar="SLUICE_CONNECT_CONFIG",
        metavar="FILE",
        help="REST client properties: `ssl.truststore.location` (PEM), "
        "`ssl.keystore.location` (PEM key and chain: a client certificate), "
        "`basic.auth.user.info=USER:PASSWORD`; the options win.",
        rich_help_panel=_PANEL,
    ),
]


def _first_line(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CliError(
            f"--rest-password-file: {path}: cannot read: {exc.strerror}", exit_code=EXIT_USAGE
        ) from None
    if not lines or not lines[0]:
        raise CliError(
            f"--rest-password-file: {path}: the first line (the password) is empty",
            exit_code=EXIT_USAGE,
        )
    return lines[0]


def rest_client_security(
    ca_file: Path | None,
    user: str | None,
    password_file: Path | None,
    config: Path | None,
) -> RestClientSecurity | None:
    """How to reach the REST API from the options (None: plain, nothing given); CliError with
    exit code 2 when a file cannot be read or a password cannot be had."""
    base = load_rest_config(config) if config is not None else RestClientSecurity()
    if ca_file is None and user is None and password_file is None and config is None:
        return None
    password = base.password if user is None or user == base.user else None
    user = user if user is not None else base.user
    if password_file is not None:
        if user is None:
            raise CliError("--rest-password-file needs --rest-user", exit_code=EXIT_USAGE)
        password = _first_line(password_file)
    elif user is not None and os.environ.get(PASSWORD_ENV):
        password = os.environ[PASSWORD_ENV]
    if user is not None and password is None:
        if not sys.stdin.isatty():
            raise CliError(
                f"--rest-user {user}: give its password with --rest-password-file or "
                f"${PASSWORD_ENV} (no terminal to ask on)",
                exit_code=EXIT_USAGE,
            )
        password = typer.prompt(f"password of {user}", hide_input=True, err=True)
    ca = ca_file if ca_file is not None else base.ca_file
    return RestClientSecurity(ca, user, password, base.cert_file)
