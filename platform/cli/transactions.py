"""``sluice transactions list|describe``: the transactions of transactional producers.

What ``kafka-transactions.sh list|describe`` shows. confluent-kafka's AdminClient has no
ListTransactions or DescribeTransactions, so these commands speak them through
:mod:`sluice.wire` (PLAINTEXT only). ``list`` asks every broker, since each one coordinates the
transactional ids that hash to its partitions of ``__transaction_state``; ``describe`` asks the
id's coordinator, found with FindCoordinator (key type 1, transaction).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from types import TracebackType
from typing import Annotated, Any

import typer
from confluent_kafka import KafkaError
from kio.schema.errors import ErrorCode

from sluice import clients, wire
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    EXIT_FAILED,
    Bootstrap,
    CliError,
    RequestTimeout,
    print_table,
    warn,
)
from sluice.cli._groups import format_partitions

app = typer.Typer(
    help="List and describe the transactions of transactional producers.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

RETRIABLE = {
    ErrorCode.coordinator_load_in_progress,
    ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator,
}
"""Answers that mean "ask again, perhaps elsewhere": the coordinator is moving or loading."""


def _transactional_id(value: str) -> str:
    if not value:
        raise typer.BadParameter("a transactional id cannot be empty")
    return value


TransactionalId = Annotated[
    str,
    typer.Argument(
        metavar="TRANSACTIONAL-ID",
        callback=_transactional_id,
        help="The producer's transactional.id.",
    ),
]


@app.command("list")
def list_(
    *,
    state: Annotated[
        list[str] | None,
        typer.Option(
            "--state",
            metavar="STATE",
            help="Only transactions in this state, repeatable (Ongoing, CompleteCommit, …).",
        ),
    ] = None,
    producer_id: Annotated[
        list[int] | None,
        typer.Option(
            "--producer-id", metavar="ID", min=0, help="Only this producer id, repeatable."
        ),
    ] = None,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """List transactional ids with their producer id and state (ListTransactions).

    Example: `sluice transactions list --state Ongoing`
    """
    rows: list[tuple[str, int, int, str]] = []
    errors: list[str] = []
    with _Admin(bootstrap, timeout) as admin:
        for node in admin.brokers():
            try:
                answer = admin.call_until(
                    node,
                    wire.LIST_TRANSACTIONS,
                    f"broker {node}",
                    state_filters=tuple(state or ()),
                    producer_id_filters=tuple(producer_id or ()),
                )
            except CliError as exc:  # names the broker
                errors.append(exc.message)
                continue
            if answer.error_code != ErrorCode.none:
                errors.append(f"broker {node}: {_error_text(answer.error_code)}")
                continue
            for unknown in sorted(set(answer.unknown_state_filters)):
                warn(f"broker {node} knows no transaction state {unknown!r}")
            rows.extend(
                (t.transactional_id, node.node_id, int(t.producer_id), t.transaction_state)
                for t in answer.transaction_states
            )
    if errors and not rows:
        raise CliError(f"cannot list transactions: {errors[0]}")
    for error in errors:
        warn(f"some transactions may be missing: {error}")
    print_table(["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"], sorted(rows))
    if errors:
        raise typer.Exit(EXIT_FAILED)


@app.command()
def describe(
    transactional_id: TransactionalId,
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Show a transactional id's state, producer id and epoch, timeout, and the start time and
    partitions of its current (or last) transaction (DescribeTransactions).

    Example: `sluice transactions describe orders-app-0`
    """
    with _Admin(bootstrap, timeout) as admin:
        node, txn = admin.describe(transactional_id)
    partitions = ((t.topic, int(p)) for t in txn.topics for p in t.partitions)
    print_table(
        ["TRANSACTIONAL-ID", txn.transactional_id],
        [
            ["STATE", txn.transaction_state],
            ["COORDINATOR", node],
            ["PRODUCER-ID", txn.producer_id],
            ["PRODUCER-EPOCH", txn.producer_epoch],
            ["TIMEOUT-MS", round(txn.transaction_timeout.total_seconds() * 1000)],
            ["START-TIME", _timestamp(txn.transaction_start_time)],
            ["PARTITIONS", format_partitions(partitions) or "-"],
        ],
    )


def _timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds; ``-`` for Kafka's "none" (-1, before the epoch).

    >>> _timestamp(datetime(2024, 5, 1, 12, 0, 0, 250000, tzinfo=UTC))
    '2024-05-01T12:00:00.250Z'
    >>> _timestamp(datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC))
    '-'
    """
    if moment.timestamp() < 0:
        return "-"
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _error_text(code: ErrorCode, message: str | None = None) -> str:
    """An error code as a sentence and its name, like ``describe_error``.

    >>> _error_text(ErrorCode.coordinator_not_available)
    'Coordinator not available (COORDINATOR_NOT_AVAILABLE)'
    >>> _error_text(ErrorCode.transactional_id_not_found)
    'TRANSACTIONAL_ID_NOT_FOUND'
    """
    name = code.name.upper()
    text = message or KafkaError(int(code)).str().removeprefix("Broker: ")
    if text.startswith("Err-"):  # librdkafka does not know the code
        return name
    return f"{text} ({name})"


class _Admin:
    """Connections to the brokers, reused, and the retries until ``--timeout`` runs out."""

    def __init__(self, bootstrap: str, timeout: float) -> None:
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self._connections: dict[tuple[str, int], wire.Connection] = {}
        try:
            self._bootstrap = wire.connect(bootstrap, timeout=timeout, client_id="sluice-cli")
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

    def __enter__(self) -> _Admin:
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
                conn = wire.connect_node(node, timeout=self.timeout, client_id="sluice-cli")
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
            reason = _error_text(answer.error_code, getattr(answer, "error_message", None))
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
                f"{_error_text(answer.error_code, answer.error_message)}"
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
            reason += _error_text(txn.error_code)
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
