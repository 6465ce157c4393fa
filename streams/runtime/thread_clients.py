"""The Kafka clients of a stream thread, configured as Kafka Streams configures its own.

Every client of process ``P`` of application ``A`` is named ``A-P-<role>`` (consumer,
restore-consumer, standby, producer); the consumers read committed records only under
exactly-once; ``consumer_config``/``producer_config`` of the app come on top. ``P`` is the
process id kept in the state directory (:mod:`sluice.streams.runtime.state_directory`), so it
is the same after a restart. Every client reconnects as Kafka's Java clients do
(:data:`JAVA_RECONNECT`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, Producer

from sluice import clients, wire
from sluice.streams.config import StreamsConfig
from sluice.streams.errors import StreamsError

__all__ = [
    "JAVA_RECONNECT",
    "assign_only",
    "client_id",
    "group_consumer",
    "producer",
    "restore_consumer",
    "standby_consumer",
    "transactional_id",
    "wire_security",
]


JAVA_RECONNECT: dict[str, Any] = {"reconnect.backoff.max.ms": 1000}
"""Kafka's Java clients' reconnect backoff ceiling (librdkafka's is 10 s). A client learns that
a coordinator moved only when its connection to the old one fails: with backoffs growing to
10 s, a producer whose transaction coordinator was killed asked for the new one after ~10 s,
past ``transaction.timeout.ms``, and its transaction had to be aborted."""


def client_id(config: StreamsConfig, process_id: str, role: str) -> str:
    """``<application id>-<process id>-<role>``."""
    return f"{config.application_id}-{process_id}-{role}"


def assign_only(config: StreamsConfig, role: str) -> dict[str, Any]:
    """The settings of an assign-only consumer (it never joins a group nor commits). librdkafka
    insists on a ``group.id`` and looks its coordinator up, which a broker with ACLs allows to a
    principal with Describe on the group: the id is under the application id (``A-assign-…``),
    covered by the app's usual ACL on groups prefixed ``A``."""
    return {
        "group.id": f"{config.application_id}-assign-{role}-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
    }


def transactional_id(config: StreamsConfig, process_id: str) -> str:
    """Exactly-once v2: ``<application id>-<process id>-1``, Kafka Streams' id of thread 1."""
    return f"{config.application_id}-{process_id}-1"


def group_consumer(config: StreamsConfig, process_id: str) -> Consumer:
    """The consumer of the tasks' input partitions. It never joins the group itself: the stream
    thread runs the membership (:mod:`sluice.streams.runtime.membership`) and assigns it the
    partitions of its active tasks; ``group.id`` is the application id so that it reads the
    group's committed offsets."""
    return clients.consumer(
        config.bootstrap_servers,
        **{
            "group.id": config.application_id,
            "client.id": client_id(config, process_id, "consumer"),
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "isolation.level": config.isolation_level,
            **JAVA_RECONNECT,
            **config.consumer_config,
        },
    )


def wire_security(config: StreamsConfig) -> wire.Security:
    """The consumer's security settings, for the group membership's own connections."""
    settings = {k: str(v) for k, v in config.consumer_config.items() if k in wire.SECURITY_KEYS}
    try:
        return wire.Security.from_config(settings)
    except ValueError as error:
        raise StreamsError(f"the group membership cannot connect: {error}") from None


def restore_consumer(config: StreamsConfig, process_id: str) -> Consumer:
    """An assign-only consumer of changelogs that sees their end at once."""
    return clients.consumer(
        config.bootstrap_servers,
        **{
            "client.id": client_id(config, process_id, "restore-consumer"),
            **assign_only(config, "restore"),
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 20,  # the end of a changelog shows up at once
            "isolation.level": config.isolation_level,
            "auto.offset.reset": "earliest",
            **JAVA_RECONNECT,
            **config.consumer_config,
        },
    )


def standby_consumer(config: StreamsConfig, process_id: str) -> Consumer:
    """The consumer that keeps standby replicas of stores."""
    return clients.consumer(
        config.bootstrap_servers,
        **{
            "client.id": client_id(config, process_id, "standby"),
            **assign_only(config, "standby"),
            "isolation.level": config.isolation_level,
            **JAVA_RECONNECT,
            **config.consumer_config,
        },
    )


def producer(config: StreamsConfig, process_id: str, on_delivery: Callable[..., None]) -> Producer:
    """The producer of output and changelogs; transactional under exactly-once v2, with the
    same :func:`transactional_id` after a restart (its ``init_transactions`` fences the
    previous incarnation)."""
    settings: dict[str, Any] = {
        "client.id": client_id(config, process_id, "producer"),
        "linger.ms": 5,
        "batch.num.messages": 10_000,
        "queue.buffering.max.messages": 500_000,
        "partitioner": "murmur2_random",  # Java's: co-partitioned with Java clients' topics
        "on_delivery": on_delivery,
        "delivery.report.only.error": True,
        **JAVA_RECONNECT,
    }
    if config.exactly_once:
        settings["transactional.id"] = transactional_id(config, process_id)
        settings["transaction.timeout.ms"] = config.transaction_timeout_ms
    settings.update(config.producer_config)
    return clients.producer(config.bootstrap_servers, **settings)
