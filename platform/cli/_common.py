"""What every command shares: connection options, client errors, escapes, plain tables.

Exit codes and :class:`~sluice.exit_codes.CliError` live in :mod:`sluice.exit_codes` (``sluice
up`` raises it too).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ClusterMetadata  # type: ignore[attr-defined]
from rich.console import Console

from sluice.client_properties import load_client_properties
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from sluice import wire

C = TypeVar("C")

stderr = Console(stderr=True, highlight=False, soft_wrap=True)
"""Diagnostics, progress and summaries go to stderr; stdout carries only data."""

Bootstrap = Annotated[
    str,
    typer.Option(
        "--bootstrap-server",
        "-b",
        envvar="SLUICE_BOOTSTRAP",
        metavar="HOST:PORT[,…]",
        help="Broker(s) to connect to.",
        rich_help_panel="Connection",
    ),
]
Home = Annotated[
    Path,
    typer.Option(
        "--home",
        envvar="SLUICE_HOME",
        metavar="DIR",
        help="Where `sluice up` keeps its state (`DIR/up.json`) and logs (`DIR/logs/`).",
    ),
]
DEFAULT_HOME = Path(".sluice")
CLIENT_CONFIG_HELP = (
    "Config property under its Kafka name, repeatable (e.g. `-X security.protocol=SSL`)."
)
"""The one description of ``-X KEY=VALUE``, whatever command takes it."""
ClientConfig = Annotated[
    list[str] | None,
    typer.Option(
        "--client-config",
        "-X",
        metavar="KEY=VALUE",
        help=CLIENT_CONFIG_HELP,
        rich_help_panel="Connection",
    ),
]
CommandConfig = Annotated[
    Path | None,
    typer.Option(
        "--command-config",
        metavar="FILE",
        help="Client properties file, Kafka's (Java client keys such as `sasl.jaas.config`, "
        "`ssl.truststore.location`, translated; librdkafka's pass through); `-X` wins.",
        rich_help_panel="Connection",
    ),
]
RequestTimeout = Annotated[
    float,
    typer.Option(
        "--timeout",
        envvar="SLUICE_TIMEOUT",
        min=0.1,
        metavar="SECONDS",
        help="How long to wait for the broker to answer.",
        rich_help_panel="Connection",
    ),
]
DEFAULT_TIMEOUT = 10.0


def warn(message: str) -> None:
    stderr.print(f"warning: {message}", markup=False)


def records(count: int) -> str:
    """``1 record``, ``2 records``.

    >>> records(1), records(0)
    ('1 record', '0 records')
    """
    return f"{count} record" if count == 1 else f"{count} records"


def parse_pairs(values: Iterable[str] | None, option: str) -> dict[str, str]:
    """``["k=v", …]`` → ``{"k": "v"}``; anything else is a usage error.

    >>> parse_pairs(["retention.ms=1000", "cleanup.policy=compact,delete"], "--config")
    {'retention.ms': '1000', 'cleanup.policy': 'compact,delete'}
    """
    pairs: dict[str, str] = {}
    for item in values or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise typer.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=option)
        pairs[key.strip()] = value
    return pairs


def client_properties(
    client_config: list[str] | None, command_config: Path | None
) -> list[str] | None:
    """``-X`` pairs after those of ``--command-config`` (translated from Java client keys),
    so that ``-X`` wins when :func:`parse_pairs` reads them; a bad file is a usage error that
    names its line and key."""
    if command_config is None:
        return client_config
    try:
        from_file = load_client_properties(command_config).pairs()
    except ConfigError as exc:
        raise CliError(f"--command-config: {exc}", exit_code=EXIT_USAGE) from None
    return [*from_file, *(client_config or ())]


def wire_security(
    command_config: Path | None, command: str, client_config: list[str] | None = None
) -> wire.Security:
    """The TLS and SASL settings of a command that speaks the protocol itself (:mod:`sluice.wire`),
    from ``--command-config`` then ``-X`` (``client.id`` and ``bootstrap.servers`` left to the
    command); a property that client cannot apply is a usage error naming it."""
    from sluice import wire

    pairs = parse_pairs(client_properties(client_config, command_config), "-X")
    for key in ("client.id", "bootstrap.servers"):
        pairs.pop(key, None)
    try:
        return wire.Security.from_config(pairs)
    except (ValueError, OSError) as exc:
        raise CliError(f"{command}: {exc}", exit_code=EXIT_USAGE) from None


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "0": "\0", "\\": "\\"}


def unescape(text: str) -> str:
    r"""Turn ``\t``, ``\n``, ``\r``, ``\0`` and ``\\`` into the characters; keep others as typed.

    >>> unescape(r"%k\t%v\n"), unescape(r"a\qb")
    ('%k\t%v\n', 'a\\qb')
    """
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out.append(_ESCAPES[text[i + 1]])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def split_format(text: str, known: Iterable[str], help_text: str) -> list[str | bytes]:
    r"""A kcat-style format (escapes already turned into characters) as its parts: each token
    ``%x`` of ``known`` as ``"x"``, the text between them as bytes (``%%`` is a ``%``); an
    unknown token is a usage error that lists ``help_text``.

    >>> split_format("%k\t%v 100%%", "kv", "%k %v")
    ['k', b'\t', 'v', b' 100%']
    """
    tokens = set(known)
    parts: list[str | bytes] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "%":
            literal.append(char)
            i += 1
            continue
        token = text[i + 1 : i + 2]
        if token == "%":
            literal.append("%")
        elif token in tokens:
            if literal:
                parts.append("".join(literal).encode())
                literal = []
            parts.append(token)
        else:
            raise typer.BadParameter(
                f"unknown token %{token} (known: {help_text})", param_hint="--format"
            )
        i += 2
    if literal:
        parts.append("".join(literal).encode())
    return parts


def print_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Left-aligned columns, two spaces apart, like ``rpk``: easy to read and to ``awk``.

    >>> print_table(["NAME", "PARTITIONS"], [["orders", 3]])
    NAME    PARTITIONS
    orders  3
    """
    text = [[str(cell) for cell in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in text) for i in range(len(headers))]
    for row in text:
        line = "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        typer.echo(line.rstrip())


