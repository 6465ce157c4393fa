"""The ``_schemas`` topic as the registry's record log (Confluent's ``KafkaStore``).

The topic is compacted and has exactly one partition (the records' order is the registry's
history); :meth:`KafkaLog.start` creates it when missing, with ``cleanup.policy=compact`` and the
broker's default replication factor, and refuses a topic of more partitions.

Every instance reads the topic from the beginning with an assign-only consumer (no group: each
instance reads everything) in a background thread, applying each record to its
:class:`~sluice.schema_registry.store.Store`; it serves requests only once it has read to the end
offset it saw at start (Confluent's ``waitForInit``). A write is produced with ``acks=all`` by an
idempotent producer and :meth:`KafkaLog.write` returns once the reader has applied it
(read-your-write); so a restart, which reads the same records again, rebuilds the same state.
A record this registry cannot decode is logged and skipped, never fatal.

Thread-safety: :meth:`write` and :meth:`catch_up` may be called from any thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    ConfigResource,
    NewTopic,
    ResourceType,
)

from sluice import clients
from sluice.errors import SluiceError
from sluice.schema_registry import errors
from sluice.schema_registry.log import Record
from sluice.schema_registry.records import decode_key, decode_value, encode_key, encode_value
from sluice.schema_registry.store import Store

__all__ = ["DEFAULT_TOPIC", "KafkaLog", "StoreStartError", "ensure_topic"]

log = logging.getLogger("sluice.schema_registry")

DEFAULT_TOPIC = "_schemas"
"""Confluent's ``kafkastore.topic`` default."""


class StoreStartError(SluiceError):
    """The ``_schemas`` topic cannot be created, is not fit, or cannot be read to its end."""


def ensure_topic(admin: Any, topic: str, timeout_s: float) -> None:
    """Create ``topic`` (compacted, one partition, the broker's replication factor) unless it
    exists; a topic with more than one partition is refused."""
    try:
        metadata = admin.list_topics(topic=topic, timeout=timeout_s).topics.get(topic)
    except KafkaException as error:
        raise StoreStartError(f"cannot look up {topic}: {error.args[0].str()}") from None
    if metadata is not None and metadata.error is None:
        if len(metadata.partitions) != 1:
            raise StoreStartError(
                f"{topic} has {len(metadata.partitions)} partitions; the schema registry's "
                "topic must have exactly one (the order of its records is its history)"
            )
        _check_compacted(admin, topic, timeout_s)
        return
    futures = admin.create_topics(
        [NewTopic(topic, 1, -1, config={"cleanup.policy": "compact"})],
        operation_timeout=timeout_s,
        request_timeout=timeout_s,
    )
    try:
        futures[topic].result(timeout_s)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise StoreStartError(f"cannot create {topic}: {error.args[0].str()}") from None
    log.info("created %s (compacted, 1 partition)", topic)


def _check_compacted(admin: Any, topic: str, timeout_s: float) -> None:
    """Refuse a topic that deletes old records (Confluent's check): the schemas would go."""
    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        entries = admin.describe_configs([resource], request_timeout=timeout_s)[resource].result(
            timeout_s
        )
    except KafkaException as error:
        log.warning("cannot check the cleanup.policy of %s: %s", topic, error.args[0].str())
        return
    entry = entries.get("cleanup.policy")
    policy = "" if entry is None or entry.value is None else str(entry.value)
    if "compact" not in policy.split(",") or "delete" in policy.split(","):
        raise StoreStartError(
            f"{topic} has cleanup.policy={policy or '(unknown)'}; the schema registry's topic "
            "must be compacted only (cleanup.policy=compact), or old schemas would be deleted"
        )


