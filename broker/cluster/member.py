"""A broker's membership of a cluster: registration, the metadata cache, the replicas it hosts
and whether it leads or follows each (Kafka's ``KafkaServer`` startup in ZooKeeper mode with
``ReplicaManager``'s become-leader/become-follower, driven by watches instead of LeaderAndIsr).

:class:`ClusterMember` lives on the broker's event loop. The metadata store's calls block, so
they run in the loop's default executor; its watch callbacks run on the store's thread and are
handed to the loop with ``call_soon_threadsafe``. What it does:

- at start, registers the broker (``/brokers/ids/<id>``, refused when another live broker has
  the id) once the listener accepts connections, and starts the :class:`~.controller.Controller`
  thread that runs for the office;
- watches the live brokers, the controller, the topics, each topic's assignment and each of its
  partitions' state, into :class:`~.metadata_cache.ClusterMetadata`;
- hosts the replicas assigned to this broker (:meth:`TopicManager.host`, creating the log) and
  removes those no longer assigned (a deleted topic);
- applies each hosted partition's state: the leader of the state leads — it records the leader
  epoch in its log and keeps a :class:`~sluice.broker.replication.leadership.Leadership` (high
  watermark, ISR, ``acks=all``) — and every other replica follows it with the replica fetcher;
  a partition without a live leader is served by nobody (NOT_LEADER_OR_FOLLOWER);
- when the store's session expires, stops leading at once (a broker cut off from the cluster
  must not act as leader: the controller has likely moved its partitions), then registers again
  on the new session;
- proposes ISR changes for the partitions it leads as versioned writes of their state
  (:meth:`propose_isr`), and checkpoints the high watermarks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from kio.schema.errors import ErrorCode

from sluice.broker.cluster.controller import Controller
from sluice.broker.cluster.metadata_cache import NO_LEADER, ClusterMetadata
from sluice.broker.cluster.metadata_store import (
    AdminRequestPendingError,
    MetadataStore,
    MetadataStoreError,
    TopicExistsError,
    Watch,
)
from sluice.broker.cluster.model import (
    BadVersion,
    BrokerRegistration,
    ConfigChange,
    Endpoint,
    PartitionState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
    Versioned,
)
from sluice.broker.cluster.placement import Broker as PlacedBroker
from sluice.broker.cluster.placement import assign_replicas
from sluice.broker.errors import KafkaError
from sluice.broker.log.partition_metadata import random_topic_id
from sluice.broker.replication.fetcher import ReplicaFetcherManager
from sluice.broker.replication.hw_checkpoint import (
    checkpoint_high_watermarks,
    read_high_watermarks,
)
from sluice.broker.replication.leadership import Leadership
from sluice.broker.topics import Partition

if TYPE_CHECKING:
    from sluice.broker.broker import Broker

log = logging.getLogger(__name__)

T = TypeVar("T")

LISTENER = "PLAINTEXT"
REGISTER_RETRY_S = 1.0


class ClusterMember:
    """See the module docstring. ``store`` is connected; :meth:`start` registers."""

    def __init__(self, broker: Broker, store: MetadataStore) -> None:
        self.broker = broker
        self.store = store
        self.broker_id = broker.node_id
        self.cache = ClusterMetadata()
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
        self.fetchers = ReplicaFetcherManager(self.broker_id, config, broker.clock)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._state_watches: dict[tuple[str, int], Watch] = {}
        self._applied: dict[tuple[str, int], tuple[int, int, tuple[str, int] | None]] = {}
        """Per hosted partition, the leader, leader epoch and leader's address (None: this
        broker, or unknown) last put in force."""
        self._tasks: list[asyncio.Task[None]] = []
        self.loaded = False
        """Whether the cluster's topics were read once (:meth:`start`): until then an unknown
        topic may exist."""
        self._config_seen = -1
        """The last config change notification acted on."""
        self._closed = False

    # -- lifecycle --------------------------------------------------------------------------

    def prepare(self) -> None:
        """Before the listener opens: no hosted partition is led until the cluster says so,
        and each gets the high watermark of the last checkpoint (the log end is not known to
        be committed)."""
        saved = read_high_watermarks(self.broker.data_dir)
        for partition in self.broker.topics.all_partitions():
            partition.is_leader = False
            partition.log.set_high_watermark(saved.get((partition.topic, partition.index), 0))

    async def start(self) -> None:
        """Register, watch, run for controller; returns once registered."""
        self._loop = asyncio.get_running_loop()
        self.store.on_session_expired(self._threadsafe(self._session_expired))
        self.broker_epoch = await self._blocking(self.store.register_broker, self._registration())
        log.info("broker %d registered (broker epoch %d)", self.broker_id, self.broker_epoch)
        self.cache.brokers = await self._blocking(self.store.live_brokers)
        self._watches += [
            await self._blocking(
                self.store.watch_live_brokers, self._threadsafe(self._brokers_changed)
            ),
            await self._blocking(
                self.store.watch_controller, self._threadsafe(self._controller_changed)
            ),
            await self._blocking(self.store.watch_topics, self._threadsafe(self._topics_changed)),
            await self._blocking(
                self.store.watch_config_changes, self._threadsafe(self._configs_changed)
            ),
        ]
        await self._load()
        self.controller.start()
        config = self.broker.config
        self._tasks = [
            asyncio.create_task(
                self._every(config["replica.lag.time.max.ms"] / 2, self._shrink_isrs),
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
        assignments, configs, states = await self._blocking(self._read_topics)
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
            configs[topic] = self.store.entity_config("topics", topic)
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
        await self.fetchers.close()
        for partition in self.broker.topics.all_partitions():
            self._stop_leading(partition)
        self._checkpoint()
        await self._blocking(self.controller.close)
        await self._blocking(self.store.close)

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
                self._blocking(self.store.request_controlled_shutdown, self.broker_id), patience_s
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

        if await self.wait_for(moved, max(0.0, deadline - loop.time())):
            log.info("broker %d: controlled shutdown complete", self.broker_id)
        else:
            log.warning("broker %d: leaderships not all moved; stopping anyway", self.broker_id)

    # -- what clients see -------------------------------------------------------------------

    def endpoint(self, node_id: int) -> tuple[str, int] | None:
        """The advertised host and port of a live broker."""
        live = self.cache.brokers.get(node_id)
        found = None if live is None else live.registration.endpoint(LISTENER)
        return None if found is None else (found.host, found.port)

    async def create_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        config: Mapping[str, str],
        *,
        assignments: Mapping[int, list[int]] | None = None,
        validate_only: bool = False,
    ) -> uuid.UUID | None:
        """Create a topic in the cluster (any broker may: ZooKeeper-era admin); replicas by
        Kafka's placement over the live brokers unless ``assignments`` are given. Raises
        :class:`KafkaError` (TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR,
        INVALID_REPLICA_ASSIGNMENT); the new topic's id (None when only validating)."""
        live = self.cache.brokers
        if assignments is None:
            placed = [PlacedBroker(b, live[b].registration.rack) for b in sorted(live)]
            assignments = assign_replicas(placed, partitions, replication_factor)
        else:
            self._check_assignments(assignments)
        assignment = TopicAssignment(
            {i: ReplicaAssignment(tuple(r)) for i, r in assignments.items()}, random_topic_id()
        )
        if validate_only:
            if name in self.cache.assignments:
                raise KafkaError(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
            return None
        try:
            await self._blocking(self.store.create_topic, name, assignment, dict(config))
        except TopicExistsError as exc:
            raise KafkaError(ErrorCode.topic_already_exists, str(exc)) from None
        return assignment.topic_id

    async def add_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None, *, validate_only: bool
    ) -> None:
        """Grow a topic to ``count`` partitions (CreatePartitions): the new partitions' replicas
        by Kafka's placement (or as given), written to the topic's assignment at the version
        read; the controller then elects their leaders."""
        current = self.cache.assignments.get(name)
        if current is None:
            raise KafkaError(ErrorCode.unknown_topic_or_partition, f"unknown topic {name!r}")
        have = len(current.value.partitions)
        if count <= have:
            raise KafkaError(
                ErrorCode.invalid_partitions,
                f"topic has {have} partitions; the count can only grow (asked {count})",
            )
        live = self.cache.brokers
        factor = len(current.value.partitions[0].replicas)
        if assignments:
            if len(assignments) != count - have:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"{len(assignments)} assignments for {count - have} new partitions",
                )
            added = dict(enumerate(assignments, start=have))
            self._check_assignments(added)
        else:
            placed = [PlacedBroker(b, live[b].registration.rack) for b in sorted(live)]
            added = assign_replicas(placed, count - have, factor, first_partition=have)
        if validate_only:
            return
        partitions = dict(current.value.partitions)
        partitions.update({i: ReplicaAssignment(tuple(r)) for i, r in added.items()})
        written = await self._blocking(
            self.store.set_topic_assignment,
            name,
            TopicAssignment(partitions, current.value.topic_id),
            current.version,
        )
        if isinstance(written, BadVersion):
            raise KafkaError(
                ErrorCode.reassignment_in_progress, f"topic {name!r} changed meanwhile: retry"
            )

    def _check_assignments(self, assignments: Mapping[int, list[int]]) -> None:
        live = self.cache.brokers
        for index, replicas in assignments.items():
            unknown = [r for r in replicas if r not in live]
            if len(set(replicas)) != len(replicas) or not replicas or unknown:
                raise KafkaError(
                    ErrorCode.invalid_replica_assignment,
                    f"partition {index}: replicas {replicas} must be distinct live brokers",
                )

    async def ensure_topic(
        self, name: str, partitions: int, replication_factor: int, config: Mapping[str, str]
    ) -> None:
        """Create the topic unless it exists (the internal topics, auto-creation)."""
        if name in self.cache.assignments:
            return
        try:
            await self.create_topic(name, partitions, replication_factor, config)
        except KafkaError as exc:
            if exc.code != ErrorCode.topic_already_exists:
                raise

    async def set_topic_config(self, name: str, overrides: Mapping[str, str]) -> None:
        """Replace a topic's config overrides in the cluster; every broker hosting it applies
        them when the change notification reaches it."""
        await self._blocking(self.store.set_entity_config, "topics", name, dict(overrides))
        self.cache.topic_configs[name] = dict(overrides)

    async def delete_topic(self, name: str) -> None:
        """Ask the controller to delete the topic."""
        await self._blocking(self.store.request_topic_deletion, name)

    async def elect_leaders(
        self, partitions: list[TopicPartition], *, unclean: bool, timeout_s: float
    ) -> set[TopicPartition]:
        """Ask the controller for a preferred (or unclean) election of ``partitions`` and wait
        (at most ``timeout_s``) until the cache shows them elected; those that are."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while True:
            try:
                await self._blocking(
                    functools.partial(
                        self.store.request_preferred_election, partitions, unclean=unclean
                    )
                )
                break
            except AdminRequestPendingError:  # one request of a kind at a time: queue up
                if loop.time() >= deadline:
                    return set()
                await asyncio.sleep(0.1)

        def elected(tp: TopicPartition) -> bool:
            leader = self.cache.leader_of(tp.topic, tp.partition)
            if unclean:
                return leader != NO_LEADER
            assignment = self.cache.assignments.get(tp.topic)
            found = None if assignment is None else assignment.value.partitions.get(tp.partition)
            return found is not None and leader == found.replicas[0]

        await self.wait_for(lambda: all(elected(tp) for tp in partitions), deadline - loop.time())
        return {tp for tp in partitions if elected(tp)}

    async def wait_for(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Wait (bounded) until ``condition`` holds on the cache, checked at each change."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not condition():
            if loop.time() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    # -- the leader's ISR writes (Leadership's IsrStore) ------------------------------------

    async def propose_isr(
        self, topic: str, partition: int, state: Versioned[PartitionState], isr: tuple[int, ...]
    ) -> Versioned[PartitionState] | None:
        """Write ``state`` with ``isr`` at its version (no controller fence: the version is the
        fence); the state written, or None when the state changed first."""
        new = PartitionState(
            state.value.leader,
            state.value.leader_epoch,
            isr,
            state.value.controller_epoch,
            state.value.leader_recovery_state,
        )
        try:
            written = await self._blocking(
                self.store.set_partition_state, topic, partition, new, state.version, None
            )
        except MetadataStoreError as exc:
            log.warning("%s-%d: ISR change to %s not written: %s", topic, partition, isr, exc)
            return None
        if isinstance(written, BadVersion):
            return None
        log.info("%s-%d: ISR is now %s", topic, partition, list(isr))
        result = Versioned(new, written)
        self.cache.set_state(topic, partition, result)
        return result

    # -- watches (on the loop) --------------------------------------------------------------

    def _brokers_changed(self, _ids: frozenset[int]) -> None:
        self._spawn(self._refresh_brokers())

    async def _refresh_brokers(self) -> None:
        self.cache.brokers = await self._blocking(self.store.live_brokers)
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
        overrides = await self._blocking(self.store.entity_config, "topics", name)
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
        self._topic_watches[topic] = await self._blocking(
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
                self._applied.pop(key, None)
            local = self.broker.topics.get(topic)
            if local is not None and local.in_cluster:
                self._spawn(self._unhost_topic(topic))
            return
        for index in assignment.value.partitions:
            if (topic, index) not in self._state_watches:
                self._state_watches[(topic, index)] = _PENDING
                self._spawn(self._watch_state(topic, index))

    async def _watch_state(self, topic: str, index: int) -> None:
        callback = self._threadsafe(functools.partial(self._state_changed, topic, index))
        watch = await self._blocking(self.store.watch_partition_state, topic, index, callback)
        if self._state_watches.get((topic, index)) is _PENDING:
            self._state_watches[(topic, index)] = watch
        else:  # the topic went meanwhile
            watch.cancel()

    def _state_changed(
        self, topic: str, index: int, state: Versioned[PartitionState] | None
    ) -> None:
        self.cache.set_state(topic, index, state)
        self._spawn(self._apply(topic, index))

    # -- hosting and roles ------------------------------------------------------------------

    def _apply_all(self) -> None:
        for topic, index in list(self.cache.states):
            self._spawn(self._apply(topic, index))

    async def _apply(self, topic: str, index: int) -> None:
        """Put the partition's state in force on this broker's replica."""
        assignment = self.cache.assignments.get(topic)
        if assignment is None or assignment.value.topic_id is None or self._closed:
            return
        replicas = assignment.value.partitions.get(index)
        if replicas is None or self.broker_id not in replicas.replicas:
            local = self.broker.topics.get(topic)
            if local is not None and index in local.partitions:
                self._stop_leading(local.partitions[index])
                self.fetchers.unfollow(local.partitions[index])
                self.broker.topics.unhost(local, index)
                self._applied.pop((topic, index), None)
            return
        partition = self.broker.topics.partition(topic, index)
        if partition is None:
            overrides = await self._blocking(self.store.entity_config, "topics", topic)
            partition = self.broker.topics.partition(topic, index)  # may exist by now
            if partition is None:
                partition = self.broker.topics.host(
                    topic,
                    assignment.value.topic_id,
                    len(assignment.value.partitions),
                    overrides,
                    index,
                )
                partition.is_leader = False
                partition.log.set_high_watermark(0)
        versioned = self.cache.states.get((topic, index))
        if versioned is None:
            return
        state = versioned.value
        leader_at = None if state.leader == self.broker_id else self.endpoint(state.leader)
        wanted = (state.leader, state.leader_epoch, leader_at)
        if self._applied.get((topic, index)) == wanted:
            if partition.leadership is not None:
                partition.leadership.update_state(versioned)
            return
        self._applied[(topic, index)] = wanted
        if state.leader == self.broker_id and partition.leadership is not None:
            self._lead_on(partition, versioned)
        elif state.leader == self.broker_id:
            self._become_leader(partition, replicas.replicas, versioned)
        else:
            self._become_follower(partition, state)

    def _become_leader(
        self, partition: Partition, replicas: tuple[int, ...], state: Versioned[PartitionState]
    ) -> None:
        self.fetchers.unfollow(partition)
        self._stop_leading(partition)
        try:
            partition.log.become_leader(state.value.leader_epoch)
        except ValueError as exc:  # an older epoch than the log's: a stale state
            log.warning("%s-%d: not leading: %s", partition.topic, partition.index, exc)
            return
        partition.leadership = Leadership(
            partition,
            self.broker_id,
            replicas,
            state,
            self.broker.config,
            self.broker.clock,
            self,
            self._live_ids,
        )
        partition.is_leader = True
        log.info(
            "%s-%d: leader in epoch %d (isr %s)",
            partition.topic,
            partition.index,
            state.value.leader_epoch,
            list(state.value.isr),
        )
        self.broker.leadership_changed(partition.topic, partition.index, True)

    def _lead_on(self, partition: Partition, state: Versioned[PartitionState]) -> None:
        """Still the leader, in a new epoch (the controller changed the ISR): the followers'
        positions and the waiting writes carry on."""
        assert partition.leadership is not None
        try:
            partition.log.become_leader(state.value.leader_epoch)
        except ValueError as exc:
            log.warning("%s-%d: %s", partition.topic, partition.index, exc)
            return
        partition.leadership.update_state(state)
        log.info(
            "%s-%d: leader in epoch %d (isr %s)",
            partition.topic,
            partition.index,
            state.value.leader_epoch,
            list(state.value.isr),
        )

    def _become_follower(self, partition: Partition, state: PartitionState) -> None:
        was_leader = partition.is_leader
        self._stop_leading(partition)
        endpoint = self.endpoint(state.leader) if state.leader != NO_LEADER else None
        if endpoint is None:
            self.fetchers.unfollow(partition)
            log.info("%s-%d: no live leader", partition.topic, partition.index)
        else:
            self.fetchers.follow(partition, state.leader, endpoint, state.leader_epoch)
            log.info(
                "%s-%d: following %d in epoch %d",
                partition.topic,
                partition.index,
                state.leader,
                state.leader_epoch,
            )
        if was_leader:
            self.broker.leadership_changed(partition.topic, partition.index, False)

    def _stop_leading(self, partition: Partition) -> None:
        partition.is_leader = False
        if partition.leadership is not None:
            partition.leadership.resign()
            partition.leadership = None
        partition.notify()

    async def _unhost_topic(self, name: str) -> None:
        topic = self.broker.topics.get(name)
        if topic is None:
            return
        for partition in list(topic.partitions.values()):
            was_leader = partition.is_leader
            self._stop_leading(partition)
            self.fetchers.unfollow(partition)
            if was_leader:
                self.broker.leadership_changed(name, partition.index, False)
        self.broker.topics.delete(topic)

    # -- session ----------------------------------------------------------------------------

    def _session_expired(self) -> None:
        """Cut off long enough for the session to end: stop leading now, register again."""
        log.warning("broker %d: ZooKeeper session expired; giving up leadership", self.broker_id)
        self.controller.session_expired()
        for partition in self.broker.topics.all_partitions():
            if partition.is_leader:
                self._stop_leading(partition)
                self.broker.leadership_changed(partition.topic, partition.index, False)
        self._applied.clear()
        self._spawn(self._register_again())

    async def _register_again(self) -> None:
        while not self._closed:
            try:
                self.broker_epoch = await self._blocking(
                    self.store.register_broker, self._registration()
                )
                log.info("broker %d registered again (epoch %d)", self.broker_id, self.broker_epoch)
                await self._refresh_brokers()
                return
            except MetadataStoreError as exc:
                log.warning("broker %d: registering again failed: %s", self.broker_id, exc)
                await asyncio.sleep(REGISTER_RETRY_S)

    # -- periodic work ----------------------------------------------------------------------

    async def _shrink_isrs(self) -> None:
        now = self.broker.clock()
        for partition in self.broker.topics.all_partitions():
            if partition.leadership is not None:
                await partition.leadership.maybe_shrink_isr(now)

    async def _checkpoint_async(self) -> None:
        self._checkpoint()

    def _checkpoint(self) -> None:
        partitions = [p for p in self.broker.topics.all_partitions()]
        checkpoint_high_watermarks(self.broker.data_dir, partitions)

    async def _every(self, interval_ms: float, job: Callable[[], Any]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("%s failed", getattr(job, "__name__", job))

    # -- plumbing ---------------------------------------------------------------------------

    def _live_ids(self) -> Collection[int]:
        return self.cache.brokers.keys()

    def _registration(self) -> BrokerRegistration:
        host, port = self.broker.host, self.broker.port
        return BrokerRegistration(
            self.broker_id,
            (Endpoint(LISTENER, host, port),),
            {LISTENER: LISTENER},
            rack=self.broker.config["broker.rack"],
            timestamp_ms=int(time.time() * 1000),
        )

    async def _blocking(self, call: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, functools.partial(call, *args))

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