def heading(title: str) -> None:
    typer.echo(f"{title}\n{'=' * len(title)}")


class Connection:
    """Watches a client's error callbacks so that an unreachable cluster is a clear, quick error.

    librdkafka retries a dead bootstrap server forever and reports it only through ``error_cb``
    (served by ``poll()``); :meth:`metadata` turns "all brokers are down" into a :class:`CliError`
    instead of a hang. After that, client errors are shown once each as warnings.
    """

    def __init__(self, bootstrap: str, timeout: float) -> None:
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.connected = False
        self._down: KafkaError | None = None
        self._reason: str | None = None
        self._authentication: str | None = None
        self._warned: set[str] = set()

    def error_cb(self, error: KafkaError) -> None:
        code = error.code()
        if code in (KafkaError._TRANSPORT, KafkaError._RESOLVE, KafkaError._SSL):
            self._reason = _strip_broker_prefix(error.str())
        if code == KafkaError._AUTHENTICATION:
            self._authentication = _strip_broker_prefix(error.str())
        if code == KafkaError._ALL_BROKERS_DOWN:
            self._down = error
        if self.connected and error.str() not in self._warned:
            self._warned.add(error.str())
            warn(error.str())

    def unreachable(self) -> CliError:
        if self._authentication:
            return CliError(
                f"cannot authenticate to {self.bootstrap}: {self._authentication}; check the "
                "credentials (--command-config, -X sasl.username=… -X sasl.password=…)"
            )
        reason = f" ({self._reason})" if self._reason else ""
        return CliError(
            f"cannot reach a broker at {self.bootstrap}{reason}; is it running? "
            "Set --bootstrap-server or SLUICE_BOOTSTRAP."
        )

    def metadata(
        self, client: Producer | Consumer | AdminClient, topic: str | None = None
    ) -> ClusterMetadata:
        """The cluster's metadata (of one ``topic`` if given), or a clear error within the timeout.

        ``client`` is a producer, admin client, or a consumer that has not been assigned yet
        (``poll()`` serves the error callbacks without consuming anything).
        """
        deadline = time.monotonic() + self.timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if self._reason or self._authentication:
                    raise self.unreachable()
                raise CliError(
                    f"no answer from {self.bootstrap} within {self.timeout:g}s (--timeout)"
                )
            try:
                metadata: ClusterMetadata = client.list_topics(
                    topic=topic, timeout=min(1.0, remaining)
                )
            except KafkaException as exc:
                code = exc.args[0].code()
                if code not in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT):
                    raise CliError(describe_error(exc.args[0])) from None
                client.poll(0.05)  # serves error_cb; a consumer is not assigned yet
                if self._down is not None:
                    raise self.unreachable() from None
                continue
            self.connected = True
            return metadata


def _strip_broker_prefix(text: str) -> str:
    """``"h:1/bootstrap: Connect … failed: Connection refused (after 0ms in state CONNECT)"``
    → ``"Connect … failed: Connection refused"``."""
    head, sep, rest = text.partition(": ")
    if sep and "/" in head:
        text = rest
    cut = text.find(" (after ")
    return text[:cut] if cut >= 0 else text


def describe_error(error: KafkaError) -> str:
    """A Kafka error as a sentence: the broker's own message, then the error's name."""
    text = error.str() or error.name()
    text = text.removeprefix("Broker: ")
    return f"{text} ({error.name()})"


def error_of(exc: BaseException) -> KafkaError | None:
    """The :class:`KafkaError` inside an exception that a client raised, if any."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def make_client(factory: Callable[..., C], bootstrap: str, config: dict[str, Any]) -> C:
    """``factory(bootstrap, **config)``; a property librdkafka refuses is a usage error."""
    try:
        return factory(bootstrap, **config)
    except (KafkaException, ValueError, TypeError) as exc:
        error = error_of(exc)
        reason = error.str() if error is not None else str(exc)
        raise CliError(f"client config: {reason}", exit_code=EXIT_USAGE) from None
