"""The broker's state and its housekeeping: topics, producer ids, retention, compaction, flush.

``meta.properties`` in every log directory holds the cluster id and node id, as Kafka's does;
a log directory written by another node id or cluster is refused. The broker-level files live
in the first log directory (:mod:`sluice.broker.log_dirs`). A log directory that fails while
the broker runs goes offline (:meth:`Broker.storage_failed`); when the first or the last online
one goes, the broker stops (:attr:`Broker.request_stop`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sluice.broker.cluster.metadata_cache import PartitionInfo, TopicInfo
from sluice.broker.config import BrokerConfig
from sluice.broker.config_keys.security_keys import super_users
from sluice.broker.dynamic_config import DynamicBrokerConfigs
from sluice.broker.errors import KafkaError
from sluice.broker.fetch_session import FetchSessionCache
from sluice.broker.group.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sluice.broker.log.files import write_atomically
from sluice.broker.log_dirs import LogDir, LogDirs
from sluice.broker.producer_ids import (
    ClusterBlocks,
    LocalBlocks,
    ProducerIdManager,
    ProducerIdsUnavailableError,
)
from sluice.broker.quotas.manager import ClientQuotaManager
from sluice.broker.quotas.store import FileQuotaStore, QuotaStore
from sluice.broker.replication.quota import ReplicationThrottles
from sluice.broker.security.acl_store import AclStore, FileAclStore
from sluice.broker.security.authorizer import Authorizer
from sluice.broker.security.credential_store import FileScramStore, ScramStore
from sluice.broker.topics import Topic, TopicManager, validate_topic_name
from sluice.broker.txn.coordinator import TXN_TOPIC, TransactionCoordinator
from sluice.broker.txn.markers import ClusterRoutes
from sluice.errors import ConfigError, StorageError

if TYPE_CHECKING:
    from sluice.broker.cluster.member import ClusterMember
    from sluice.broker.cluster.metadata_store import Watch

log = logging.getLogger(__name__)

Clock = Callable[[], int]


class Reconfigurable(Protocol):
    """Something outside the broker's core that follows its dynamic configs (Kafka's
    ``Reconfigurable``): ``validate`` refuses a configuration (ConfigError) before anything
    changes, ``reconfigure`` puts it in force."""

    def validate(self, config: BrokerConfig) -> None: ...

    def reconfigure(self, config: BrokerConfig) -> None: ...


@dataclass(frozen=True)
class NodeEndpoint:
    """A live broker as clients reach it (Metadata's and DescribeCluster's ``brokers``)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Broker:
    """One node: what every request handler works with."""

    def __init__(self, config: BrokerConfig, clock: Clock = wall_clock_ms) -> None:
        self.config = config
        self.clock = clock
        self.log_dirs = LogDirs(config.log_dirs)
        """The log directories (``log.dirs``): which are online, where partitions go."""
        self.data_dir: Path = self.log_dirs.metadata_dir
        """The first log directory: the broker-level files live there."""
        self.node_id = config.node_id
        self.host, self.port = config.advertised_listener
        self.cluster_id = ""
        self.dynamic_configs = DynamicBrokerConfigs(self.data_dir, config)
        self.topics = TopicManager(self.log_dirs, config, clock)
        self.request_stop: Callable[[], None] = lambda: None
        """Called when the broker cannot go on (every log directory, or the first, offline):
        the process that runs the broker stops it."""
        self.topics.futures.storage_failed = self.storage_failed
        self.producer_ids: ProducerIdManager | None = None
        self.groups = GroupCoordinator(self.topics, config, clock)
        self.transactions = TransactionCoordinator(
            self.topics, self.groups, self._producer_ids, config, clock
        )
        self.fetch_sessions = FetchSessionCache(
            int(config["max.incremental.fetch.session.cache.slots"]),
            int(config["min.incremental.fetch.session.eviction.ms"]),
        )
        """Fetch sessions (KIP-227) of consumers and followers (:mod:`.fetch_session`)."""
        self.replication_throttles = ReplicationThrottles(self.node_id, config)
        """The leader and follower replication quotas (:mod:`.replication.quota`)."""
        self.scram_credentials: ScramStore = FileScramStore(self.data_dir)
        """Users' SCRAM credentials: the data directory's, or ZooKeeper's once in a cluster."""
        self.client_quotas = ClientQuotaManager(
            samples=int(config["quota.window.num"]),
            window_s=float(config["quota.window.size.seconds"]),
        )
        """The client quotas in force and their rates (:mod:`.quotas.manager`)."""
        self.quota_store: QuotaStore = FileQuotaStore(self.data_dir)
        """Where the client quotas are kept: the data directory's, or ZooKeeper's in a cluster."""
        self.quota_watch: Watch | None = None
        """In a cluster, the watch that reloads the quotas at each change notification."""
        self.authorizer: Authorizer | None = (
            Authorizer(
                super_users(config["super.users"]),
                allow_everyone_if_no_acl_found=config["allow.everyone.if.no.acl.found"],
            )
            if config["authorizer.class.name"]
            else None
        )
        """The ACLs' decisions (``authorizer.class.name``); None: every request is allowed."""
        self.acl_store: AclStore = FileAclStore(self.data_dir)
        """Where the ACLs are kept: the data directory's, or ZooKeeper's once in a cluster."""
        self.reconfigurables: list[Reconfigurable] = []
        """What the process around the broker reconfigures on dynamic config changes (Kafka's
        ``Reconfigurable``s): the server's TLS listeners' keystores."""
        self._tasks: list[asyncio.Task[None]] = []
        self.cluster: ClusterMember | None = None
        """The broker's membership of a cluster (``zookeeper.connect``); None on one node."""

    def open(self, cluster_id: str | None = None) -> None:
        """Create or recover the data directory (recovers every log). ``cluster_id``: the
        cluster's (from its metadata store), which a data directory of another cluster must
        not join; None on one node (the data directory's own, or a new one)."""
        try:
            for directory in self.log_dirs:
                directory.path.mkdir(parents=True, exist_ok=True)
            self.cluster_id = self._load_meta(cluster_id)
        except OSError as exc:  # a disk already failed: the broker cannot start on it
            raise StorageError(f"log directory unusable: {exc}") from exc
        self.config = self.dynamic_configs.load()
        self.replication_throttles.configure(self.config)
        self.topics.broker_config = self.config
        self.topics.load()
        if cluster_id is None and self.authorizer is not None:
            try:
                self.authorizer.replace(self.acl_store.load())
            except ValueError as exc:  # a damaged acls.json: not guessed at, not ignored
                raise StorageError(str(exc)) from None
        if cluster_id is None:
            self.client_quotas.configure(self.quota_store.load())
            self.producer_ids = ProducerIdManager(LocalBlocks(self.data_dir))
            self.groups.load()
            self.transactions.load()
        else:  # the coordinators follow the leadership of their partitions: leadership_changed
            self.producer_ids = ProducerIdManager(_ClusterBlocksOf(self))
            self.groups.follow_leadership(self._partition_exists, self._offsets_partitions)
            self.transactions.follow_leadership(_RoutesOf(self))

    def start_housekeeping(self) -> None:
        cfg = self.config
        self.groups.start()
        self._tasks = [
            asyncio.create_task(
                self._every(cfg["log.retention.check.interval.ms"], self._retention),
                name="retention",
            ),
            asyncio.create_task(
                self._every(cfg["log.flush.scheduler.interval.ms"], self._flush_due), name="flush"
            ),
        ]
        self._tasks.append(
            asyncio.create_task(
                self._every(cfg["offsets.retention.check.interval.ms"], self._expire_offsets),
                name="offsets",
            )
        )
        self._tasks.append(
            asyncio.create_task(
                self._every(
                    cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                    self._abort_timed_out,
                ),
                name="transactions",
            )
        )
        self._tasks.append(
            asyncio.create_task(
                self._every(
                    cfg["transaction.remove.expired.transaction.cleanup.interval.ms"],
                    self._expire_transactional_ids,
                ),
                name="transactional-ids",
            )
        )
        if cfg["log.cleaner.enable"]:
            self._tasks.append(
                asyncio.create_task(
                    self._every(lambda: self.config["log.cleaner.backoff.ms"], self._compact),
                    name="cleaner",
                )
            )

    def validate_config(self, config: BrokerConfig) -> None:
        """Raise :class:`ConfigError` if a :attr:`reconfigurables` cannot take ``config``."""
        for reconfigurable in self.reconfigurables:
            reconfigurable.validate(config)

    def apply_config(self, config: BrokerConfig) -> None:
        """Put a new effective configuration (dynamic broker configs) in force: topic defaults
        are recomputed for every topic, the cleaner's backoff is read at its next sleep, the
        replica fetchers (in a cluster) are resized, the replication throttles take their
        rates, the :attr:`reconfigurables` theirs (the TLS listeners' keystores)."""
        self.config = config
        self.topics.set_broker_config(config)
        self.replication_throttles.configure(config)
        if self.cluster is not None:
            self.cluster.replicas.fetchers.reconfigure(config)
        for reconfigurable in self.reconfigurables:
            reconfigurable.reconfigure(config)

    async def close(self) -> None:
        """Stop housekeeping and group timers, flush and close every log."""
        self.groups.close()
        self.transactions.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.topics.close()

    # -- the cluster as clients see it ----------------------------------------------------

    def live_brokers(
        self, endpoint: tuple[str, int] | None = None, listener: str | None = None
    ) -> list[NodeEndpoint]:
        """The brokers clients may connect to, by node id: this one alone on one node, at
        ``endpoint`` (the advertised endpoint of the listener the request came in on) or its
        first listener's; in a cluster, each live broker at its endpoint on ``listener`` (the
        request's listener; None: the inter-broker one), leaving out those without it (Kafka)."""
        if self.cluster is None:
            host, port = endpoint or (self.host, self.port)
            return [NodeEndpoint(self.node_id, host, port, self.config["broker.rack"])]
        name = listener or self.cluster.cache.inter_broker_listener
        endpoints = []
        for node_id, live in sorted(self.cluster.cache.brokers.items()):
            found = live.registration.endpoint(name)
            if found is not None:
                endpoints.append(
                    NodeEndpoint(node_id, found.host, found.port, live.registration.rack)
                )
        return endpoints

    @property
    def controller_id(self) -> int:
        """The node id of the cluster's controller (-1 between terms): this node on one node."""
        if self.cluster is None:
            return self.node_id
        found = self.cluster.cache.controller_id
        return -1 if found is None else found

    def topic_names(self) -> list[str]:
        """Every topic of the cluster (of this node, on one node)."""
        if self.cluster is None:
            return list(self.topics.topics)
        return self.cluster.cache.topic_names()

    def describe_topic(self, name: str) -> TopicInfo | None:
        """A topic as clients are told about it: its id, partitions, leaders, replicas, ISR."""
        if self.cluster is not None:
            return self.cluster.cache.topic(name)
        topic = self.topics.get(name)
        return None if topic is None else self._local_info(topic)

    def describe_topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        if self.cluster is not None:
            return self.cluster.cache.topic_by_id(topic_id)
        topic = self.topics.by_id(topic_id)
        return None if topic is None else self._local_info(topic)

    def topic_configs(self, name: str) -> Topic | None:
        """The topic with its config overrides and effective config (Describe/AlterConfigs):
        this node's topic, or in a cluster the cluster's (``/config/topics/<t>``), hosted here
        or not."""
        if self.cluster is None:
            return self.topics.get(name)
        info = self.cluster.cache.topic(name)
        if info is None:
            return None
        overrides = self.cluster.cache.topic_configs.get(name, {})
        config = self.config.topic_config(overrides)
        return Topic(name, info.topic_id, dict(overrides), config, len(info.partitions))

    async def set_topic_overrides(self, topic: Topic, overrides: dict[str, str]) -> None:
        """Replace a topic's config overrides: in the cluster's store (every broker hosting the
        topic applies them), or on this node's topic."""
        if self.cluster is None:
            self.topics.set_overrides(topic, overrides)
        else:
            await self.cluster.admin.set_topic_config(topic.name, overrides)

    def _local_info(self, topic: Topic) -> TopicInfo:
        node = (self.node_id,)
        return TopicInfo(
            topic.name,
            topic.topic_id,
            {
                p.index: PartitionInfo(p.index, self.node_id, p.log.leader_epoch, node, node, ())
                for p in topic.partitions.values()
            },
        )

    # -- coordinators ---------------------------------------------------------------------

    def leadership_changed(self, topic: str, index: int, leader: bool) -> None:
        """The cluster member made this broker the leader of ``topic``-``index`` (its log
        writable), or it stopped leading it: the coordinator of an internal topic's
        partition starts loading its shard in the background (the transaction coordinator
        with the partition's leader epoch as its coordinator epoch; its keys are answered
        COORDINATOR_LOAD_IN_PROGRESS until it is loaded) or unloads it (its timers stop, its
        keys are answered NOT_COORDINATOR from now on)."""
        if topic == OFFSETS_TOPIC:
            coordinator: GroupCoordinator | TransactionCoordinator = self.groups
        elif topic == TXN_TOPIC:
            coordinator = self.transactions
        else:
            return
        if not leader:
            log.info("resigned as coordinator of %s-%d", topic, index)
            coordinator.unload_partition(index)
            return
        partition = self.topics.partition(topic, index)
        if partition is None:
            return
        if coordinator is self.transactions:
            self.transactions.begin_loading(index, partition.log.leader_epoch)
        else:
            self.groups.begin_loading(index)

    def _partition_exists(self, topic: str, index: int) -> bool:
        info = self.describe_topic(topic)
        return info is not None and index in info.partitions

    def _offsets_partitions(self) -> int | None:
        info = self.describe_topic(OFFSETS_TOPIC)
        return None if info is None else len(info.partitions)

    # -- topics ---------------------------------------------------------------------------

    def auto_create(self, name: str) -> Topic | None:
        """Create ``name`` with the broker defaults if auto-creation is on and the name legal."""
        if name == OFFSETS_TOPIC:
            return self.groups.store.ensure()
        if name == TXN_TOPIC:
            return self.transactions.store.ensure()
        if not self.config["auto.create.topics.enable"]:
            return None
        try:
            self.topics.check_create(name, self.config.num_partitions, 1, {})
            return self.topics.create(name, self.config.num_partitions, {})
        except KafkaError as exc:  # an illegal name, or a full disk
            log.warning("not auto-creating topic %r: %s", name, exc.message)
            return None

    async def auto_create_in_cluster(self, name: str) -> bool:
        """In a cluster: create ``name`` with the broker defaults (``num.partitions``,
        ``default.replication.factor``) if auto-creation is on and the name legal; whether it
        exists now. The internal topics are created by their coordinators instead."""
        assert self.cluster is not None
        if name in (OFFSETS_TOPIC, TXN_TOPIC) or not self.config["auto.create.topics.enable"]:
            return False
        try:
            validate_topic_name(name)
            await self.cluster.admin.ensure_topic(
                name, self.config.num_partitions, self.config["default.replication.factor"], {}
            )
        except KafkaError as exc:
            log.warning("auto-creating topic %s: %s", name, exc)
            return False
        return True

    # -- housekeeping ---------------------------------------------------------------------

    async def _every(
        self,
        interval_ms: int | Callable[[], int],
        job: Callable[[], None] | Callable[[], Awaitable[None]],
    ) -> None:
        while True:
            await asyncio.sleep((interval_ms() if callable(interval_ms) else interval_ms) / 1000)
            try:
                done = job()
                if done is not None:
                    await done
            except StorageError as exc:
                log.error("%s failed: %s", job.__name__, exc)
            except Exception:
                log.exception("%s failed", job.__name__)

    def _retention(self) -> None:
        now = self.clock()
        for partition in self.topics.all_partitions():
            deleted = partition.log.enforce_retention(now)
            if deleted:
                log.info(
                    "retention deleted %d segments of %s-%d",
                    deleted,
                    partition.topic,
                    partition.index,
                )

    def _compact(self) -> None:
        now = self.clock()
        for partition in self.topics.all_partitions():
            if "compact" in partition.log.config["cleanup.policy"]:
                partition.log.compact(now)

    def _producer_ids(self) -> ProducerIdManager:
        assert self.producer_ids is not None, "Broker.open() first"
        return self.producer_ids

    async def _abort_timed_out(self) -> None:
        await self.transactions.abort_timed_out()

    def _expire_transactional_ids(self) -> None:
        self.transactions.expire_transactional_ids()

    def _expire_offsets(self) -> None:
        expired = self.groups.expire_offsets(self.config["offsets.retention.minutes"] * 60_000)
        if expired:
            log.info("expired %d committed offsets of empty groups", expired)

    def _flush_due(self) -> None:
        now = self.clock()
        for partition in self.topics.all_partitions():
            try:
                partition.log.flush_if_due(now)
            except StorageError as exc:  # the disk failed: its directory goes offline
                self.storage_failed(partition.log.directory, exc)

    def storage_failed(self, partition_dir: Path, error: object) -> None:
        """A write under ``partition_dir`` failed (an ``OSError``: EIO, ENOSPC, EROFS...): its
        log directory goes offline (Kafka's ``LogDirFailureChannel``), its partitions' logs are
        closed and answer KAFKA_STORAGE_ERROR; in a cluster the member stops following them and
        tells the controller (listeners of :meth:`LogDirs.on_failure`). With the first or every
        directory offline the broker stops (:attr:`request_stop`)."""
        try:
            directory = self.log_dirs.of(partition_dir)
        except KeyError:
            return
        self.log_dir_failed(directory, str(error))

    def log_dir_failed(self, directory: LogDir, error: str) -> None:
        """Take ``directory`` offline (see :meth:`storage_failed`)."""
        if not self.log_dirs.fail(directory, error):
            return
        failed = self.topics.dir_failed(directory)
        log.error(
            "%d partitions of %s offline: %s",
            len(failed),
            directory.path,
            ", ".join(f"{p.topic}-{p.index}" for p in failed) or "none",
        )
        if self.log_dirs.must_stop():
            log.critical(
                "shutting down: %s",
                "every log directory is offline"
                if not self.log_dirs.online()
                else f"the metadata directory {self.data_dir} is offline",
            )
            self.request_stop()

    def stored_cluster_id(self) -> str | None:
        """The cluster id in the log directories' ``meta.properties``, if any."""
        for directory in self.log_dirs:
            values = self._read_meta(directory.path)
            if "cluster.id" in values:
                return values["cluster.id"]
        return None

    def _read_meta(self, log_dir: Path) -> dict[str, str]:
        path = log_dir / "meta.properties"
        values: dict[str, str] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                key, sep, value = line.partition("=")
                if sep and not key.startswith("#"):
                    values[key.strip()] = value.strip()
        return values

    def _load_meta(self, cluster_id: str | None) -> str:
        """Check every log directory's ``meta.properties`` (one node id, one cluster id);
        write it where missing. Return the cluster id."""
        if cluster_id is None:
            cluster_id = self.stored_cluster_id() or new_cluster_id()
        for directory in self.log_dirs:
            self._check_meta(directory.path, cluster_id)
        return cluster_id

    def _check_meta(self, log_dir: Path, cluster_id: str) -> None:
        path = log_dir / "meta.properties"
        values = self._read_meta(log_dir)
        if values:
            stored = int(values.get("node.id", self.node_id))
            if stored != self.node_id:
                raise ConfigError(
                    f"data directory belongs to node {stored}, this is node {self.node_id}",
                    key="node.id",
                    source=str(path),
                )
            if values["cluster.id"] != cluster_id:
                raise ConfigError(  # Kafka's InconsistentClusterIdException
                    f"The Cluster ID {cluster_id} doesn't match stored clusterId "
                    f"{values['cluster.id']} in meta.properties. The broker is trying to join "
                    "the wrong cluster. Configured zookeeper.connect may be wrong.",
                    key="zookeeper.connect",
                    source=str(path),
                )
            return
        meta = f"version=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n"
        write_atomically(path, meta.encode())


def new_cluster_id() -> str:
    """A random cluster id as Kafka makes them (a base64url UUID without padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class _ClusterBlocksOf:
    """The cluster's producer id blocks, through the broker's member (set after open)."""

    blocking = True

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def claim(self) -> tuple[int, int]:
        if self.broker.cluster is None:
            raise ProducerIdsUnavailableError("not a member of the cluster yet")
        return ClusterBlocks(self.broker.cluster.store, self.broker.node_id).claim()


class _RoutesOf:
    """The cluster's partition leaders, through the broker's member (set after open)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def leader(self, topic: str, index: int) -> tuple[int, str, int] | None:
        member = self.broker.cluster
        return None if member is None else ClusterRoutes(member).leader(topic, index)

    def exists(self, topic: str, index: int) -> bool:
        return self.broker._partition_exists(topic, index)
