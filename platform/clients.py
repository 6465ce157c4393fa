"""Factories for confluent-kafka clients with Sluice's defaults.

Everything Sluice builds above the broker — the CLI, and later Streams and Connect — reaches a
broker only through these three functions (DESIGN.md §1), so that pointing them at any Kafka
cluster works unchanged (and :func:`watermarks` asks a consumer where partitions start and end
the way Kafka's consumer does, riding out a leader that moved)::

    from sluice import clients

    producer = clients.producer("localhost:9092", **{"compression.type": "zstd"})
    consumer = clients.consumer("localhost:9092", **{"group.id": "orders"})
    admin = clients.admin("localhost:9092")

Keyword arguments are librdkafka properties, taken literally (dotted names go through a ``**{}``
mapping; Python callbacks such as ``error_cb`` or ``on_delivery`` can be passed by name) and win
over the defaults below.

Defaults, beyond librdkafka's own:

- every client: a ``client.id`` naming its role (``sluice-producer``, ``sluice-consumer``,
  ``sluice-admin``) so that broker logs say who connected; librdkafka's log lines go to the Python
  logger ``sluice.rdkafka`` (served by ``poll()``) instead of straight to stderr.
- admin: ``allow.auto.create.topics=false``. The admin client is a producer-type handle inside
  librdkafka, which would otherwise let a mere metadata look-up of a missing topic create it on a
  broker with ``auto.create.topics.enable=true``.
- consumer: ``fetch.queue.backoff.ms=50`` (librdkafka: 1000). Once a partition's local queue holds
  ``queued.min.messages``, librdkafka waits this long before fetching it again; at 1 s any reader
  faster than ~100,000 records/s idles between fetches (a bare ``consume()`` loop read 160,000
  records/s at the default and 600,000/s at 50 ms, on either broker).
- consumer without a ``group.id``: an *assign-only* consumer (the caller picks partitions with
  ``assign()``). librdkafka insists on a group id, so a private one is made up and offsets are
  neither stored nor committed, so it can never touch a real group's offsets.

>>> config = _config("localhost:9092", _ADMIN_DEFAULTS, {"client.id": "me"})
>>> config["client.id"], config["allow.auto.create.topics"]
('me', False)
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "RDKAFKA_LOGGER",
    "admin",
    "committed",
    "consumer",
    "producer",
    "retrying",
    "watermarks",
]

T = TypeVar("T")

DEFAULT_BOOTSTRAP = "localhost:9092"
"""Where clients look for a broker when nothing else is said (Kafka's habit)."""

RDKAFKA_LOGGER = logging.getLogger("sluice.rdkafka")
"""The logger that receives librdkafka's own log lines."""

_PRODUCER_DEFAULTS: Mapping[str, Any] = {"client.id": "sluice-producer"}
_CONSUMER_DEFAULTS: Mapping[str, Any] = {
    "client.id": "sluice-consumer",
    # librdkafka stops fetching a partition for this long once its local queue holds
    # queued.min.messages (100,000); at its default of 1 s an application that reads faster than
    # 100,000 records/s waits for the next fetch (bare consume(): 160,000/s, 600,000/s at 50 ms)
    "fetch.queue.backoff.ms": 50,
}
_ADMIN_DEFAULTS: Mapping[str, Any] = {
    "client.id": "sluice-admin",
    "allow.auto.create.topics": False,
}


def _config(
    bootstrap: str, defaults: Mapping[str, Any], overrides: Mapping[str, Any]
) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "logger": RDKAFKA_LOGGER}
    config.update(defaults)
    config.update(overrides)
    return config


def producer(bootstrap: str, **overrides: Any) -> Producer:
    """A producer for the cluster at ``bootstrap`` (``host:port[,host:port…]``)."""
    return Producer(_config(bootstrap, _PRODUCER_DEFAULTS, overrides))


def consumer(bootstrap: str, **overrides: Any) -> Consumer:
    """A consumer; without a ``group.id`` override, an assign-only one that never commits."""
    config = _config(bootstrap, _CONSUMER_DEFAULTS, overrides)
    if "group.id" not in config:
        config["group.id"] = f"sluice-assign-{uuid.uuid4().hex}"
        config["enable.auto.commit"] = False
        config["enable.auto.offset.store"] = False
    return Consumer(config)


def admin(bootstrap: str, **overrides: Any) -> AdminClient:
    """An admin client that never auto-creates a topic by looking it up."""
    return AdminClient(_config(bootstrap, _ADMIN_DEFAULTS, overrides))


