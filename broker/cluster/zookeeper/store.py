"""The metadata store on ZooKeeper (kazoo), in Kafka's ZooKeeper-era layout.

Its package is the only code of Sluice that imports kazoo (an import-linter contract says so);
the admin-request znodes are :mod:`.admin_requests`', configs and ACLs :mod:`.entity_configs`'
and :mod:`.acls`'. Paths and JSON are :mod:`~sluice.broker.cluster.znodes`'; the rules (sessions,
versions, fences, callbacks) are :mod:`~sluice.broker.cluster.metadata_store`'s. Kafka's own
mechanics, kept as Kafka's ``KafkaZkClient`` has them:

* ``zookeeper.connect`` may end in a chroot (``127.0.0.1:2181/sluice``); it is created when
  missing, through a short session without the chroot, before the store's own session starts.
  The persistent paths (``/brokers/ids``, ``/brokers/topics``, ``/config/...``, ...) are created
  then too.
* Controller election is one ``multi``: create the ephemeral ``/controller`` and set
  ``/controller_epoch`` to epoch + 1 at the version just read. Every fenced write is a ``multi``
  that starts with a version check of ``/controller_epoch``; when that check fails the
  controller was deposed (:class:`ControllerMovedError`).
* A broker's epoch is the zxid that created its registration (``czxid``, KIP-380).

Thread-safety: every method may be called from any thread (kazoo serialises requests on one
connection); each call waits at most ``zookeeper.connection.timeout.ms`` for its answer, then
raises MetadataStoreUnavailableError (kazoo's own calls would wait forever while ZooKeeper is
down). Callbacks run on kazoo's event thread.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kazoo.client import KazooState
from kazoo.exceptions import (
    NodeExistsError,
    NoNodeError,
    RolledBackError,
)

from sluice.broker.cluster import znodes
from sluice.broker.cluster.metadata_store import (
    PRODUCER_ID_BLOCK_SIZE,
    BrokerIdInUseError,
    ControllerMovedError,
    MetadataStoreUnreachableError,
    ProducerIdsExhaustedError,
    TopicExistsError,
)
from sluice.broker.cluster.model import (
    BadVersion,
    BrokerRegistration,
    ControllerFence,
    ControllerRegistration,
    LiveBroker,
    PartitionState,
    ProducerIdBlock,
    TopicAssignment,
    TopicPartition,
    Versioned,
)
from sluice.broker.cluster.zookeeper import znode_ops
from sluice.broker.cluster.zookeeper.acls import ZooKeeperAclZnodes
from sluice.broker.cluster.zookeeper.admin_requests import ZooKeeperAdminRequests
from sluice.broker.cluster.zookeeper.entity_configs import ZooKeeperEntityConfigs
from sluice.broker.cluster.zookeeper.session import (
    BoundedClient,
    KazooWatch,
    bounded,
    new_client,
    split_connect_string,
    start_client,
    translate_errors,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How often a producer-id block claim is retried when another broker claims first.
PRODUCER_ID_BLOCK_ATTEMPTS = 50
_MAX_PRODUCER_ID = 2**63 - 1


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class ZooKeeperMetadataStore:
    """:class:`~sluice.broker.cluster.metadata_store.MetadataStore` on one kazoo session.

    Open it with :meth:`connect`; :meth:`close` ends the session.
    """

    def __init__(
        self, client: Any, connect: str, clock_ms: Callable[[], int], timeout_ms: int
    ) -> None:
        self._client = BoundedClient(client, timeout_ms / 1000)
        self._connect = connect
        self._clock_ms = clock_ms
        self.configs = ZooKeeperEntityConfigs(self._client, clock_ms)
        self.acls = ZooKeeperAclZnodes(self._client, clock_ms)
        self.admin = ZooKeeperAdminRequests(self._client, self._fenced)
        """The admin-request znodes (deletions, log-dir events, shutdowns, elections)."""
        self._closed = False
        self._expiry_callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        client.add_listener(self._on_state)

    @classmethod
    def connect(
        cls,
        connect: str,
        *,
        session_timeout_ms: int = 18_000,
        connection_timeout_ms: int | None = None,
        clock_ms: Callable[[], int] = _wall_clock_ms,
    ) -> ZooKeeperMetadataStore:
        """Open a session on ``connect`` (``zookeeper.connect``, with an optional chroot, created
        when missing). ``connection_timeout_ms`` (``zookeeper.connection.timeout.ms``, the
        session timeout when None, as in Kafka) bounds the wait; past it,
        :class:`MetadataStoreUnreachableError`."""
        hosts, chroot = split_connect_string(connect)
        timeout_ms = session_timeout_ms if connection_timeout_ms is None else connection_timeout_ms
        unreachable = MetadataStoreUnreachableError(
            f"Timed out waiting for connection to ZooKeeper at {connect} "
            f"(zookeeper.connection.timeout.ms={timeout_ms}): is ZooKeeper running there?"
        )
        if chroot:
            bootstrap = start_client(new_client(hosts), timeout_ms, unreachable)
            try:
                bounded(lambda: bootstrap.ensure_path_async(chroot), timeout_ms, unreachable)
            finally:
                bootstrap.stop()
                bootstrap.close()
        client = new_client(hosts + chroot, session_timeout_ms)
        store = cls(start_client(client, timeout_ms, unreachable), connect, clock_ms, timeout_ms)
        try:
            for path in znodes.PERSISTENT_PATHS:
                bounded(functools.partial(client.ensure_path_async, path), timeout_ms, unreachable)
        except BaseException:
            store.close()
            raise
        return store

    # session

    @property
    def session_credentials(self) -> tuple[int, bytes]:
        """The session id and password: what a fault test needs to expire this session from
        another client."""
        session_id, password = self._client.kazoo.client_id
        return int(session_id), bytes(password)

    @translate_errors
    def close(self) -> None:
        """End the session (ephemeral znodes go at once); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._client.kazoo.stop()
        self._client.kazoo.close()

    @translate_errors
    def on_session_expired(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on kazoo's thread) when the session ends without :meth:`close`."""
        with self._lock:
            self._expiry_callbacks.append(callback)

    def _on_state(self, state: str) -> None:
        if state != KazooState.LOST:
            return
        with self._lock:
            if self._closed:
                return
            callbacks = list(self._expiry_callbacks)
        log.warning("ZooKeeper session at %s expired", self._connect)
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("session-expiry callback failed")

    # cluster id

    @translate_errors
    def get_or_create_cluster_id(self, proposed: str) -> str:
        """The id in ``/cluster/id``, which the first caller creates with ``proposed``."""
        try:
            data, _ = self._client.get(znodes.CLUSTER_ID)
        except NoNodeError:
            try:
                self._client.create(
                    znodes.CLUSTER_ID, znodes.encode_cluster_id(proposed), makepath=True
                )
                return proposed
            except NodeExistsError:
                data, _ = self._client.get(znodes.CLUSTER_ID)
        return znodes.decode_cluster_id(data)

    # brokers

    @translate_errors
    def register_broker(self, registration: BrokerRegistration) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; the broker epoch (its czxid)."""
        path = znodes.broker_path(registration.broker_id)
        data = znodes.encode_broker(registration)
        try:
            _, stat = self._client.create(path, data, ephemeral=True, include_data=True)
            return int(stat.czxid)
        except NodeExistsError:
            pass
        session = self._client.session_id
        try:
            _, stat = self._client.get(path)
        except NoNodeError:  # the other broker's session ended in between: try once more
            _, stat = self._client.create(path, data, ephemeral=True, include_data=True)
            return int(stat.czxid)
        if stat.ephemeralOwner == session:  # our own create, retried after a lost reply
            return int(stat.czxid)
        raise BrokerIdInUseError(
            f"Error while creating ephemeral at {path}, node already exists and owner "
            f"'{stat.ephemeralOwner}' does not match current session '{session}': "
            f"broker.id {registration.broker_id} is registered by another live broker"
        )

    @translate_errors
    def live_brokers(self) -> dict[int, LiveBroker]:
        """Every registered broker, by id, with its broker epoch."""
        brokers = {}
        for child in self._client.get_children(znodes.BROKER_IDS):
            broker_id = int(child)
            try:
                data, stat = self._client.get(znodes.broker_path(broker_id))
            except NoNodeError:  # gone since the listing
                continue
            brokers[broker_id] = LiveBroker(znodes.decode_broker(broker_id, data), int(stat.czxid))
        return brokers

    @translate_errors
    def watch_live_brokers(self, callback: Callable[[frozenset[int]], None]) -> KazooWatch:
        """Call ``callback`` with the live broker ids, now and at every change."""
        return znode_ops.watch_children(
            self._client,
            znodes.BROKER_IDS,
            lambda children: callback(frozenset(int(c) for c in children)),
        )

    # controller

    @translate_errors
    def elect_controller(self, broker_id: int) -> ControllerFence | None:
        """Kafka's ``registerControllerAndIncrementControllerEpoch``."""
        current = self.controller_epoch()
        epoch = current.value + 1
        tx = self._client.transaction()
        tx.create(
            znodes.CONTROLLER,
            znodes.encode_controller(broker_id, self._clock_ms()),
            ephemeral=True,
        )
        tx.set_data(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(epoch), current.version)
        results = self._client.commit(tx)
        if not znode_ops.failed(results):
            return ControllerFence(epoch, int(results[1].version))
        # Lost the race, unless this session holds the office already (a retried election,
        # or a second call): then the term goes on at the current epoch.
        try:
            _, stat = self._client.get(znodes.CONTROLLER)
        except NoNodeError:
            return None
        if stat.ephemeralOwner != self._client.session_id:
            return None
        now = self.controller_epoch()
        return ControllerFence(now.value, now.version)

    @translate_errors
    def controller(self) -> Versioned[ControllerRegistration] | None:
        """Who holds ``/controller``, or None."""
        return znode_ops.read(self._client, znodes.CONTROLLER, znodes.decode_controller)

    @translate_errors
    def controller_epoch(self) -> Versioned[int]:
        """``/controller_epoch``, created with 0 when missing (as Kafka does)."""
        try:
            data, stat = self._client.get(znodes.CONTROLLER_EPOCH)
        except NoNodeError:
            with contextlib.suppress(NodeExistsError):
                self._client.create(
                    znodes.CONTROLLER_EPOCH,
                    znodes.encode_controller_epoch(znodes.INITIAL_CONTROLLER_EPOCH),
                )
            data, stat = self._client.get(znodes.CONTROLLER_EPOCH)
        return Versioned(znodes.decode_controller_epoch(data), int(stat.version))

    @translate_errors
    def watch_controller(self, callback: Callable[[int | None], None]) -> KazooWatch:
        """Call ``callback`` with the controller's id (None between terms) at every change."""

        def deliver(data: bytes | None) -> None:
            callback(None if data is None else znodes.decode_controller(data).broker_id)

        return znode_ops.watch_data(
            self._client, znodes.CONTROLLER, lambda data, _stat: deliver(data)
        )

    def _fenced(self, fence: ControllerFence, add_ops: Callable[[Any], None]) -> list[Any]:
        """Commit ``add_ops``' operations after a check of ``/controller_epoch``; the results
        of those operations (exceptions for a failed commit)."""
        tx = self._client.transaction()
        tx.check(znodes.CONTROLLER_EPOCH, fence.epoch_version)
        add_ops(tx)
        results = self._client.commit(tx)
        if znode_ops.failed(results) and not isinstance(results[0], RolledBackError):
            raise ControllerMovedError(
                f"controller elected at epoch {fence.epoch} was deposed: "
                f"{znodes.CONTROLLER_EPOCH} is no longer at version {fence.epoch_version}"
            )
        return list(results[1:])

    # topics and partitions

    @translate_errors
    def create_topic(
        self, topic: str, assignment: TopicAssignment, config: Mapping[str, str]
    ) -> None:
        """Kafka's ``createTopicWithAssignment``: the config, then the assignment."""
        if self._client.exists(znodes.delete_topic_path(topic)) is not None:
            raise TopicExistsError(f"Topic '{topic}' is marked for deletion.")
        if self._client.exists(znodes.topic_path(topic)) is not None:
            raise TopicExistsError(f"Topic '{topic}' already exists.")
        znode_ops.set_or_create(
            self._client, znodes.config_path("topics", topic), znodes.encode_entity_config(config)
        )
        try:
            self._client.create(znodes.topic_path(topic), znodes.encode_topic(assignment))
        except NodeExistsError:
            raise TopicExistsError(f"Topic '{topic}' already exists.") from None

    @translate_errors
    def topics(self) -> frozenset[str]:
        """The children of ``/brokers/topics``."""
        return frozenset(self._client.get_children(znodes.TOPICS))

    @translate_errors
    def watch_topics(self, callback: Callable[[frozenset[str]], None]) -> KazooWatch:
        """Call ``callback`` with the topic names at every change."""
        return znode_ops.watch_children(
            self._client, znodes.TOPICS, lambda children: callback(frozenset(children))
        )

    @translate_errors
    def topic_assignment(self, topic: str) -> Versioned[TopicAssignment] | None:
        """``/brokers/topics/<t>``, or None."""
        return znode_ops.read(
            self._client, znodes.topic_path(topic), lambda data: znodes.decode_topic(topic, data)
        )

    @translate_errors
    def set_topic_assignment(
        self, topic: str, assignment: TopicAssignment, expected_version: int
    ) -> int | BadVersion:
        """A conditional write of ``/brokers/topics/<t>``."""
        return znode_ops.set_versioned(
            self._client,
            znodes.topic_path(topic),
            znodes.encode_topic(assignment),
            expected_version,
        )

    @translate_errors
    def watch_topic_assignment(
        self, topic: str, callback: Callable[[Versioned[TopicAssignment] | None], None]
    ) -> KazooWatch:
        """Call ``callback`` with the assignment (None once deleted) at every change."""
        return znode_ops.watch_versioned(
            self._client,
            znodes.topic_path(topic),
            lambda data: znodes.decode_topic(topic, data),
            callback,
        )

    @translate_errors
    def partition_state(self, topic: str, partition: int) -> Versioned[PartitionState] | None:
        """``.../partitions/<p>/state``, or None."""
        return znode_ops.read(
            self._client,
            znodes.partition_state_path(topic, partition),
            lambda data: znodes.decode_partition_state(topic, partition, data),
        )

    @translate_errors
    def create_partition_state(
        self, topic: str, partition: int, state: PartitionState, fence: ControllerFence
    ) -> int | BadVersion:
        """Create the state znode (its parents first, as Kafka does) under the fence."""
        path = znodes.partition_state_path(topic, partition)
        self._client.ensure_path(path.rpartition("/")[0])
        results = self._fenced(
            fence, lambda tx: tx.create(path, znodes.encode_partition_state(state))
        )
        if znode_ops.failed(results):
            return BadVersion(path, -1)
        return 0

    @translate_errors
    def set_partition_state(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_version: int,
        fence: ControllerFence | None,
    ) -> int | BadVersion:
        """A conditional write of the state: fenced by the controller epoch when ``fence`` is
        given (the controller), by the version alone otherwise (a leader's ISR change)."""
        path = znodes.partition_state_path(topic, partition)
        data = znodes.encode_partition_state(state)
        if fence is None:
            return znode_ops.set_versioned(self._client, path, data, expected_version)
        results = self._fenced(fence, lambda tx: tx.set_data(path, data, expected_version))
        if znode_ops.failed(results):
            return BadVersion(path, expected_version)
        return int(results[0].version)

    @translate_errors
    def watch_partition_state(
        self,
        topic: str,
        partition: int,
        callback: Callable[[Versioned[PartitionState] | None], None],
    ) -> KazooWatch:
        """Call ``callback`` with the partition's state at every change."""
        return znode_ops.watch_versioned(
            self._client,
            znodes.partition_state_path(topic, partition),
            lambda data: znodes.decode_partition_state(topic, partition, data),
            callback,
        )

    @translate_errors
    def notify_isr_change(self, partitions: Iterable[TopicPartition]) -> None:
        """A sequential ``/isr_change_notification/isr_change_<n>``."""
        self._client.create(
            f"{znodes.ISR_CHANGE_NOTIFICATION}/{znodes.ISR_CHANGE_PREFIX}",
            znodes.encode_partitions(partitions),
            sequence=True,
        )

    # producer ids

    @translate_errors
    def allocate_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        """Kafka's ``ZkProducerIdManager.getNewProducerIdBlock``: read the last block, write the
        next one at the version read, retry (bounded) when another broker wrote first."""
        for _ in range(PRODUCER_ID_BLOCK_ATTEMPTS):
            data, stat = self._client.get(znodes.LATEST_PRODUCER_ID_BLOCK)
            first = znodes.decode_producer_id_block(data).last + 1 if data else 0
            if first > _MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
                raise ProducerIdsExhaustedError(
                    "Exhausted all producerIds: the next block would pass 2^63-1"
                )
            block = ProducerIdBlock(broker_id, first, first + PRODUCER_ID_BLOCK_SIZE - 1)
            written = znode_ops.set_versioned(
                self._client,
                znodes.LATEST_PRODUCER_ID_BLOCK,
                znodes.encode_producer_id_block(block),
                int(stat.version),
            )
            if not isinstance(written, BadVersion):
                return block
        raise ProducerIdsExhaustedError(
            f"no producer-id block claimed in {PRODUCER_ID_BLOCK_ATTEMPTS} attempts: "
            "other brokers claimed each one first"
        )
