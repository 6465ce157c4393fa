"""The broker tier of a deployment: how each broker (and an embedded ZooKeeper) is launched,
and when a cluster is ready.

One broker without ZooKeeper is the child ``broker``. A cluster (``zookeeper:`` set) is the
children ``broker-<id>``, each started with ``--broker-id`` and ``--zookeeper`` and its own
listener and data directory, and with ``zookeeper: embedded`` a child ``zookeeper`` (Debian's
package, :mod:`sluice.up.zookeeper`) whose data lives under ``<home>/zookeeper``. The shared
``config:`` is each broker's ``server.properties``, plus its ``broker.rack``.

A cluster is ready (:func:`cluster_problem`) when every broker of the file is registered, a
controller is elected and no partition is under-replicated: what a rolling restart waits for
after each broker, so that one broker at a time is ever out of the in-sync replicas.

Brokers added to a running cluster get a share of the replicas when the file says
``rebalance_on_add: true`` (:func:`rebalance`: ``sluice brokers rebalance``, whose moves then
proceed in the background as any reassignment).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from confluent_kafka import KafkaException

from sluice import clients
from sluice.up import zookeeper
from sluice.up.children import Launch, sluice_command
from sluice.up.security import private_file
from sluice.up.spec import EMBEDDED_ZOOKEEPER, BrokerSpec, SecuritySpec

__all__ = [
    "BROKER_STOP_TIMEOUT",
    "ZOOKEEPER",
    "broker_launches",
    "cluster_problem",
    "rebalance",
    "zookeeper_launch",
]

ZOOKEEPER = "zookeeper"
"""The embedded ZooKeeper's child name."""
BROKER_STOP_TIMEOUT = 120.0
"""How long a broker may take to stop after SIGTERM (a controlled shutdown moves its
leaderships first) before it is killed."""


def zookeeper_launch(broker: BrokerSpec, home: Path) -> Launch | None:
    """The embedded ZooKeeper's launch; None when the cluster has none of its own."""
    if not broker.clustered or broker.zookeeper != EMBEDDED_ZOOKEEPER:
        return None
    host, _, port = broker.zookeeper_listen.rpartition(":")
    command = zookeeper.command(home / ZOOKEEPER, host.strip("[]"), int(port))
    return Launch(tuple(command), stop_timeout=30.0)


_REGISTRY_KEY = "confluent.schema.registry.url"


def broker_launches(
    broker: BrokerSpec,
    home: Path,
    security: SecuritySpec | None = None,
    registry_url: str | None = None,
) -> dict[str, Launch]:
    """Each broker's launch by child name (none when the brokers are elsewhere); with a
    schema registry in the file, the brokers know its URL (``confluent.schema.registry.url``,
    unless the file's broker config sets it) for topics that validate their schemas."""
    if not broker.embedded:
        return {}
    config = broker.config
    if registry_url is not None and _REGISTRY_KEY not in dict(config):
        config = (*config, (_REGISTRY_KEY, registry_url))
    if not broker.clustered:
        return {
            "broker": _launch(
                broker.listen,
                broker.data_dir,
                config,
                broker.metrics,
                home / "broker",
                security=security,
            )
        }
    launches = {}
    for node in broker.nodes:
        rack = (("broker.rack", node.rack),) if node.rack else ()
        cluster = ["--broker-id", str(node.id), "--zookeeper", str(broker.zookeeper_connect)]
        launches[node.name] = _launch(
            node.listen,
            node.data_dir,
            (*config, *rack),
            node.metrics,
            home / node.name,
            cluster,
            security,
        )
    return launches


def _launch(
    listen: str,
    data_dir: Path,
    config: tuple[tuple[str, str], ...],
    metrics: str | None,
    properties: Path,
    extra: list[str] | None = None,
    security: SecuritySpec | None = None,
) -> Launch:
    if security is not None:  # the listener with its protocol; keys and users in the file
        listen = f"{security.protocol}://{listen}"
        config = (*config, *security.broker_config(clustered=extra is not None))
    command = [
        *sluice_command(),
        "broker",
        "start",
        "--listen",
        listen,
        "--data-dir",
        str(data_dir.absolute()),
        *(extra or []),
    ]
    if config:
        # owner-only: with security it holds the admin's password
        path = private_file(properties.with_suffix(".properties"), config)
        command += ["--config", str(path)]
    if metrics:
        command += ["--metrics-listen", metrics]
    # the properties file is part of the launch: a changed config restarts the broker (its
    # digest, not its text, is kept: it may hold a password)
    digest = hashlib.sha256(repr(config).encode()).hexdigest()
    return Launch(tuple(command), stop_timeout=BROKER_STOP_TIMEOUT, fingerprint=digest)


def cluster_problem(
    broker: BrokerSpec, timeout: float = 5.0, security: SecuritySpec | None = None
) -> str | None:
    """What keeps the cluster from being ready — brokers of the file not registered, or
    partitions under-replicated (named, the first few) — or None when it is ready (asked as
    ``security``'s admin on a secured cluster)."""
    config = {} if security is None else security.admin_client()
    try:
        metadata = clients.admin(broker.bootstrap, **config).list_topics(timeout=timeout)
    except KafkaException as error:
        return f"the cluster does not answer: {error.args[0].str()}"
    missing = sorted({node.id for node in broker.nodes} - set(metadata.brokers))
    if missing:
        return f"broker(s) {', '.join(map(str, missing))} not registered yet"
    if metadata.controller_id < 0:  # admin calls would wait for one without asking again
        return "no controller elected yet"
    lagging = sorted(
        f"{name}-{index}"
        for name, topic in metadata.topics.items()
        for index, partition in topic.partitions.items()
        if len(partition.isrs) < len(partition.replicas) or partition.leader < 0
    )
    if lagging:
        shown = ", ".join(lagging[:5]) + (
            f" and {len(lagging) - 5} more" if len(lagging) > 5 else ""
        )
        return f"{len(lagging)} partition(s) under-replicated or offline: {shown}"
    return None


def rebalance(broker: BrokerSpec, timeout: float = 60.0, command_config: Path | None = None) -> str:
    """Start moving replicas onto the brokers that hold fewer than their share (``sluice brokers
    rebalance``, with ``command_config``'s client properties on a secured cluster); what it
    says, or RuntimeError with why it could not."""
    command = [*sluice_command(), "brokers", "rebalance", "--bootstrap-server", broker.bootstrap]
    if command_config is not None:
        command += ["--command-config", str(command_config)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"no answer in {timeout:g} s") from None
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"exit {done.returncode}")
    return done.stdout.splitlines()[0] if done.stdout else "balanced"