MOVING_ERRORS = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.BROKER_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._DESTROY_BROKER,  # the leader left the metadata while the query waited for it
    }
)
"""Errors of a watermark query that a later one may not get: the partition's leader moved or
is being elected, a broker went away (Kafka's consumer retries them within
``default.api.timeout.ms``)."""


ATTEMPT_S = 2.0
"""How long :func:`watermarks` waits for one answer before it refreshes the metadata and asks
again: a query to a leader that died waits in librdkafka's queue for that broker (``Connection
refused`` at each reconnect) until its timeout, while the metadata already names another."""


def watermarks(
    consumer: Consumer, partitions: Iterable[TopicPartition], timeout_s: float
) -> list[tuple[int, int]]:
    """The start and end of each of ``partitions`` (the log start offset, and the high
    watermark — the last stable offset for a ``read_committed`` consumer), asked of its leader,
    in order.

    librdkafka answers a query whose leader just moved with NOT_LEADER_FOR_PARTITION, and holds
    one whose leader died until it times out, and does not refresh the assign-only consumer's
    metadata itself: after such an error (or any of :data:`MOVING_ERRORS`; each try waits
    :data:`ATTEMPT_S` at most), the topic's metadata is asked for again and the query repeated,
    until ``timeout_s`` has passed in all; then, and for any other error, the
    ``KafkaException`` is raised as it came.
    """
    deadline = time.monotonic() + timeout_s

    def moving(error: KafkaError) -> bool:
        return error.code() in MOVING_ERRORS

    def ask(partition: TopicPartition) -> tuple[int, int]:
        def query(timeout: float) -> tuple[int, int]:
            low, high = consumer.get_watermark_offsets(partition, timeout=timeout)
            return int(low), int(high)

        def refresh(error: KafkaError) -> None:
            with contextlib.suppress(KafkaException):  # the next query says what is wrong
                consumer.list_topics(partition.topic, timeout=2)

        return retrying(
            query, moving, deadline - time.monotonic(), between=refresh, attempt_s=ATTEMPT_S
        )

    return [ask(partition) for partition in partitions]


COORDINATOR_ERRORS = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.UNSTABLE_OFFSET_COMMIT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._WAIT_COORD,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
    }
)
"""Errors of an offset fetch that a later one may not get: the group's coordinator moved, is
loading, or was away; a transaction on the offsets not yet decided."""


def committed(
    consumer: Consumer, partitions: list[TopicPartition], timeout_s: float
) -> list[TopicPartition]:
    """The group's committed offsets of ``partitions`` (``OFFSET_INVALID`` where none is), asked
    again while the answer is one of :data:`COORDINATOR_ERRORS`, until ``timeout_s`` has passed
    in all; then, and for any other error, the ``KafkaException`` is raised.

    Why not ``assign()`` at ``OFFSET_STORED``: when librdkafka's own fetch of the committed
    offsets fails (NOT_COORDINATOR while the coordinator moves), it reports the error and leaves
    the partitions assigned but never fetched, until they are assigned again.
    """

    def fetch(timeout: float) -> list[TopicPartition]:
        found: list[TopicPartition] = consumer.committed(partitions, timeout=timeout)
        for partition in found:
            if partition.error is not None:
                raise KafkaException(partition.error)
        return found

    return retrying(fetch, lambda error: error.code() in COORDINATOR_ERRORS, timeout_s)


def retrying(
    call: Callable[[float], T],
    again: Callable[[KafkaError], bool],
    timeout_s: float,
    *,
    between: Callable[[KafkaError], None] | None = None,
    backoff_s: float = 0.1,
    min_timeout_s: float = 0.5,
    attempt_s: float | None = None,
) -> T:
    """``call(timeout)`` again while it fails with an error ``again`` accepts, for ``timeout_s``
    in all: each try is given what is left (at least ``min_timeout_s``, at most ``attempt_s``
    when set); between tries, ``between(error)`` (a metadata refresh, a log line) and
    ``backoff_s`` of sleep. For any other error, or when no time is left for another try, the
    ``KafkaException`` is raised as it came.

    >>> tries = []
    >>> def flaky(timeout):
    ...     tries.append(timeout)
    ...     if len(tries) < 3:
    ...         raise KafkaException(KafkaError(KafkaError.NOT_COORDINATOR))
    ...     return "answer"
    >>> retrying(flaky, lambda e: e.code() in COORDINATOR_ERRORS, 30, backoff_s=0)
    'answer'
    >>> len(tries), tries[0] > 29
    (3, True)
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            left = deadline - time.monotonic()
            return call(max(left if attempt_s is None else min(left, attempt_s), min_timeout_s))
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if not again(error) or time.monotonic() + backoff_s >= deadline:
                raise
            if between is not None:
                between(error)
            time.sleep(backoff_s)
