"""API v2's consumer instances: one confluent-kafka ``Consumer`` each, kept by the proxy
between requests and closed when deleted or idle too long.

An instance is created in a group with a name (one made up if not given) and an embedded
format (``binary``, ``json``, ``avro``, ``jsonschema``, ``protobuf``); its records are answered
in that format. Its settings are Confluent's: ``auto.offset.reset`` (``earliest``/``latest``),
``auto.commit.enable``, ``fetch.min.bytes``, ``consumer.request.timeout.ms`` (how long a read
waits for records, 1000 by default). An instance idle for longer than
``consumer.instance.timeout.ms`` (300,000 by default) is closed by :meth:`ConsumerInstances.expire`,
which the proxy calls every second; a request for it is then answered 40403.

Every method of an instance blocks (librdkafka calls): the proxy calls them from worker
threads; an instance serves one request at a time (a lock), others wait.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from sluice.rest_proxy.errors import (
    BAD_REQUEST,
    CONSUMER_ALREADY_EXISTS,
    CONSUMER_ALREADY_SUBSCRIBED,
    CONSUMER_INSTANCE_NOT_FOUND,
    INVALID_CONSUMER_CONFIG,
    RestError,
    from_kafka,
)
from sluice.rest_proxy.formats import EmbeddedFormat, decode_plain
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.schemas import SchemaSerdes

__all__ = ["V2_FORMATS", "ConsumerInstance", "ConsumerInstances", "InstanceConfig"]

V2_FORMATS = ("binary", "json", "avro", "jsonschema", "protobuf")
"""The embedded formats of v2 consumers."""

DEFAULT_REQUEST_TIMEOUT_MS = 1000
DEFAULT_INSTANCE_TIMEOUT_MS = 300_000
_CONFIG_KEYS = {
    "name",
    "format",
    "auto.offset.reset",
    "auto.commit.enable",
    "fetch.min.bytes",
    "consumer.request.timeout.ms",
    "id",
}


def _invalid(message: str) -> RestError:
    return RestError(INVALID_CONSUMER_CONFIG, f"Invalid consumer configuration: {message}")


@dataclass(frozen=True)
class InstanceConfig:
    """A create request's settings, checked.

    >>> InstanceConfig.parse({"format": "JSON", "auto.offset.reset": "earliest"}).fmt
    'json'
    """

    name: str | None = None
    fmt: str = "binary"
    auto_offset_reset: str | None = None
    auto_commit: bool | None = None
    fetch_min_bytes: int | None = None
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS

    @classmethod
    def parse(cls, body: Any) -> InstanceConfig:
        """From a create request's JSON (42204 for a bad setting, 400 for a bad body)."""
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise RestError(BAD_REQUEST, "The request body must be a JSON object")
        unknown = sorted(set(body) - _CONFIG_KEYS)
        if unknown:
            raise _invalid(f"unknown setting(s) {', '.join(unknown)}")
        name = body.get("name", body.get("id"))
        if name is not None and (not isinstance(name, str) or not name or "/" in name):
            raise _invalid("name must be a non-empty string without '/'")
        fmt = str(body.get("format") or "binary").lower()
        if fmt not in V2_FORMATS:
            raise _invalid(f"format must be one of {', '.join(V2_FORMATS)}")
        reset = body.get("auto.offset.reset")
        if reset is not None:
            reset = str(reset).lower()
            reset = {"smallest": "earliest", "largest": "latest"}.get(reset, reset)
            if reset not in ("earliest", "latest", "none"):
                raise _invalid("auto.offset.reset must be earliest, latest or none")
        commit = body.get("auto.commit.enable")
        if commit is not None:
            text = str(commit).lower()
            if text not in ("true", "false"):
                raise _invalid("auto.commit.enable must be true or false")
            commit = text == "true"
        return cls(
            name=name,
            fmt=fmt,
            auto_offset_reset=reset,
            auto_commit=commit,
            fetch_min_bytes=_number(body.get("fetch.min.bytes"), "fetch.min.bytes", 1),
            request_timeout_ms=_number(
                body.get("consumer.request.timeout.ms"), "consumer.request.timeout.ms", 0
            )
            or DEFAULT_REQUEST_TIMEOUT_MS,
        )


def _number(value: Any, name: str, minimum: int) -> int | None:
    if value is None:
        return None
    try:
        number = int(str(value))
    except ValueError:
        raise _invalid(f"{name} must be an integer") from None
    if number < minimum:
        raise _invalid(f"{name} must be at least {minimum}")
    return number


