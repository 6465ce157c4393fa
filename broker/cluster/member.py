"""A broker's membership of a cluster (Kafka's ``KafkaServer`` startup in ZooKeeper mode):
registration, the metadata cache and its watches, the session, and the parts it composes.

:class:`ClusterMember` lives on the broker's event loop. The metadata store's calls block, so
they run in the loop's default executor; its watch callbacks run on the store's thread and are
handed to the loop with ``call_soon_threadsafe``. What it does:

- at start, registers the broker (``/brokers/ids/<id>``: every listener's advertised endpoint
  and protocol; refused when another live broker has the id) once the listeners accept
  connections, reads every topic's assignment and state once
  (so that a broker that says it is ready knows them), and starts the
  :class:`~.controller.Controller` thread that runs for the office;
- watches the live brokers, the controller, the topics, each topic's assignment and each of its
  partitions' state, and the config changes, into :class:`~.metadata_cache.ClusterMetadata`,
  and hands each partition's state to its :class:`~.replica_manager.ReplicaManager` (the
  replicas it hosts, leader or follower); the admin operations any broker takes are its
  :class:`~.admin.ClusterAdmin`'s;
- when the store's session expires, stops leading at once (a broker cut off from the cluster
  must not act as leader: the controller has likely moved its partitions), then registers again
  on the new session;
- on SIGTERM, hands its leaderships over first (a controlled shutdown).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sluice.broker.cluster.admin import ClusterAdmin
from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.cluster.controller import Controller
from sluice.broker.cluster.metadata_cache import ClusterMetadata
from sluice.broker.cluster.metadata_store import (
    MetadataStore,
    MetadataStoreError,
    Watch,
)
from sluice.broker.cluster.model import (
    BrokerRegistration,
    ConfigChange,
    Endpoint,
    PartitionState,
    TopicAssignment,
    TopicPartition,
    Versioned,
)
from sluice.broker.cluster.replica_manager import ReplicaManager
from sluice.broker.security.inter_broker import PLAINTEXT, InterBrokerSecurity

if TYPE_CHECKING:
    from sluice.broker.broker import Broker
    from sluice.broker.log_dirs import LogDir
    from sluice.broker.security.listeners import Listener

log = logging.getLogger(__name__)

T = TypeVar("T")

REGISTER_RETRY_S = 1.0


class ClusterMember:
    """See the module docstring. ``store`` is connected; :meth:`start` registers.

    ``listeners``: the broker's listeners, each advertised endpoint registered (none given: one
    PLAINTEXT endpoint, the broker's address); ``security``: the inter-broker listener and how
    connections to the other brokers are secured on it
    (:func:`~sluice.broker.security.inter_broker.inter_broker_security`)."""

    def __init__(
        self,
        broker: Broker,
        store: MetadataStore,
        *,
        listeners: Sequence[Listener] = (),
        security: InterBrokerSecurity = PLAINTEXT,
    ) -> None:
        self.broker = broker
        self.store = store
        self.broker_id = broker.node_id
        self.listeners = tuple(listeners)
        self.security = security
        self.cache = ClusterMetadata(inter_broker_listener=security.listener)
        broker.transactions.markers.security = security
        self.broker_epoch = -1
        config = broker.config
        self.controller = Controller(
            store,
            self.broker_id,
            unclean_default=config["unclean.leader.election.enable"],
            rebalance_interval_s=config["leader.imbalance.check.interval.seconds"]
            if config["auto.leader.rebalance.enable"]
            else None,
            imbalance_percentage=config["leader.imbalance.per.broker.percentage"],
        )
        self.replicas = ReplicaManager(broker, store, self.cache, security)
        self.admin = ClusterAdmin(store, self.cache)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._state_watches: dict[tuple[str, int], Watch] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.loaded = False
        """Whether the cluster's topics were read once (:meth:`start`): until then an unknown
        topic may exist."""
        self._config_seen = -1
        """The last config change notification acted on."""
        self._closed = False
        broker.log_dirs.on_failure(self._log_dir_failed)

    # -- lifecycle --------------------------------------------------------------------------

    def prepare(self) -> None:
        """Before the listener opens (:meth:`ReplicaManager.prepare`)."""
        self.replicas.prepare()

    async def start(self) -> None:
        """Register, watch, run for controller; returns once registered."""
        self._loop = asyncio.get_running_loop()
        self.store.on_session_expired(self._threadsafe(self._session_expired))
        # a restart with every log directory healthy: no replica of this broker is offline
        await run_blocking(self.store.admin.clear_log_dir_failures, self.broker_id)
        self.broker_epoch = await run_blocking(self.store.register_broker, self._registration())
        log.info("broker %d registered (broker epoch %d)", self.broker_id, self.broker_epoch)
        self.cache.brokers = await run_blocking(self.store.live_brokers)
        self._watches += [
            await run_blocking(
                self.store.watch_live_brokers, self._threadsafe(self._brokers_changed)
            ),
            await run_blocking(
                self.store.watch_controller, self._threadsafe(self._controller_changed)
            ),
            await run_blocking(self.store.watch_topics, self._threadsafe(self._topics_changed)),
            await run_blocking(
                self.store.configs.watch_changes, self._threadsafe(self._configs_changed)
            ),
            await run_blocking(
                self.store.admin.watch_log_dir_failures, self._threadsafe(self._log_dirs_changed)
            ),
        ]
        await self._load()
        self.controller.start()
        config = self.broker.config
        self._tasks = [
            asyncio.create_task(
                self._every(config["replica.lag.time.max.ms"] / 2, self.replicas.shrink_isrs),
                name="isr-expiration",
            ),
            asyncio.create_task(
                self._every(
                    config["replica.high.watermark.checkpoint.interval.ms"],
                    self._checkpoint_async,
                ),
                name="hw-checkpoint",
            ),
        ]

    async def _load(self) -> None:
        """Read every topic's assignment, config and partition states at once (the watches
        set before deliver the changes after): a broker that says it is ready knows the
        cluster's topics, rather than answering UNKNOWN_TOPIC_OR_PARTITION for them while its
        watches catch up."""
        assignments, configs, states = await run_blocking(self._read_topics)
        for topic, assignment in assignments.items():
            if topic not in self.cache.assignments:
                self.cache.set_assignment(topic, assignment)
            self.cache.topic_configs.setdefault(topic, configs[topic])
        for (topic, index), state in states.items():
            self.cache.set_state(topic, index, state)
        self.loaded = True
        self._apply_all()

    def _read_topics(
        self,
    ) -> tuple[
        dict[str, Versioned[TopicAssignment]],
        dict[str, dict[str, str]],
        dict[tuple[str, int], Versioned[PartitionState]],
    ]:
        assignments, configs, states = {}, {}, {}
        for topic in self.store.topics():
            assignment = self.store.topic_assignment(topic)
            if assignment is None:  # deleted since the listing
                continue
            assignments[topic] = assignment
            configs[topic] = self.store.configs.get("topics", topic)
            for index in assignment.value.partitions:
                state = self.store.partition_state(topic, index)
                if state is not None:
                    states[(topic, index)] = state
        return assignments, configs, states

    async def close(self) -> None:
        """Leave the cluster: hand the leaderships over (controlled shutdown), stop fetching
        and leading, checkpoint, end the session."""
        if self.broker_epoch >= 0 and self.broker.config["controlled.shutdown.enable"]:
            await self._controlled_shutdown()
        self._closed = True
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for watch in [*self._watches, *self._topic_watches.values(), *self._state_watches.values()]:
            watch.cancel()
        await self.replicas.close()
        await run_blocking(self.controller.close)
        await run_blocking(self.store.close)

    async def _controlled_shutdown(self) -> None:
        """Ask the controller to move this broker's leaderships, and wait (at most
        ``controlled.shutdown.max.retries`` × ``controlled.shutdown.retry.backoff.ms``) until
        it leads nothing another in-sync replica could lead."""
        config = self.broker.config
        patience_s = (
            config["controlled.shutdown.max.retries"]
            * config["controlled.shutdown.retry.backoff.ms"]
            / 1000
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience_s
        try:  # bounded: a ZooKeeper that does not answer must not hold the shutdown up
            await asyncio.wait_for(
                run_blocking(self.store.admin.request_controlled_shutdown, self.broker_id),
                patience_s,
            )
        except (MetadataStoreError, TimeoutError) as exc:
            log.warning("controlled shutdown not possible: %s", exc or "ZooKeeper did not answer")
            return

        def moved() -> bool:
            others = self.cache.brokers.keys() - {self.broker_id}
            return not any(
                s.value.leader == self.broker_id and others & set(s.value.isr)
                for s in self.cache.states.values()
            )

        if await self.admin.wait_for(moved, max(0.0, deadline - loop.time())):
            log.info("broker %d: controlled shutdown complete", self.broker_id)
        else:
            log.warning("broker %d: leaderships not all moved; stopping anyway", self.broker_id)

    # -- watches (on the loop) --------------------------------------------------------------

    def _brokers_changed(self, _ids: frozenset[int]) -> None:
        self._spawn(self._refresh_brokers())

    async def _refresh_brokers(self) -> None:
        self.cache.brokers = await run_blocking(self.store.live_brokers)
        self._apply_all()  # a leader may have (re)appeared at an address of its own

    def _configs_changed(self, changes: list[ConfigChange]) -> None:
        for change in changes:
            if change.sequence <= self._config_seen:
                continue
            self._config_seen = change.sequence
            kind, _, name = change.entity_path.partition("/")
            if kind == "topics":
                self._spawn(self._refresh_topic_config(name))

    async def _refresh_topic_config(self, name: str) -> None:
        overrides = await run_blocking(self.store.configs.get, "topics", name)
        if name not in self.cache.assignments:
            return
        self.cache.topic_configs[name] = overrides
        local = self.broker.topics.get(name)
        if local is not None and local.in_cluster and local.overrides != overrides:
            self.broker.topics.set_overrides(local, overrides)

    def _controller_changed(self, controller: int | None) -> None:
        self.cache.controller_id = controller

    def _topics_changed(self, names: frozenset[str]) -> None:
        for topic in set(self._topic_watches) - names:
            self._topic_watches.pop(topic).cancel()
            self._assignment_changed(topic, None)
        for topic in names - set(self._topic_watches):
            self._spawn(self._watch_topic(topic))

    async def _watch_topic(self, topic: str) -> None:
        if topic in self._topic_watches or self._closed:
            return
        callback = self._threadsafe(functools.partial(self._assignment_changed, topic))
        self._topic_watches[topic] = await run_blocking(
            self.store.watch_topic_assignment, topic, callback
        )

    def _assignment_changed(
        self, topic: str, assignment: Versioned[TopicAssignment] | None
    ) -> None:
        if assignment is not None and topic not in self.cache.assignments:
            self._spawn(self._refresh_topic_config(topic))
        self.cache.set_assignment(topic, assignment)
        if assignment is None:
            for key in [k for k in self._state_watches if k[0] == topic]:
                self._state_watches.pop(key).cancel()
                self.replicas.forget(*key)
            local = self.broker.topics.get(topic)
            if local is not None and local.in_cluster:
                self.replicas.unhost_topic(topic)
            return
        for index in assignment.value.partitions:
            if (topic, index) not in self._state_watches:
                self._state_watches[(topic, index)] = _PENDING
                self._spawn(self._watch_state(topic, index))
            else:  # its replicas may have changed (a reassignment): host, lead or drop it
                self._spawn(self.replicas.apply(topic, index))

    async def _watch_state(self, topic: str, index: int) -> None:
        callback = self._threadsafe(functools.partial(self._state_changed, topic, index))
        watch = await run_blocking(self.store.watch_partition_state, topic, index, callback)
        if self._state_watches.get((topic, index)) is _PENDING:
            self._state_watches[(topic, index)] = watch
        else:  # the topic went meanwhile
            watch.cancel()

    def _state_changed(
        self, topic: str, index: int, state: Versioned[PartitionState] | None
    ) -> None:
        self.cache.set_state(topic, index, state)
        self._spawn(self.replicas.apply(topic, index))

    def _apply_all(self) -> None:
        for topic, index in list(self.cache.states):
            self._spawn(self.replicas.apply(topic, index))

    # -- log directories --------------------------------------------------------------------

    def _log_dir_failed(self, directory: LogDir) -> None:
        """A log directory went offline: stop leading and following its partitions, and tell
        the controller (``/log_dir_event_notification``), which moves their leadership away
        and takes them out of the ISR."""
        partitions = self.broker.topics.in_dir(directory)
        self.replicas.take_offline(partitions)
        offline = [TopicPartition(p.topic, p.index) for p in partitions]
        self._spawn(self._notify_log_dir_failure(offline))

    def _log_dirs_changed(self) -> None:
        self._spawn(self._refresh_offline_replicas())

    async def _refresh_offline_replicas(self) -> None:
        """Metadata lists the replicas on failed log directories as offline."""
        self.cache.offline_replicas = await run_blocking(self.store.admin.offline_replicas)

    async def _notify_log_dir_failure(self, partitions: list[TopicPartition]) -> None:
        while not self._closed:
            try:
                await run_blocking(
                    self.store.admin.notify_log_dir_failure, self.broker_id, partitions
                )
                log.warning(
                    "broker %d: told the controller of %d offline replicas",
                    self.broker_id,
                    len(partitions),
                )
                return
            except MetadataStoreError as exc:
                log.warning("broker %d: log directory failure not written: %s", self.broker_id, exc)
                await asyncio.sleep(REGISTER_RETRY_S)

    # -- session ----------------------------------------------------------------------------

    def _session_expired(self) -> None:
        """Cut off long enough for the session to end: stop leading now, register again."""
        log.warning("broker %d: ZooKeeper session expired; giving up leadership", self.broker_id)
        self.controller.session_expired()
        self.replicas.resign_all()
        self._spawn(self._register_again())

    async def _register_again(self) -> None:
        while not self._closed:
            try:
                self.broker_epoch = await run_blocking(
                    self.store.register_broker, self._registration()
                )
                log.info("broker %d registered again (epoch %d)", self.broker_id, self.broker_epoch)
                await self._refresh_brokers()
                return
            except MetadataStoreError as exc:
                log.warning("broker %d: registering again failed: %s", self.broker_id, exc)
                await asyncio.sleep(REGISTER_RETRY_S)

    # -- periodic work ----------------------------------------------------------------------

    async def _checkpoint_async(self) -> None:
        await self.replicas.checkpoint_in_thread()

    async def _every(self, interval_ms: float, job: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("%s failed", getattr(job, "__name__", job))

    # -- plumbing ---------------------------------------------------------------------------

    def _registration(self) -> BrokerRegistration:
        """Every listener's advertised endpoint, with its security protocol (Kafka's
        ``endpoints`` and ``listener_security_protocol_map``)."""
        if self.listeners:
            endpoints = tuple(Endpoint(lst.name, *lst.advertised) for lst in self.listeners)
            protocols = {lst.name: lst.protocol for lst in self.listeners}
        else:
            endpoints = (Endpoint("PLAINTEXT", self.broker.host, self.broker.port),)
            protocols = {"PLAINTEXT": "PLAINTEXT"}
        return BrokerRegistration(
            self.broker_id,
            endpoints,
            protocols,
            rack=self.broker.config["broker.rack"],
            timestamp_ms=int(time.time() * 1000),
        )

    def _threadsafe(self, handler: Callable[..., None]) -> Callable[..., None]:
        """A callback for the store's thread that runs ``handler`` on the loop."""

        def deliver(*args: Any) -> None:
            loop = self._loop
            if loop is not None and not loop.is_closed() and not self._closed:
                with contextlib.suppress(RuntimeError):  # the loop closed in between
                    loop.call_soon_threadsafe(handler, *args)

        return deliver

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.append(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        with contextlib.suppress(ValueError):
            self._tasks.remove(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("cluster member: %s", task.exception(), exc_info=task.exception())


class _Pending:
    """A watch being set (the store call runs in the executor)."""

    def cancel(self) -> None:
        """Nothing to stop yet."""


_PENDING = _Pending()
