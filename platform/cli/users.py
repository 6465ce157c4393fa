"""``sluice users scram set|delete|describe``: users' SCRAM credentials (KIP-554), what Kafka's
``kafka-configs.sh --entity-type users --alter --add-config 'SCRAM-SHA-256=[...]'`` does, through
confluent-kafka's AdminClient (AlterUserScramCredentials, DescribeUserScramCredentials).

The password is read from ``--password-file`` (its first line) or, on a terminal, asked for
without echo; it is never an option's value (it would show in ``ps`` and in the shell's
history) and never printed. The client salts it and sends the salted password; the broker
stores only what SCRAM needs to check it.

    $ sluice users scram set alice --mechanism SCRAM-SHA-512 --password-file alice.txt
    alice: SCRAM-SHA-512 set (8192 iterations)
    $ sluice users scram describe
    USER   MECHANISM      ITERATIONS
    alice  SCRAM-SHA-512  8192
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # no __all__
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    RequestTimeout,
    client_properties,
    error_of,
    make_client,
    parse_pairs,
    print_table,
)
from sluice.exit_codes import EXIT_FAILED, EXIT_USAGE, CliError

__all__ = ["app"]

app = typer.Typer(help="Manage users' credentials.", no_args_is_help=True)
scram = typer.Typer(help="Set, delete and describe users' SCRAM credentials.", no_args_is_help=True)
app.add_typer(scram, name="scram")

MECHANISMS = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
              "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}  # fmt: skip
NAMES = {mechanism: name for name, mechanism in MECHANISMS.items()}

Mechanism = Annotated[
    str,
    typer.Option("--mechanism", "-m", metavar="SCRAM-SHA-256|SCRAM-SHA-512", help="The mechanism."),
]


def _admin(bootstrap: str, client_config: list[str] | None) -> Any:
    overrides = parse_pairs(client_config, "-X")
    return make_client(clients.admin, bootstrap, {"client.id": "sluice-cli", **overrides})


def _mechanism(name: str) -> Any:
    try:
        return MECHANISMS[name.upper()]
    except KeyError:
        raise CliError(
            f"--mechanism is SCRAM-SHA-256 or SCRAM-SHA-512, not {name!r}", exit_code=EXIT_USAGE
        ) from None


def _password(path: Path | None) -> str:
    if path is not None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise CliError(f"{path}: cannot read: {exc.strerror}", exit_code=EXIT_USAGE) from None
        if not lines or not lines[0]:
            raise CliError(f"{path}: the first line (the password) is empty", exit_code=EXIT_USAGE)
        return lines[0]
    if not sys.stdin.isatty():
        raise CliError("give --password-file (no terminal to ask on)", exit_code=EXIT_USAGE)
    password: str = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    return password


def _wait(futures: dict[str, Any], timeout: float) -> None:
    for user, future in futures.items():
        try:
            future.result(timeout + 5)
        except KafkaException as exc:
            error = error_of(exc)
            reason = f"{error.name()}: {error.str()}" if error is not None else str(exc)
            raise CliError(f"{user}: {reason}", exit_code=EXIT_FAILED) from None


@scram.command("set")
def set_(
    user: Annotated[str, typer.Argument(metavar="USER", help="The user name.")],
    *,
    mechanism: Mechanism = "SCRAM-SHA-256",
    iterations: Annotated[
        int, typer.Option("--iterations", metavar="N", help="4096 to 16384.")
    ] = 8192,
    password_file: Annotated[
        Path | None,
        typer.Option("--password-file", metavar="FILE", help="Read the password from FILE."),
    ] = None,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Set (or replace) USER's credential for one mechanism.

    Example: `sluice users scram set alice --password-file alice.txt`
    """
    client_config = client_properties(client_config, command_config)
    info = ScramCredentialInfo(_mechanism(mechanism), iterations)
    upsertion = UserScramCredentialUpsertion(user, info, _password(password_file).encode())
    admin = _admin(bootstrap, client_config)
    _wait(admin.alter_user_scram_credentials([upsertion], request_timeout=timeout), timeout)
    typer.echo(f"{user}: {mechanism.upper()} set ({iterations} iterations)")


@scram.command()
def delete(
    user: Annotated[str, typer.Argument(metavar="USER", help="The user name.")],
    *,
    mechanism: Mechanism = "SCRAM-SHA-256",
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Delete USER's credential for one mechanism.

    Example: `sluice users scram delete alice --mechanism SCRAM-SHA-512`
    """
    client_config = client_properties(client_config, command_config)
    deletion = UserScramCredentialDeletion(user, _mechanism(mechanism))
    admin = _admin(bootstrap, client_config)
    _wait(admin.alter_user_scram_credentials([deletion], request_timeout=timeout), timeout)
    typer.echo(f"{user}: {mechanism.upper()} deleted")


@scram.command()
def describe(
    users: Annotated[
        list[str] | None, typer.Argument(metavar="[USER]...", help="Only these users.")
    ] = None,
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """List users' SCRAM mechanisms and iteration counts (never a secret).

    Example: `sluice users scram describe`
    """
    client_config = client_properties(client_config, command_config)
    admin = _admin(bootstrap, client_config)
    try:
        if users:
            futures = admin.describe_user_scram_credentials(users, request_timeout=timeout)
            found = {user: future.result(timeout + 5) for user, future in futures.items()}
        else:
            found = admin.describe_user_scram_credentials(request_timeout=timeout).result(
                timeout + 5
            )
    except KafkaException as exc:
        error = error_of(exc)
        raise CliError(error.str() if error is not None else str(exc)) from None
    print_table(
        ["USER", "MECHANISM", "ITERATIONS"],
        [
            [user, NAMES.get(info.mechanism, str(info.mechanism)), info.iterations]
            for user, description in sorted(found.items())
            for info in description.scram_credential_infos
        ],
    )