@dataclass
class ConsumerInstance:
    """A v2 consumer instance."""

    group: str
    name: str
    config: InstanceConfig
    consumer: Consumer
    serdes: SchemaSerdes
    clock: Callable[[], float] = time.monotonic
    last_used: float = 0.0
    subscription: list[str] = field(default_factory=list)
    pattern: str | None = None
    assignment: list[TopicPartition] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _pending: list[Message] = field(default_factory=list)
    closed: bool = False

    @property
    def fmt(self) -> str:
        """Its embedded format (``binary``, ``json``…)."""
        return self.config.fmt

    def touch(self) -> None:
        """Mark it used now."""
        self.last_used = self.clock()

    def subscribe(self, topics: list[str], pattern: str | None) -> None:
        """Subscribe to ``topics`` or to a ``pattern`` (40901 if it is assigned partitions)."""
        if self.assignment:
            raise RestError(
                CONSUMER_ALREADY_SUBSCRIBED,
                "Consumer cannot subscribe the specified "
                "target because it has already been assigned partitions.",
            )
        wanted = (
            [f"^{pattern}"]
            if pattern is not None and not pattern.startswith("^")
            else ([pattern] if pattern is not None else topics)
        )
        self.consumer.subscribe(wanted)
        self.subscription = list(topics)
        self.pattern = pattern
        self._pending.clear()

    def unsubscribe(self) -> None:
        """Drop the subscription."""
        self.consumer.unsubscribe()
        self.subscription, self.pattern = [], None
        self._pending.clear()

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Assign partitions by hand (40901 if it is subscribed)."""
        if self.subscription or self.pattern:
            raise RestError(
                CONSUMER_ALREADY_SUBSCRIBED,
                "Consumer cannot be assigned partitions "
                "because it has already subscribed to topics.",
            )
        self.consumer.assign(partitions)
        self.assignment = list(partitions)
        self._pending.clear()

    def seek(self, partitions: list[TopicPartition]) -> None:
        """Move positions (the offsets given, or OFFSET_BEGINNING/OFFSET_END)."""
        assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        for tp in partitions:
            if (tp.topic, tp.partition) not in assigned:
                raise RestError(
                    40903,
                    f"Illegal state: No current assignment for partition {tp.topic}-{tp.partition}",
                )
        self._pending = [
            m
            for m in self._pending
            if (m.topic(), m.partition()) not in {(t.topic, t.partition) for t in partitions}
        ]
        if self.assignment:
            # assigned by hand: assign again with the new positions (a seek right after
            # assign() fails in librdkafka until fetching has started)
            wanted = {(tp.topic, tp.partition): tp.offset for tp in partitions}
            current = {
                (tp.topic, tp.partition): tp.offset
                for tp in self.consumer.position(self.assignment)
            }
            self.consumer.assign(
                [
                    TopicPartition(
                        tp.topic,
                        tp.partition,
                        wanted.get(
                            (tp.topic, tp.partition),
                            current.get((tp.topic, tp.partition), tp.offset),
                        ),
                    )
                    for tp in self.assignment
                ]
            )
            return
        for tp in partitions:
            try:
                self.consumer.seek(tp)
            except Exception as error:
                raise RestError(40903, f"Illegal state: {error}") from None

    def records(self, timeout_ms: int | None, max_bytes: int | None) -> list[dict[str, Any]]:
        """The next records, within ``timeout_ms`` (the instance's request timeout by
        default) and up to ``max_bytes`` of keys and values."""
        deadline = (
            self.clock()
            + (timeout_ms if timeout_ms is not None else self.config.request_timeout_ms) / 1000
        )
        budget = max_bytes if max_bytes is not None else 64 * 1024 * 1024
        taken: list[Message] = []
        size = 0
        while True:
            if not self._pending:
                wait = 0.0 if taken else max(0.0, deadline - self.clock())
                self._pending = [
                    m for m in self.consumer.consume(500, timeout=wait) if not _skippable(m)
                ]
            if not self._pending:
                if taken or self.clock() >= deadline:
                    break
                continue
            message = self._pending[0]
            error = message.error()
            if error is not None:
                self._pending.pop(0)
                raise from_kafka(error, topic=message.topic() or "")
            weight = len(message.key() or b"") + len(message.value() or b"")
            if taken and size + weight > budget:
                break
            taken.append(self._pending.pop(0))
            size += weight
            if size >= budget:
                break
        found = [self._record(m) for m in taken]
        # what the client got (not what waits in _pending) is what a commit without a body,
        # or the auto-commit, commits
        ends: dict[tuple[str, int], int] = {}
        for message in taken:
            ends[(message.topic() or "", message.partition() or 0)] = (message.offset() or 0) + 1
        if ends:
            # a partition taken away meanwhile: its new owner reads from the commit
            with contextlib.suppress(KafkaException):
                self.consumer.store_offsets(
                    offsets=[TopicPartition(t, p, o) for (t, p), o in ends.items()]
                )
        return found

    def _record(self, message: Message) -> dict[str, Any]:
        topic = message.topic() or ""
        return {
            "topic": topic,
            "key": self._decode(topic, True, message.key()),
            "value": self._decode(topic, False, message.value()),
            "partition": message.partition(),
            "offset": message.offset(),
        }

    def _decode(self, topic: str, is_key: bool, data: bytes | None) -> Any:
        fmt = EmbeddedFormat.parse(self.fmt)
        try:
            if fmt.needs_schema:
                return self.serdes.deserialize(topic, is_key, fmt, data)
            return decode_plain(fmt, data)
        except RestError:
            raise
        except Exception as error:
            raise RestError(
                50002, f"Kafka error: cannot deserialize a record of {topic} as {self.fmt}: {error}"
            ) from None

    def commit(self, offsets: list[TopicPartition] | None) -> None:
        """Commit ``offsets`` (the next offset to read of each), or what was read."""
        try:
            if offsets is None:
                self.consumer.commit(asynchronous=False)
            else:
                self.consumer.commit(offsets=offsets, asynchronous=False)
        except Exception as error:
            if "_NO_OFFSET" in str(error):
                return  # nothing read yet: nothing to commit
            raise from_kafka(error) from None

    def committed(self, partitions: list[TopicPartition], timeout_s: float) -> list[TopicPartition]:
        """The group's committed offsets of ``partitions``."""
        try:
            return list(self.consumer.committed(partitions, timeout=timeout_s))
        except Exception as error:
            raise from_kafka(error) from None

    def close(self) -> None:
        """Leave the group and close the consumer."""
        if not self.closed:
            self.closed = True
            self.consumer.close()