class KafkaLog:
    """The registry's records in a Kafka topic; see the module docstring."""

    def __init__(
        self,
        bootstrap: str,
        topic: str = DEFAULT_TOPIC,
        *,
        store: Store | None = None,
        client_config: Mapping[str, Any] | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        self._store = store if store is not None else Store()
        self._bootstrap = bootstrap
        self._config = dict(client_config or {})
        self._partition = TopicPartition(topic, 0)
        self._read = 0
        """The offset up to which records have been applied."""
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer = clients.producer(
            bootstrap,
            **{
                "client.id": "sluice-schema-registry",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 0,
                **self._config,
            },
        )
        self._consumer = clients.consumer(
            bootstrap, **{"client.id": "sluice-schema-registry-reader", **self._config}
        )
        self._watermarks = clients.consumer(
            bootstrap, **{"client.id": "sluice-schema-registry-ends", **self._config}
        )

    @property
    def store(self) -> Store:
        return self._store

    def start(self) -> None:
        """Create the topic if needed, then read it to its end (StoreStartError if not within
        the timeout); the reader keeps following it afterwards."""
        admin = clients.admin(self._bootstrap, **self._config)
        ensure_topic(admin, self.topic, self.timeout_s)
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        self._thread = threading.Thread(target=self._follow, name="schemas-reader", daemon=True)
        self._thread.start()
        try:
            self.catch_up()
        except errors.RegistryError as error:
            raise StoreStartError(error.message) from None
        log.info("read %s to offset %d", self.topic, self._read)

    def _end(self) -> int:
        try:
            [(_, high)] = clients.watermarks(self._watermarks, [self._partition], self.timeout_s)
        except KafkaException as error:
            raise errors.store_error(
                f"cannot read the end of {self.topic}: {error.args[0].str()}"
            ) from None
        return int(high)

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                # poll returns at the first record; consume(n, t) would wait out t for n (a
                # write waits for its record here: that wait was 0.2 s per registration)
                first = self._consumer.poll(0.2)
                self._apply([] if first is None else [first, *self._consumer.consume(499, 0)])
            except Exception:  # keep reading: one bad record must not stop the registry
                log.exception("reading %s", self.topic)
                time.sleep(0.2)

    def _apply(self, messages: list[Any]) -> None:
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    log.warning("%s: %s", self.topic, error.str())
                continue
            raw_key = message.key()
            try:
                key = decode_key(raw_key) if raw_key is not None else None
                if key is not None:
                    self._store.apply(key, decode_value(key, message.value()))
            except (ValueError, KeyError, TypeError) as bad:
                log.warning("%s offset %d: skipped a record: %s", self.topic, message.offset(), bad)
            with self._cond:
                self._read = max(self._read, message.offset() + 1)
                self._cond.notify_all()
        position = self._consumer.position([self._partition])[0].offset
        if position >= 0:
            with self._cond:
                if position > self._read:
                    self._read = position
                    self._cond.notify_all()

    def _wait_for(self, offset: int) -> None:
        deadline = time.monotonic() + self.timeout_s
        with self._cond:
            while self._read < offset:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise errors.timeout(
                        f"{self.topic} not read up to offset {offset} within {self.timeout_s:g} s "
                        f"(read up to {self._read})"
                    )
                self._cond.wait(remaining)

    def catch_up(self) -> None:
        """Return once every record written to the topic so far has been applied."""
        self._wait_for(self._end())

    def write(self, records: Sequence[Record]) -> None:
        """Produce ``records`` in order; return once the reader has applied them."""
        failures: list[str] = []
        offsets: list[int] = []

        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is not None:
                failures.append(error.str())
            else:
                offsets.append(message.offset())

        for key, value in records:
            self._producer.produce(
                self.topic,
                encode_value(value),
                encode_key(key),
                partition=0,
                on_delivery=delivered,
            )
        remaining = self._producer.flush(self.timeout_s)
        if failures:
            raise errors.store_error(f"cannot write to {self.topic}: {failures[0]}")
        if remaining or len(offsets) != len(records):
            raise errors.timeout(
                f"{self.topic}: the write was not acknowledged within {self.timeout_s:g} s"
            )
        self._wait_for(max(offsets) + 1)

    def close(self) -> None:
        """Stop reading; flush and close the clients."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._producer.flush(5)
        self._consumer.close()
        self._watermarks.close()
