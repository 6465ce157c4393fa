"""A compacted topic read as a shared map: how distributed workers share configs, offsets and
status (``connect-configs``, ``connect-offsets``, ``connect-status``).

Every worker reads the whole topic from the start into a dict (a tombstone deletes a key), then
keeps following it in a background thread; writes go through a producer with ``acks=all`` and
are visible once read back (:meth:`TopicMap.put` waits for that when asked), so all workers
converge on the same map, in the topic's order. The topic is read ``read_committed`` (librdkafka's
default): records written in a transaction — the source offsets of an exactly-once source task
(:mod:`sluice.connect.runtime.exactly_once`) — count once committed, never if aborted, and "the end"
is the last stable offset. The topic is created compacted, with one
partition (Kafka's config topic must have one: the order of config records matters) and the
broker's ``default.replication.factor`` (KIP-464's -1: three copies on a cluster so configured).

Keys and values are JSON (Kafka Connect's formats for these topics).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

from sluice import clients
from sluice.connect.api.errors import ConnectError
from sluice.connect.runtime.backing_map import MemoryMap

__all__ = ["TopicMap", "ensure_topic"]

log = logging.getLogger("sluice.connect")


def ensure_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    compacted: bool = True,
    client_config: Mapping[str, Any] | None = None,
) -> None:
    """Create ``topic`` unless it exists, replicated as the broker's default says
    (``client_config``: librdkafka settings of the admin client, such as its security)."""
    admin = clients.admin(bootstrap, **(client_config or {}))
    if topic in admin.list_topics(timeout=30).topics:
        return
    config = {"cleanup.policy": "compact"} if compacted else {}
    futures = admin.create_topics([NewTopic(topic, partitions, -1, config=config)])
    try:
        futures[topic].result(30)
    except Exception as error:
        if "already exists" not in str(error).lower() and "TOPIC_ALREADY_EXISTS" not in str(error):
            raise ConnectError(f"cannot create {topic}: {error}") from error


def _assign_only() -> dict[str, Any]:
    """An assign-only consumer's settings: librdkafka insists on a group id and looks its
    coordinator up, which a broker with ACLs allows on groups prefixed ``connect-`` (the worker's
    usual ACL, as its sinks' groups are ``connect-<connector>``)."""
    return {
        "group.id": f"connect-assign-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
    }


class TopicMap:
    """A dict mirrored from a compacted topic; see the module docstring."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        *,
        on_change: Callable[[str, Any], None] | None = None,
        partitions: int = 1,
        client_config: Mapping[str, Any] | None = None,
    ) -> None:
        self.topic = topic
        self.on_change = on_change
        secured = dict(client_config or {})  # librdkafka settings of every client (security)
        ensure_topic(bootstrap, topic, partitions, client_config=secured)
        self._records = MemoryMap()
        """What has been read (its ``on_change`` unset: this map calls its own)."""
        self._lock = threading.Condition()
        self._read_offsets: dict[int, int] = {}
        self._producer = clients.producer(bootstrap, **{"acks": "all", "linger.ms": 0, **secured})
        committed = {"isolation.level": "read_committed", **_assign_only(), **secured}
        self._consumer = clients.consumer(bootstrap, **{"enable.partition.eof": False, **committed})
        # end offsets are asked by another client: a query on the consumer would wait for
        # the follower thread's consume() to return (read_committed: the last stable offset)
        self._watermarks = clients.consumer(bootstrap, **committed)
        metadata = self._consumer.list_topics(topic, timeout=30).topics[topic]
        self._partitions = sorted(metadata.partitions)
        self._consumer.assign(
            [TopicPartition(topic, p, OFFSET_BEGINNING) for p in self._partitions]
        )
        self._stop = threading.Event()
        self._read_to_end()
        self._thread = threading.Thread(target=self._follow, name=f"read-{topic}", daemon=True)
        self._thread.start()

    def _apply(self, messages: list[Any]) -> None:
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    log.warning("%s: %s", self.topic, error.str())
                continue
            key = message.key()
            if key is None:
                continue
            name = key.decode()
            raw = message.value()
            value = None if raw is None else json.loads(raw)
            with self._lock:
                self._records.load(name, value)  # decoded JSON already
                self._read_offsets[message.partition()] = message.offset() + 1
                self._lock.notify_all()
            if self.on_change is not None:
                self.on_change(name, value)
        self._advance()

    def _advance(self) -> None:
        """Take the consumer's positions as read: they move past what a record never shows —
        transaction markers, aborted records (read_committed), keyless records."""
        positions = self._consumer.position(
            [TopicPartition(self.topic, p) for p in self._partitions]
        )
        with self._lock:
            moved = False
            for position in positions:
                if position.offset > self._read_offsets.get(position.partition, 0):
                    self._read_offsets[position.partition] = position.offset
                    moved = True
            if moved:
                self._lock.notify_all()

    def _ends(self) -> dict[int, int]:
        wanted = [TopicPartition(self.topic, p) for p in self._partitions]
        found = clients.watermarks(self._watermarks, wanted, 30)
        return {p: high for p, (_, high) in zip(self._partitions, found, strict=True)}

    def _read_to_end(self, timeout_s: float = 60.0) -> None:
        ends = self._ends()
        deadline = time.monotonic() + timeout_s
        while any(self._read_offsets.get(p, 0) < end for p, end in ends.items()):
            if time.monotonic() > deadline:
                raise ConnectError(f"could not read {self.topic} to its end in {timeout_s} s")
            self._apply(self._consumer.consume(1000, 0.2))

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                self._apply(self._consumer.consume(1000, 0.2))
            except Exception as error:  # keep following: a bad record must not stop the worker
                log.error("%s: %s", self.topic, error)

    def get(self, key: str) -> Any:
        """The current value of ``key`` (None: absent)."""
        return self._records.get(key)

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        """Entries whose key starts with ``prefix``, in key order."""
        return self._records.items(prefix)

    def put(self, key: str, value: Any, *, wait: bool = True, partition: int | None = None) -> None:
        """Write ``key`` (None: a tombstone); with ``wait``, return once it is read back."""
        failures: list[str] = []

        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is not None:
                failures.append(error.str())

        data = None if value is None else json.dumps(value, sort_keys=True).encode()
        if partition is None:
            self._producer.produce(self.topic, data, key.encode(), on_delivery=delivered)
        else:
            self._producer.produce(
                self.topic, data, key.encode(), partition=partition, on_delivery=delivered
            )
        self._producer.flush(30)
        if failures:
            raise ConnectError(f"cannot write {key} to {self.topic}: {failures[0]}")
        if wait:
            self.sync()

    def sync(self, timeout_s: float = 30.0) -> None:
        """Wait until everything written to the topic so far has been read."""
        ends = self._ends()
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while any(self._read_offsets.get(p, 0) < end for p, end in ends.items()):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ConnectError(f"{self.topic}: not read back within {timeout_s} s")
                self._lock.wait(remaining)

    def close(self) -> None:
        """Stop following the topic."""
        self._stop.set()
        self._thread.join(5)
        self._consumer.close()
        self._watermarks.close()
        self._producer.flush(10)
