"""The wire side of ``sluice transactions``: ListTransactions, DescribeTransactions and
FindCoordinator through :mod:`sluice.wire` (imported only when such a command runs: kio takes
a while to import, and every other command would pay for it)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import typer
from confluent_kafka import KafkaError
from kio.schema.errors import ErrorCode

from sluice import wire
from sluice.exit_codes import CliError

__all__ = ["RETRIABLE", "SUPPORTED_CONFIG", "Admin", "error_text", "timestamp", "wire_config"]

RETRIABLE = {
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator,
}
"""Answers that mean "ask again, perhaps elsewhere": the coordinator is moving or loading."""


SUPPORTED_CONFIG = ("bootstrap.servers", "client.id", *wire.SECURITY_KEYS)
"""The client properties the wire client applies: TLS and SASL (PLAIN, SCRAM) among them."""


def wire_config(bootstrap: str, overrides: dict[str, str]) -> tuple[str, str, wire.Security]:
    """The bootstrap servers, client id and security from ``--bootstrap-server``, ``-X`` and
    ``--command-config``; a property the wire client cannot apply is a usage error rather than
    silently ignored.

    >>> servers, client_id, security = wire_config(
    ...     "localhost:9092", {"client.id": "ops", "security.protocol": "plaintext"}
    ... )
    >>> servers, client_id, security.protocol
    ('localhost:9092', 'ops', 'PLAINTEXT')
    >>> try:
    ...     wire_config("h:1", {"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"})
    ... except typer.BadParameter as exc:
    ...     print(exc.message)
    sasl.mechanism=GSSAPI: sluice.wire speaks ('PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512')
    """
    security = {k: v for k, v in overrides.items() if k not in ("bootstrap.servers", "client.id")}
    try:
        found = wire.Security.from_config(security)
    except (ValueError, OSError) as exc:
        raise typer.BadParameter(str(exc), param_hint="-X/--command-config") from None
    client_id = overrides.get("client.id") or "sluice-cli"
    return overrides.get("bootstrap.servers") or bootstrap, client_id, found


def timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds; ``-`` for Kafka's "none" (-1, before the epoch).

    >>> timestamp(datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC))
    '2024-05-01T12:00:00.250Z'
    >>> timestamp(datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC))
    '-'
    """
    if moment.timestamp() < 0:
        return "-"
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def error_text(code: ErrorCode, message: str | None = None) -> str:
    """An error code as a sentence and its name, like ``describe_error``.

    >>> error_text(ErrorCode.coordinator_not_available)
    'Coordinator not available (COORDINATOR_NOT_AVAILABLE)'
    >>> error_text(ErrorCode.transactional_id_not_found)
    'TRANSACTIONAL_ID_NOT_FOUND'
    """
    name = code.name.upper()
    text = message or KafkaError(int(code)).str().removeprefix("Broker: ")
    if text.startswith("Err-"):  # librdkafka does not know the code
        return name
    return f"{text} ({name})"


