"""``sluice leader-election``: Kafka's ``kafka-leader-election.sh``, through AdminClient's
ElectLeaders.

``--preferred`` moves each partition's leadership back to its preferred replica (the first of
its replicas) when that one is alive and in sync; ``--unclean`` gives a partition without a
leader one from outside its ISR — what only the old leader had is lost. Partitions are named
``TOPIC:PARTITION``, or ``TOPIC`` for all of a topic's; a preferred election of nothing named
covers every partition of the cluster (Kafka's ``--all-topic-partitions``)::

    $ sluice leader-election --preferred orders
    TOPIC   PARTITION  RESULT
    orders  0          elected
    orders  1          not needed: the preferred replica leads already

Exit status 1 when an election failed (not needed is not a failure).
"""

from __future__ import annotations

from typing import Annotated

import typer
from confluent_kafka import ElectionType, KafkaError, TopicPartition

from sluice import clients
from sluice.cli._common import (
    DEFAULT_TIMEOUT,
    Bootstrap,
    ClientConfig,
    CommandConfig,
    RequestTimeout,
    client_properties,
    describe_error,
    error_of,
    print_table,
)
from sluice.cli.topics import _Admin
from sluice.exit_codes import CliError


def leader_election(
    partitions: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[TOPIC[:PARTITION]]",
            help="The partitions (a topic alone: all of its partitions; none: every partition, "
            "--preferred only).",
            show_default=False,
        ),
    ] = None,
    *,
    preferred: Annotated[
        bool, typer.Option("--preferred", help="Back to each partition's preferred replica.")
    ] = False,
    unclean: Annotated[
        bool,
        typer.Option(
            "--unclean",
            help="A leader from outside the ISR for partitions that have none (loses records).",
        ),
    ] = False,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Elect partition leaders: `--preferred` or `--unclean`.

    Example: `sluice leader-election --preferred orders:0 payments`
    """
    client_config = client_properties(client_config, command_config)
    if preferred == unclean:
        raise typer.BadParameter("give one of --preferred and --unclean", param_hint="--preferred")
    if unclean and not partitions:
        raise typer.BadParameter(
            "an unclean election needs the partitions named", param_hint="TOPIC[:PARTITION]"
        )
    admin = _Admin(bootstrap, client_config, timeout)
    wanted = _partitions(admin, partitions or [])
    kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
    # no request_timeout: confluent-kafka 2.16's elect_leaders fails on its own keyword
    # arguments (SystemError); admin.wait bounds the wait instead
    future = admin.client.elect_leaders(kind, wanted or None)
    try:
        results = admin.wait(future)
    except Exception as exc:
        error = error_of(exc)
        if error is None:
            raise
        raise CliError(f"leader election failed: {describe_error(error)}") from None
    failed = False
    rows = []
    for tp, error in sorted(results.items(), key=lambda item: (item[0].topic, item[0].partition)):
        if error is None:
            outcome = "elected"
        elif error.code() == KafkaError.ELECTION_NOT_NEEDED:
            outcome = "not needed: " + (
                "the preferred replica leads already" if preferred else "it has a leader"
            )
        else:
            failed = True
            outcome = f"failed: {describe_error(error)}"
        rows.append([tp.topic, tp.partition, outcome])
    print_table(["TOPIC", "PARTITION", "RESULT"], rows)
    if failed:
        raise typer.Exit(1)


def _partitions(admin: _Admin, names: list[str]) -> list[TopicPartition]:
    """``TOPIC:PARTITION`` as given, ``TOPIC`` as all of its partitions."""
    wanted: list[TopicPartition] = []
    for name in names:
        topic, colon, index = name.rpartition(":")
        if colon and index.isdigit():
            wanted.append(TopicPartition(topic, int(index)))
            continue
        found = admin.topic_metadata(name)
        wanted += [TopicPartition(name, p) for p in sorted(found.partitions)]
    return wanted