def _skippable(message: Message) -> bool:
    error = message.error()
    return error is not None and error.code() == KafkaError._PARTITION_EOF


class ConsumerInstances:
    """The proxy's consumer instances by (group, name)."""

    def __init__(
        self,
        pool: ClientPool,
        serdes: SchemaSerdes,
        instance_timeout_ms: int = DEFAULT_INSTANCE_TIMEOUT_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self.serdes = serdes
        self.instance_timeout_ms = instance_timeout_ms
        self.clock = clock
        self._instances: dict[tuple[str, str], ConsumerInstance] = {}
        self._lock = threading.Lock()

    def create(self, group: str, config: InstanceConfig) -> ConsumerInstance:
        """A new instance in ``group`` (40902 if its name is taken)."""
        name = config.name or f"rest-consumer-{uuid.uuid4().hex[:12]}"
        with self._lock:
            if (group, name) in self._instances:
                raise RestError(
                    CONSUMER_ALREADY_EXISTS,
                    "Consumer with specified consumer ID "
                    "already exists in the specified consumer group.",
                )
        settings: dict[str, Any] = {
            "group.id": group,
            "client.id": name,
            "enable.auto.offset.store": False,  # stored once the client has the records
        }
        if config.auto_offset_reset is not None:
            settings["auto.offset.reset"] = config.auto_offset_reset
        if config.auto_commit is not None:
            settings["enable.auto.commit"] = config.auto_commit
        if config.fetch_min_bytes is not None:
            settings["fetch.min.bytes"] = config.fetch_min_bytes
        try:
            consumer = self.pool.consumer(**settings)
        except Exception as error:
            raise _invalid(str(error)) from None
        instance = ConsumerInstance(group, name, config, consumer, self.serdes, self.clock)
        instance.touch()
        with self._lock:
            if (group, name) in self._instances:
                consumer.close()
                raise RestError(
                    CONSUMER_ALREADY_EXISTS,
                    "Consumer with specified consumer ID "
                    "already exists in the specified consumer group.",
                )
            self._instances[(group, name)] = instance
        return instance

    def get(self, group: str, name: str) -> ConsumerInstance:
        """An instance (40403 if there is none), marked used."""
        with self._lock:
            instance = self._instances.get((group, name))
        if instance is None or instance.closed:
            raise RestError(CONSUMER_INSTANCE_NOT_FOUND, "Consumer instance not found.")
        instance.touch()
        return instance

    def delete(self, group: str, name: str) -> None:
        """Close and forget an instance (40403 if there is none)."""
        with self._lock:
            instance = self._instances.pop((group, name), None)
        if instance is None:
            raise RestError(CONSUMER_INSTANCE_NOT_FOUND, "Consumer instance not found.")
        with instance.lock:
            instance.close()

    def expire(self) -> list[tuple[str, str]]:
        """Close the instances idle longer than the instance timeout; their (group, name)."""
        limit = self.clock() - self.instance_timeout_ms / 1000
        with self._lock:
            idle = [
                key
                for key, i in self._instances.items()
                if i.last_used < limit and not i.lock.locked()
            ]
            expired = [self._instances.pop(key) for key in idle]
        for instance in expired:
            with instance.lock:
                instance.close()
        return idle

    def close_all(self) -> None:
        """Close every instance (the proxy stops)."""
        with self._lock:
            every = list(self._instances.values())
            self._instances.clear()
        for instance in every:
            with instance.lock:
                instance.close()
