"""``sluice cluster describe``: the cluster id, the controller and each broker, through AdminClient.

What ``rpk cluster info`` and ``kafka-cluster.sh cluster-id`` show, and for each broker how many
partition leaders and replicas it holds (from the topics' metadata, internal topics included)::

    CLUSTER
    =======
    ID          Sfr7YvlkRHSHrmSrwq9mug
    CONTROLLER  1

    BROKERS
    =======
    ID  HOST       PORT  RACK  LEADERS  REPLICAS
    1*  127.0.0.1  9092  r1    4        12

The controller's id is marked ``*``, as ``rpk`` marks it. A cluster without a controller (one
being elected) shows ``none``. Works against any Kafka cluster, and against a single Sluice
node (one broker, its own controller).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import typer

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
    heading,
    print_table,
)
from sluice.cli.topics import _Admin
from sluice.exit_codes import CliError

app = typer.Typer(
    help="Describe the cluster: its id, controller and brokers.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


@app.command()
def describe(
    *,
    bootstrap: Bootstrap = clients.DEFAULT_BOOTSTRAP,
    client_config: ClientConfig = None,
    command_config: CommandConfig = None,
    timeout: RequestTimeout = DEFAULT_TIMEOUT,
) -> None:
    """Show the cluster id, the controller, and each broker with its rack and how many
    partition leaders and replicas it holds.

    Example: `sluice cluster describe -b 127.0.0.1:9092,127.0.0.1:9093`
    """
    client_config = client_properties(client_config, command_config)
    admin = _Admin(bootstrap, client_config, timeout)
    metadata = admin.metadata()  # unreachable: a clear error before anything else
    future = admin.client.describe_cluster(**admin.options)
    try:
        cluster = admin.wait(future)
    except Exception as exc:
        error = error_of(exc)
        if error is None:
            raise
        raise CliError(f"cannot describe the cluster: {describe_error(error)}") from None
    leaders, replicas = _placement(metadata)
    controller = cluster.controller.id if cluster.controller is not None else None

    heading("CLUSTER")
    print_table(
        ["ID", cluster.cluster_id or "-"],
        [["CONTROLLER", controller if controller is not None else "none"]],
    )
    typer.echo()
    heading("BROKERS")
    print_table(
        ["ID", "HOST", "PORT", "RACK", "LEADERS", "REPLICAS"],
        [
            [
                f"{node.id}*" if node.id == controller else node.id,
                node.host,
                node.port,
                node.rack or "-",
                leaders[node.id],
                replicas[node.id],
            ]
            for node in sorted(cluster.nodes, key=lambda n: n.id)
        ],
    )


def _placement(metadata: Any) -> tuple[Counter[int], Counter[int]]:
    """How many partitions each broker leads, and how many replicas it is assigned."""
    leaders: Counter[int] = Counter()
    replicas: Counter[int] = Counter()
    for topic in metadata.topics.values():
        for partition in topic.partitions.values():
            if partition.leader >= 0:
                leaders[partition.leader] += 1
            replicas.update(partition.replicas)
    return leaders, replicas
