"""The broker's state and its housekeeping: topics, producer ids, retention, compaction, flush.

``meta.properties`` in the data directory holds the cluster id and node id, as Kafka's does;
a data directory written by another node id is refused.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sluice.broker.config import BrokerConfig
from sluice.broker.dynamic_config import DynamicBrokerConfigs
from sluice.broker.errors import KafkaError
from sluice.broker.group.coordinator import OFFSETS_TOPIC, GroupCoordinator
from sluice.broker.log.files import write_atomically
from sluice.broker.producer_ids import ProducerIdManager
from sluice.broker.topics import Topic, TopicManager
from sluice.broker.txn.coordinator import TXN_TOPIC, TransactionCoordinator
from sluice.errors import ConfigError, StorageError

log = logging.getLogger(__name__)

Clock = Callable[[], int]


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
        self.data_dir: Path = config.data_dir
        self.node_id = config.node_id
        self.host, self.port = config.advertised_listener
        self.cluster_id = ""
        self.dynamic_configs = DynamicBrokerConfigs(self.data_dir, config)
        self.topics = TopicManager(self.data_dir, config)
        self.producer_ids: ProducerIdManager | None = None
        self.groups = GroupCoordinator(self.topics, config, clock)
        self.transactions = TransactionCoordinator(
            self.topics, self.groups, self._producer_ids, config, clock
        )
        self._tasks: list[asyncio.Task[None]] = []

    def open(self) -> None:
        """Create or recover the data directory (recovers every log)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.cluster_id = self._load_meta()
        self.config = self.dynamic_configs.load()
        self.topics.broker_config = self.config
        self.topics.load()
        self.producer_ids = ProducerIdManager(self.data_dir)
        self.groups.load()
        self.transactions.load()

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

    def apply_config(self, config: BrokerConfig) -> None:
        """Put a new effective configuration (dynamic broker configs) in force: topic defaults
        are recomputed for every topic, the cleaner's backoff is read at its next sleep."""
        self.config = config
        self.topics.set_broker_config(config)

    async def close(self) -> None:
        """Stop housekeeping and group timers, flush and close every log."""
        self.groups.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.topics.close()

    # -- the cluster as clients see it ----------------------------------------------------

    def live_brokers(self) -> list[NodeEndpoint]:
        """The brokers clients may connect to, by node id: this one alone on one node."""
        return [NodeEndpoint(self.node_id, self.host, self.port, self.config["broker.rack"])]

    @property
    def controller_id(self) -> int:
        """The node id of the cluster's controller: this node on one node."""
        return self.node_id

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
        except KafkaError:
            return None
        return self.topics.create(name, self.config.num_partitions, {})

    # -- housekeeping ---------------------------------------------------------------------

    async def _every(self, interval_ms: int | Callable[[], int], job: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep((interval_ms() if callable(interval_ms) else interval_ms) / 1000)
            try:
                job()
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

    def _abort_timed_out(self) -> None:
        self.transactions.abort_timed_out()

    def _expire_transactional_ids(self) -> None:
        self.transactions.expire_transactional_ids()

    def _expire_offsets(self) -> None:
        expired = self.groups.expire_offsets(self.config["offsets.retention.minutes"] * 60_000)
        if expired:
            log.info("expired %d committed offsets of empty groups", expired)

    def _flush_due(self) -> None:
        now = self.clock()
        for partition in self.topics.all_partitions():
            partition.log.flush_if_due(now)

    def _load_meta(self) -> str:
        path = self.data_dir / "meta.properties"
        values: dict[str, str] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                key, sep, value = line.partition("=")
                if sep and not key.startswith("#"):
                    values[key.strip()] = value.strip()
            stored = int(values.get("node.id", self.node_id))
            if stored != self.node_id:
                raise ConfigError(
                    f"data directory belongs to node {stored}, this is node {self.node_id}",
                    key="node.id",
                    source=str(path),
                )
            return values["cluster.id"]
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        meta = f"version=1\ncluster.id={cluster_id}\nnode.id={self.node_id}\n"
        write_atomically(path, meta.encode())
        return cluster_id
