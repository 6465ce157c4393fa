"""``sluice transactions list|describe``: the transactions of transactional producers.

What ``kafka-transactions.sh list|describe`` shows. confluent-kafka's AdminClient has no
ListTransactions or DescribeTransactions, so these commands speak them through
:mod:`sluice.wire` (PLAINTEXT only: ``-X`` takes the properties it can apply, ``client.id``,
``bootstrap.servers`` and ``security.protocol=PLAINTEXT``, and refuses any other). ``list``
asks every broker, since each one coordinates the transactional ids that hash to its
partitions of ``__transaction_state``; ``describe`` asks the id's coordinator, found with
FindCoordinator (key type 1, transaction).
"""

from __future__ import annotations

from typing import Annotated

import typer

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    RequestTimeout,
    client_properties,
    parse_pairs,
    print_table,
    warn,
)
from sluice.cli._groups import format_partitions
from sluice.exit_codes import EXIT_FAILED, CliError

app = typer.Typer(
    help="List and describe the transactions of transactional producers.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


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
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """List transactional ids with their producer id and state (ListTransactions).

    Example: `sluice transactions list --state Ongoing`
    """
    client_config = client_properties(client_config, command_config)
    from kio.schema.errors import ErrorCode

    from sluice import wire
    from sluice.cli._transactions import Admin, error_text, wire_config

    servers, client_id, security = wire_config(bootstrap, parse_pairs(client_config, "-X"))
    rows: list[tuple[str, int, int, str]] = []
    errors: list[str] = []
    with Admin(servers, timeout, client_id, security) as admin:
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
                errors.append(f"broker {node}: {error_text(answer.error_code)}")
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
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Show a transactional id's state, producer id and epoch, timeout, and the start time and
    partitions of its current (or last) transaction (DescribeTransactions).

    Example: `sluice transactions describe orders-app-0`
    """
    client_config = client_properties(client_config, command_config)
    from sluice.cli._transactions import Admin, timestamp, wire_config

    servers, client_id, security = wire_config(bootstrap, parse_pairs(client_config, "-X"))
    with Admin(servers, timeout, client_id, security) as admin:
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
            ["START-TIME", timestamp(txn.transaction_start_time)],
            ["PARTITIONS", format_partitions(partitions) or "-"],
        ],
    )