class Admin:
    """Connections to the brokers, reused, and the retries until ``--timeout`` runs out."""

    def __init__(
        self,
        bootstrap: str,
        timeout: float,
        client_id: str = "sluice-cli",
        security: wire.Security = wire.PLAINTEXT,
    ) -> None:
        self.bootstrap = bootstrap
        self.security = security
        self.timeout = timeout
        self.client_id = client_id
        self.deadline = time.monotonic() + timeout
        self._connections: dict[tuple[str, int], wire.Connection] = {}
        try:
            self._bootstrap = wire.connect(
                bootstrap, timeout=timeout, client_id=client_id, security=security
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--bootstrap-server") from None
        except wire.BrokerUnreachableError as exc:
            raise CliError(
                f"cannot reach a broker at {bootstrap} ({exc.reason}); is it running? "
                "Set --bootstrap-server or SLUICE_BOOTSTRAP."
            ) from None
        except wire.WireError as exc:
            raise CliError(str(exc)) from None
        self._connections[self._bootstrap.host, self._bootstrap.port] = self._bootstrap

    def __enter__(self) -> Admin:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for conn in self._connections.values():
            conn.close()

    def brokers(self) -> list[wire.Node]:
        with self._errors():
            return wire.brokers(self._bootstrap)

    def connection(self, node: wire.Node) -> wire.Connection:
        key = node.host, node.port
        if (conn := self._connections.get(key)) is None:
            try:
                conn = wire.connect_node(
                    node, timeout=self.timeout, client_id=self.client_id, security=self.security
                )
            except wire.BrokerUnreachableError as exc:
                raise CliError(f"cannot reach broker {node}: {exc.reason}") from None
            except wire.WireError as exc:
                raise CliError(str(exc)) from None
            self._connections[key] = conn
        return conn

    def call_until(self, node: wire.Node, api: wire.Api, doing: str, **values: Any) -> Any:
        """``api`` on ``node``, asked again while its ``error_code`` is retriable; ``doing``
        (``"cannot … "``) introduces the reason if that lasts past ``--timeout``."""
        attempt = 0
        while True:
            answer = self.call(node, api, **values)
            if answer.error_code not in RETRIABLE:
                return answer
            reason = error_text(answer.error_code, getattr(answer, "error_message", None))
            self._backoff(attempt, f"{doing}: {reason}")
            attempt += 1

    def coordinator(self, transactional_id: str) -> wire.Node:
        """The broker that coordinates ``transactional_id`` (FindCoordinator, key type 1)."""
        answer = self.call_until(
            wire.Node(-1, self._bootstrap.host, self._bootstrap.port),
            wire.FIND_COORDINATOR,
            f"cannot find the coordinator of transactional id {transactional_id!r}",
            key=transactional_id,
            key_type=1,
        )
        if answer.error_code != ErrorCode.none:
            raise CliError(
                f"cannot find the coordinator of transactional id {transactional_id!r}: "
                f"{error_text(answer.error_code, answer.error_message)}"
            )
        return wire.Node(int(answer.node_id), answer.host, int(answer.port))

    def describe(self, transactional_id: str) -> tuple[wire.Node, Any]:
        """The coordinator and DescribeTransactions' answer about ``transactional_id``."""
        attempt = 0
        while True:
            node = self.coordinator(transactional_id)
            answer = self.call(
                node, wire.DESCRIBE_TRANSACTIONS, transactional_ids=(transactional_id,)
            )
            found = [t for t in answer.transaction_states if t.transactional_id == transactional_id]
            if not found:
                raise CliError(f"broker {node} did not describe {transactional_id!r}")
            txn = found[0]
            if txn.error_code == ErrorCode.none:
                return node, txn
            if txn.error_code == ErrorCode.transactional_id_not_found:
                raise CliError(f"transactional id {transactional_id!r} does not exist")
            reason = f"cannot describe transactional id {transactional_id!r}: "
            reason += error_text(txn.error_code)
            if txn.error_code not in RETRIABLE:
                raise CliError(reason)
            self._backoff(attempt, reason)
            attempt += 1

    def call(self, node: wire.Node, api: wire.Api, **values: Any) -> Any:
        """``api`` on ``node``, once."""
        with self._errors():
            return self.connection(node).call(api, **values)

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """The failures of :mod:`sluice.wire` as errors a user can act on."""
        try:
            yield
        except wire.UnsupportedApiError as exc:
            raise CliError(
                f"{exc}; it needs a transaction coordinator (Apache Kafka 3.0 or later, or Sluice)"
            ) from None
        except wire.WireError as exc:
            raise CliError(str(exc)) from None

    def _backoff(self, attempt: int, reason: str) -> None:
        pause = min(0.1 * 2**attempt, 1.0)
        if time.monotonic() + pause > self.deadline:
            raise CliError(f"{reason}; still so after {self.timeout:g}s (--timeout)")
        time.sleep(pause)
