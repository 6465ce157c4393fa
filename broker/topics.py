"""Topics and their partitions: created, altered, deleted, and persisted in the data directory.

On-disk format (beside the partition directories ``<topic>-<n>/`` that hold the logs)::

    <log_dir>/meta.properties                  cluster.id, node.id, version (as Kafka writes it)
    <data_dir>/__topics/<topic>.json           {"name", "topic_id", "partitions", "configs"}
    <log_dir>/<topic>-<n>/partition.metadata   the topic id, as Kafka writes it

With several log directories (``log.dirs``, :mod:`sluice.broker.log_dirs`) ``<data_dir>`` is the
first one (the metadata directory); a partition directory is in whichever log directory holds
it, a new one in the directory holding the fewest partitions. A partition whose directory went
offline stays known (:attr:`Partition.offline`) but is left out of :meth:`all_partitions`, so
housekeeping, flushes and checkpoints no longer touch it.

In a cluster a broker hosts only the partitions assigned to it: the topic file then also lists
them (``"hosted": [0, 2]``), and only those are opened at start (:meth:`TopicManager.host`).

A topic file is written to a temporary name, fsynced and renamed, so after a crash it is either
the old or the new version. A topic whose file exists is loaded at start; partition directories
are created (empty) when missing. Deleting a topic removes its file first, then renames each
partition directory to ``<topic>-<n>.<id>-delete`` and removes it, so a crash in between leaves
only directories that the next start removes.

Every topic has a Kafka topic id (:func:`~sluice.broker.log.partition_metadata.random_topic_id`),
given at creation, so a deleted and re-created topic has a new one. It is kept in the topic file
and, as Kafka keeps it, in each partition directory's ``partition.metadata``: a directory without
one (written before topic ids) gets it at start; a partition directory whose file names another
topic id is refused at start (:class:`PartitionMetadataError`, nothing is changed or deleted),
except when a topic is created, where a directory left behind by a deleted topic of the same name
is removed first. A topic file without an id takes the one of its first partition's file, or a new
one.

Not thread-safe: used from the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.config import TOPIC_KEYS, BrokerConfig, parse_topic_value, render
from sluice.broker.errors import KafkaError
from sluice.broker.future_replicas import FUTURE_SUFFIX, FutureReplicas
from sluice.broker.log import Log
from sluice.broker.log.files import write_atomically
from sluice.broker.log.partition_metadata import (
    PartitionMetadataError,
    random_topic_id,
    read_partition_metadata,
    write_partition_metadata,
)
from sluice.broker.log_dirs import LogDir, LogDirs
from sluice.errors import ConfigError, StorageError

if TYPE_CHECKING:
    from sluice.broker.replication.leadership import Leadership

log = logging.getLogger(__name__)

MAX_NAME_LENGTH = 249
MAX_PARTITIONS_PER_REQUEST = 10_000
"""The most partitions one CreateTopics or CreatePartitions entry may add (Kafka's controller
refuses larger requests the same way, KAFKA-14996): creating them is work the broker does at
once, and a request must not hold it for minutes."""
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
_META_DIR = "__topics"
_DELETE_SUFFIX = "-delete"


def validate_topic_name(name: str) -> None:
    """Kafka's rules for topic names; raises :class:`KafkaError` (INVALID_TOPIC_EXCEPTION).

    >>> validate_topic_name("orders.v1")
    >>> validate_topic_name("no spaces")
    Traceback (most recent call last):
    ...
    sluice.broker.errors.KafkaError: topic name 'no spaces' has characters other than ASCII ...
    """
    if not name or name in (".", ".."):
        raise KafkaError(ErrorCode.invalid_topic_exception, f"topic name {name!r} is illegal")
    if len(name) > MAX_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f"topic name is longer than {MAX_NAME_LENGTH} characters",
        )
    if not _LEGAL.match(name):
        raise KafkaError(
            ErrorCode.invalid_topic_exception,
            f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_', '-'",
        )


def check_partitions_added(count: int) -> None:
    """Refuse a request adding more than :data:`MAX_PARTITIONS_PER_REQUEST` partitions."""
    if count > MAX_PARTITIONS_PER_REQUEST:
        raise KafkaError(
            ErrorCode.policy_violation,
            f"Excessively large number of partitions per request: {count} "
            f"(at most {MAX_PARTITIONS_PER_REQUEST})",
        )


@dataclass(eq=False)
class Partition:
    """One partition: its log, the fetch requests waiting for data on it, and the counters of
    :mod:`sluice.broker.metrics` (added to once per batch or read, never per record)."""

    topic: str
    index: int
    log: Log
    is_leader: bool = True
    """False while this broker follows the partition's leader (in a cluster): clients are then
    answered NOT_LEADER_OR_FOLLOWER."""
    leadership: Leadership | None = None
    """In a cluster, while this broker leads the partition: its record of the followers, the
    high watermark and the ``acks=all`` waiters. None on one node and on a follower."""
    waiters: set[asyncio.Future[None]] = field(default_factory=set)
    bytes_in: int = 0
    messages_in: int = 0
    bytes_out: int = 0
    """Bytes of batches fetched by consumers (followers' fetches are replication bytes)."""
    total_produce_requests: int = 0
    failed_produce_requests: int = 0
    replication_bytes_in: int = 0
    """Bytes of batches this broker, as a follower, fetched from the leader."""
    replication_bytes_out: int = 0
    """Bytes of batches this broker, as the leader, sent to followers."""
    reassignment_bytes_in: int = 0
    """Of :attr:`replication_bytes_in`, those fetched by a replica a reassignment adds."""
    reassignment_bytes_out: int = 0
    """Of :attr:`replication_bytes_out`, those sent while a reassignment adds replicas."""
    adding_replicas: tuple[int, ...] = ()
    """In a cluster, the replicas a reassignment in progress is adding (empty: none)."""
    log_dir: LogDir | None = None
    """The log directory holding the partition (None: built outside a :class:`TopicManager`)."""

    @property
    def offline(self) -> bool:
        """The partition's log directory failed: clients get KAFKA_STORAGE_ERROR."""
        return self.log_dir is not None and not self.log_dir.online

    def appended(self, now_ms: int) -> None:
        """The leader appended to the log: in a cluster the high watermark advances as far as
        the ISR allows (:meth:`Leadership.appended`); waiting fetches wake."""
        if self.leadership is not None:
            self.leadership.appended(now_ms)
        self.notify()

    def notify(self) -> None:
        """Wake fetch requests waiting for new data."""
        for waiter in self.waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.waiters.clear()


@dataclass(eq=False)
class Topic:
    name: str
    topic_id: uuid.UUID
    overrides: dict[str, str]
    config: dict[str, Any]
    partition_count: int = 0
    """How many partitions the topic has (in a cluster, more than this broker hosts)."""
    partitions: dict[int, Partition] = field(default_factory=dict)
    """The partitions whose replica this broker hosts, by index: all of them on one node."""
    in_cluster: bool = False
    """A cluster's topic (its metadata lives in the cluster's store; ``partitions`` are the
    replicas assigned to this broker), or one node's (False)."""

    @property
    def internal(self) -> bool:
        return self.name.startswith("__")


class TopicManager:
    """Every topic of the broker, keyed by name and by id."""

    def __init__(
        self,
        log_dirs: LogDirs | Path,
        broker_config: BrokerConfig,
        clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.log_dirs = log_dirs if isinstance(log_dirs, LogDirs) else LogDirs([log_dirs])
        """Where partitions live (``log.dirs``); the first also holds ``__topics/``."""
        self.data_dir = self.log_dirs.metadata_dir
        self.broker_config = broker_config
        self.topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        self._meta = self.data_dir / _META_DIR
        self._flusher = ThreadPoolExecutor(1, thread_name_prefix="sluice-log-flusher")
        """Flushes every log's rolled segments, in the order of the rolls."""
        self.futures = FutureReplicas(clock, self._flusher)
        """Replicas moving to another log directory (AlterReplicaLogDirs)."""
        self.preferred_dirs: dict[tuple[str, int], LogDir] = {}
        """Where a partition not hosted yet is to be created (AlterReplicaLogDirs before the
        replica exists, Kafka's ``preferredLogDirs``)."""

    # -- lifecycle ------------------------------------------------------------------------

    def load(self) -> None:
        """Open every persisted topic (recovering its logs) and finish interrupted deletes."""
        self._meta.mkdir(parents=True, exist_ok=True)
        for directory in self.log_dirs.online():
            for suffix in (_DELETE_SUFFIX, FUTURE_SUFFIX):  # a move a restart cut short
                for leftover in directory.path.glob(f"*{suffix}"):
                    shutil.rmtree(leftover, ignore_errors=True)
        for path in sorted(self._meta.glob("*.json")):
            meta = json.loads(path.read_text())
            overrides = {k: str(v) for k, v in meta.get("configs", {}).items()}
            saved_id = meta.get("topic_id")
            topic = Topic(
                meta["name"],
                uuid.UUID(saved_id) if saved_id else self._unsaved_id(meta["name"]),
                overrides,
                self.broker_config.topic_config(overrides),
            )
            topic.in_cluster = "hosted" in meta
            if not saved_id:
                self._save(topic, int(meta["partitions"]))
            topic.partition_count = int(meta["partitions"])
            for index in meta.get("hosted", range(topic.partition_count)):
                topic.partitions[index] = self._open_partition(topic, index)
            self.topics[topic.name] = topic
            self._by_id[topic.topic_id] = topic
        log.info("loaded %d topics", len(self.topics))

    def close(self) -> None:
        try:
            self.futures.close()
            for partition in self.all_partitions():
                partition.log.close()
        finally:
            self._flusher.shutdown()

    # -- queries --------------------------------------------------------------------------

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def partition(self, name: str, index: int) -> Partition | None:
        topic = self.topics.get(name)
        return None if topic is None else topic.partitions.get(index)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        """The topic with this Kafka topic id (a dict lookup)."""
        return self._by_id.get(topic_id)

    def all_partitions(self) -> Iterator[Partition]:
        """Every hosted partition whose log directory is online."""
        for topic in list(self.topics.values()):
            for partition in list(topic.partitions.values()):
                if not partition.offline:
                    yield partition

    def in_dir(self, directory: LogDir) -> list[Partition]:
        """The hosted partitions whose log is in ``directory`` (online or not)."""
        return [
            partition
            for topic in list(self.topics.values())
            for partition in topic.partitions.values()
            if partition.log_dir is directory
        ]

    def dir_failed(self, directory: LogDir) -> list[Partition]:
        """``directory`` went offline: close its partitions' logs (errors ignored: the disk
        failed) and wake their waiting fetches; return them."""
        self.futures.drop_touching(directory)
        failed = self.in_dir(directory)
        for partition in failed:
            partition.notify()
            with contextlib.suppress(OSError, StorageError):
                partition.log.close()
        return failed

    # -- changes --------------------------------------------------------------------------

    def check_create(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        overrides: Mapping[str, str | None],
        *,
        existing: Collection[str] | None = None,
        brokers: int = 1,
    ) -> dict[str, str]:
        """Validate a CreateTopics entry; return the textual config overrides to apply.
        ``existing``: the cluster's topics (default: this node's); ``brokers``: how many are
        alive to hold replicas."""
        validate_topic_name(name)
        known = self.topics if existing is None else existing
        if name in known:
            raise KafkaError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        if partitions <= 0:
            raise KafkaError(ErrorCode.invalid_partitions, "number of partitions must be positive")
        check_partitions_added(partitions)
        if replication_factor > brokers:
            raise KafkaError(
                ErrorCode.invalid_replication_factor,
                f"Replication factor: {replication_factor} larger than available brokers: "
                f"{brokers}.",
            )
        if replication_factor == 0 or replication_factor < -1:
            raise KafkaError(
                ErrorCode.invalid_replication_factor, "replication factor must be positive"
            )
        collision = next((t for t in known if t.replace(".", "_") == name.replace(".", "_")), None)
        if collision is not None:
            raise KafkaError(
                ErrorCode.invalid_topic_exception,
                f"topic {name!r} collides with {collision!r} ('.' and '_' collide)",
            )
        return self.check_configs(overrides)

    def check_configs(self, overrides: Mapping[str, str | None]) -> dict[str, str]:
        result = {}
        for key, value in overrides.items():
            if value is None:
                continue
            try:
                parse_topic_value(key, value)
            except ConfigError as exc:
                message = (
                    f"Unknown topic config name: {key}"
                    if key not in TOPIC_KEYS
                    else f"Invalid value {value} for configuration {key}: {exc.reason}"
                )
                raise KafkaError(ErrorCode.invalid_config, message) from None
            if key == "remote.storage.enable" and parse_topic_value(key, value):
                raise KafkaError(
                    ErrorCode.invalid_config,
                    "Tiered Storage functionality is disabled in the broker. "
                    "Topic cannot be configured with remote log storage.",
                )
            if (
                key in ("confluent.value.schema.validation", "confluent.key.schema.validation")
                and parse_topic_value(key, value)
                and not self.broker_config.values.get("confluent.schema.registry.url")
            ):
                raise KafkaError(
                    ErrorCode.invalid_config,
                    f"{key}=true needs a schema registry, but the broker has no "
                    "confluent.schema.registry.url",
                )
            result[key] = value
        return result

    def create(self, name: str, partitions: int, overrides: Mapping[str, str]) -> Topic:
        topic_id = random_topic_id()
        while topic_id in self._by_id:  # never in practice: 122 random bits
            topic_id = random_topic_id()
        topic = Topic(
            name, topic_id, dict(overrides), self.broker_config.topic_config(overrides), partitions
        )
        try:
            self._save(topic, partitions)
            counts = self._dir_counts()
            for index in range(partitions):
                topic.partitions[index] = self._open_partition(
                    topic, index, fresh=True, counts=counts
                )
        except (OSError, StorageError) as exc:  # a full or failing disk: leave nothing behind
            (self._meta / f"{name}.json").unlink(missing_ok=True)
            for partition in topic.partitions.values():
                with contextlib.suppress(OSError):
                    partition.log.close()
            for partition in topic.partitions.values():
                shutil.rmtree(partition.log.directory, ignore_errors=True)
            raise KafkaError(
                ErrorCode.kafka_storage_error, f"cannot create topic {name!r}: {exc}"
            ) from exc
        self.topics[name] = topic
        self._by_id[topic_id] = topic
        log.info("created topic %s with %d partitions", name, partitions)
        return topic

    def host(
        self,
        name: str,
        topic_id: uuid.UUID,
        partition_count: int,
        overrides: Mapping[str, str],
        index: int,
    ) -> Partition:
        """In a cluster: this broker's replica of partition ``index`` of a topic the cluster
        knows, opened (created when new). A local topic of that name with another id is what a
        deleted and re-created topic left behind: it goes first."""
        topic = self.topics.get(name)
        if topic is not None and topic.topic_id != topic_id:
            log.warning("%s: removing the replicas of deleted topic id %s", name, topic.topic_id)
            self.delete(topic)
            topic = None
        if topic is None:
            config = self.broker_config.topic_config(overrides)
            topic = Topic(name, topic_id, dict(overrides), config, partition_count, in_cluster=True)
            self.topics[name] = topic
            self._by_id[topic_id] = topic
        topic.partition_count = max(topic.partition_count, partition_count)
        partition = topic.partitions.get(index)
        if partition is None:
            partition = topic.partitions[index] = self._open_partition(topic, index, fresh=True)
            self._save(topic, topic.partition_count)
        return partition

    def unhost(self, topic: Topic, index: int) -> None:
        """In a cluster: remove this broker's replica of partition ``index`` (the topic goes
        with its last one)."""
        partition = topic.partitions.get(index)
        if partition is None:
            return
        if len(topic.partitions) == 1:
            self.delete(topic)
            return
        del topic.partitions[index]
        self._save(topic, topic.partition_count)
        self._remove_partition(topic, partition)

    def add_partitions(self, topic: Topic, count: int) -> None:
        self._save(topic, count)
        counts = self._dir_counts()
        for index in range(topic.partition_count, count):
            topic.partitions[index] = self._open_partition(topic, index, fresh=True, counts=counts)
        topic.partition_count = count

    def set_overrides(self, topic: Topic, overrides: Mapping[str, str]) -> None:
        """Replace the topic's config overrides and apply them to its logs."""
        config = self.broker_config.topic_config(overrides)
        topic.overrides, topic.config = dict(overrides), config
        self._save(topic, topic.partition_count)
        for partition in topic.partitions.values():
            partition.log.update_config(config)

    def set_broker_config(self, config: BrokerConfig) -> None:
        """New broker defaults (dynamic broker configs): every topic's config is recomputed
        and applied to its logs; overrides still win."""
        self.broker_config = config
        for topic in self.topics.values():
            topic.config = config.topic_config(topic.overrides)
            for partition in topic.partitions.values():
                partition.log.update_config(topic.config)

    def delete(self, topic: Topic) -> None:
        (self._meta / f"{topic.name}.json").unlink(missing_ok=True)
        del self.topics[topic.name]
        self._by_id.pop(topic.topic_id, None)
        for partition in topic.partitions.values():
            self._remove_partition(topic, partition)
        log.info("deleted topic %s", topic.name)

    def _remove_partition(self, topic: Topic, partition: Partition) -> None:
        self.futures.drop(topic.name, partition.index)
        partition.notify()
        directory = partition.log.directory
        if partition.offline:  # its disk failed: the directory stays (a topic re-created under
            return  # that name replaces it, its partition.metadata naming the old id)
        partition.log.close()
        doomed = directory.with_name(f"{directory.name}.{topic.topic_id.hex}{_DELETE_SUFFIX}")
        os.replace(directory, doomed)
        shutil.rmtree(doomed, ignore_errors=True)

    def describe_config(self, topic: Topic) -> list[tuple[str, str | None, bool]]:
        """``(name, value, is_topic_override)`` for every topic-level key."""
        return [
            (name, render(topic.config[name]), name in topic.overrides)
            for name in sorted(TOPIC_KEYS)
        ]

    # -- internals ------------------------------------------------------------------------

    def _dir_counts(self) -> dict[Path, int]:
        """How many hosted partitions each online log directory holds."""
        counts: dict[Path, int] = {}
        for partition in self.all_partitions():
            parent = partition.log.directory.parent
            counts[parent] = counts.get(parent, 0) + 1
        return counts

    def _open_partition(
        self,
        topic: Topic,
        index: int,
        *,
        fresh: bool = False,
        counts: dict[Path, int] | None = None,
    ) -> Partition:
        """Open a partition's log and check or record its topic id (``partition.metadata``).

        ``fresh``: the partition is being created, so a directory of the same name that records
        another topic id is what a deleted topic left behind, and is removed. ``counts``: the
        partitions per log directory (:meth:`_dir_counts`), kept up to date here by a caller
        opening many (computed when not given)."""
        name = f"{topic.name}-{index}"
        directory = self.log_dirs.locate(name)
        if directory is None:
            if counts is None:
                counts = self._dir_counts()
            preferred = self.preferred_dirs.pop((topic.name, index), None)
            if preferred is not None and preferred.online:
                directory = preferred.path / name
            else:
                directory = self.log_dirs.choose(counts).path / name
            counts[directory.parent] = counts.get(directory.parent, 0) + 1
        recorded = read_partition_metadata(directory)
        if recorded is not None and recorded != topic.topic_id:
            if not fresh:
                raise PartitionMetadataError(
                    f"{directory}: partition.metadata records topic id {recorded}, but topic "
                    f"{topic.name!r} has id {topic.topic_id} ({self._meta / topic.name}.json): "
                    "the directory belongs to another topic; move it away to start"
                )
            log.warning("%s: removing what deleted topic id %s left behind", directory, recorded)
            doomed = directory.with_name(f"{directory.name}.{recorded.hex}{_DELETE_SUFFIX}")
            os.replace(directory, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
            recorded = None
        partition_log = Log.open(directory, topic.config, flusher=self._flusher)
        if recorded is None:
            write_partition_metadata(directory, topic.topic_id)
        return Partition(topic.name, index, partition_log, log_dir=self.log_dirs.of(directory))

    def _unsaved_id(self, name: str) -> uuid.UUID:
        """The id of a topic whose file has none: its first partition's, else a new one."""
        directory = self.log_dirs.locate(f"{name}-0")
        recorded = None if directory is None else read_partition_metadata(directory)
        return recorded if recorded is not None else random_topic_id()

    def _save(self, topic: Topic, partitions: int) -> None:
        meta = {
            "name": topic.name,
            "topic_id": str(topic.topic_id),
            "partitions": partitions,
            "configs": topic.overrides,
        }
        if topic.in_cluster:
            meta["hosted"] = sorted(topic.partitions)
        write_atomically(self._meta / f"{topic.name}.json", json.dumps(meta, indent=1).encode())
