"""The controller: one broker of the cluster, elected through the metadata store, that gives
every partition a leader and an ISR and writes them where every broker watches.

Every broker runs a :class:`Controller`; it acts only while its broker holds the office
(:meth:`MetadataStore.elect_controller`, retried whenever the office falls vacant). Like
Kafka's ``ControllerEventManager`` it works on one thread of its own, on one event at a time,
so that its store calls (which block) never hold up the broker's event loop. Unlike Kafka's ZK
controller it sends no LeaderAndIsr/UpdateMetadata requests: brokers watch the partition state
znodes it writes (kio has no LeaderAndIsr; see docs/cluster.md).

Its work is one idempotent pass, :meth:`Controller.reconcile`, run after every change it
watches (brokers coming and going, topics created or deleted, a topic's partitions added,
deletion and preferred-election requests) and every few seconds as a safety net:

- a partition without a state gets one: the first live replica of its assignment leads, the
  live replicas are the ISR (epoch 0); with no live replica it waits;
- a partition whose leader is gone gets a new one from its live ISR (Kafka's offline election,
  :func:`~sluice.broker.cluster.election.elect_offline`); only with
  ``unclean.leader.election.enable`` (the topic's, else the broker's) from outside the ISR;
- a dead follower leaves the ISR of the partitions it was in (the epoch moves on, as Kafka's
  ZK controller does), except the last member, which stays so that a clean election waits for
  it;
- topics whose deletion was requested are removed;
- a pending preferred-leader election moves each listed partition's leadership to its first
  replica when that one is live and in sync; with ``auto.leader.rebalance.enable``, every
  ``leader.imbalance.check.interval.seconds`` the controller does the same for the partitions
  of each broker that leads less than ``100 - leader.imbalance.per.broker.percentage`` % of the
  partitions it prefers (Kafka's rule); a pending unclean election (the ElectLeaders API's
  UNCLEAN, ``/admin/unclean_leader_election``) elects a leader for each listed partition that
  has none, from outside the ISR if need be;
- a partition being reassigned (``adding``/``removing`` replicas in its assignment, written by
  AlterPartitionReassignments) is completed once every target replica is in the ISR: a leader
  from the target if need be, the removed replicas out of the ISR, then the target as the
  assignment (Kafka's KIP-455 steps);
- a replica on a failed log directory (its broker's ``/log_dir_event_notification`` children,
  :meth:`AdminRequestStore.offline_replicas`) counts as dead for its partition alone: it leaves the
  ISR, and a partition it led gets a new leader from the rest of the live ISR (clean elections
  only, unless unclean election is enabled), until its broker starts again;
- a broker that asked for a controlled shutdown (``/admin/controlled_shutdown/<id>``) hands
  each of its leaderships to another in-sync replica and leaves the ISR of the others, and is
  given no new leadership.

Every write is fenced by the controller epoch of this term and names the version of the state
it read: a controller that lost its office gets :class:`ControllerMovedError` and stops; a
write that raced a leader's ISR change is re-read and decided again at the next pass.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from sluice.broker.cluster.election import (
    NO_LEADER,
    LeaderAndIsr,
    elect_controlled_shutdown,
    elect_offline,
    elect_preferred,
    elect_reassigned,
    remove_from_isr,
)
from sluice.broker.cluster.metadata_store import (
    ControllerMovedError,
    MetadataStore,
    MetadataStoreError,
    Watch,
)
from sluice.broker.cluster.model import (
    BadVersion,
    ControllerFence,
    PartitionState,
    ReplicaAssignment,
    TopicAssignment,
    TopicPartition,
    Versioned,
)

log = logging.getLogger(__name__)

RECONCILE_INTERVAL_S = 5.0
"""The safety net: a pass this often even without a change (a missed watch, a failed write)."""

RETRY_AFTER_ERROR_S = 0.5


class Controller:
    """See the module docstring. ``unclean_default`` is the broker's
    ``unclean.leader.election.enable``; a topic's own setting (in the store) wins."""

    def __init__(
        self,
        store: MetadataStore,
        broker_id: int,
        *,
        unclean_default: bool,
        rebalance_interval_s: float | None = None,
        imbalance_percentage: int = 10,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.broker_id = broker_id
        self.unclean_default = unclean_default
        self.rebalance_interval_s = rebalance_interval_s
        """``leader.imbalance.check.interval.seconds`` when ``auto.leader.rebalance.enable``."""
        self.imbalance_percentage = imbalance_percentage
        self.fence: ControllerFence | None = None
        self._clock = clock
        self._next_rebalance = 0.0
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._watches: list[Watch] = []
        self._topic_watches: dict[str, Watch] = {}
        self._thread = threading.Thread(
            target=self._run, name=f"sluice-controller-{broker_id}", daemon=True
        )

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Run for the office now and whenever it falls vacant."""
        self._watches.append(self.store.watch_controller(lambda _holder: self._wake.set()))
        self._thread.start()

    def close(self) -> None:
        """Stop the thread (the office goes with the broker's session, closed by the member)."""
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._cancel_watches(all_of_them=True)

    def session_expired(self) -> None:
        """The store's session ended: whatever office this broker held is gone with it."""
        self.fence = None
        self._wake.set()

    @property
    def active(self) -> bool:
        """Whether this broker is the controller (as far as it knows)."""
        return self.fence is not None

    # -- the thread -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(self._pause())
            self._wake.clear()
            if self._stopped.is_set():
                return
            try:
                if self.fence is None:
                    self._try_election()
                if self.fence is not None:
                    self.reconcile(self.fence)
            except ControllerMovedError as exc:
                log.info("broker %d is no longer the controller: %s", self.broker_id, exc)
                self._resign()
            except MetadataStoreError as exc:
                log.warning("controller: %s; retrying", exc)
                self._stopped.wait(RETRY_AFTER_ERROR_S)
                self._wake.set()
            except Exception:
                log.exception("controller pass failed; retrying")
                self._stopped.wait(RETRY_AFTER_ERROR_S)
                self._wake.set()

    def _try_election(self) -> None:
        if self.store.controller() is not None:
            return
        fence = self.store.elect_controller(self.broker_id)
        if fence is None:
            return
        log.info("broker %d is the controller (controller epoch %d)", self.broker_id, fence.epoch)
        self.fence = fence
        wake = self._wake.set
        self._watches += [
            self.store.watch_live_brokers(lambda _ids: wake()),
            self.store.watch_topics(lambda _names: wake()),
            self.store.admin.watch_topic_deletions(lambda _names: wake()),
            self.store.admin.watch_preferred_election(lambda _request: wake()),
            self.store.admin.watch_preferred_election(lambda _request: wake(), unclean=True),
            self.store.admin.watch_controlled_shutdowns(lambda _ids: wake()),
            self.store.admin.watch_log_dir_failures(wake),
        ]
        if self.rebalance_interval_s is not None:
            self._next_rebalance = self._clock() + self.rebalance_interval_s

    def _resign(self) -> None:
        self.fence = None
        self._cancel_watches(all_of_them=False)
        self._wake.set()

    def _cancel_watches(self, *, all_of_them: bool) -> None:
        keep = [] if all_of_them else self._watches[:1]  # the watch of the office itself
        for watch in self._watches[len(keep) :] + list(self._topic_watches.values()):
            watch.cancel()
        self._watches = keep
        self._topic_watches.clear()

    # -- the pass ---------------------------------------------------------------------------

    def reconcile(self, fence: ControllerFence) -> None:
        """One pass over the cluster; see the module docstring."""
        registered = frozenset(self.store.live_brokers())
        stopping = self.store.admin.controlled_shutdowns() & registered
        live = registered - stopping  # no new leadership for a broker on its way out
        deleting = self.store.admin.pending_topic_deletions()
        for topic in sorted(deleting):
            log.info("controller: deleting topic %s", topic)
            self.store.admin.complete_topic_deletion(topic, fence)
        topics = self.store.topics() - deleting
        self._watch_assignments(topics)
        preferred = self.store.admin.pending_preferred_election() or frozenset()
        forced = self.store.admin.pending_preferred_election(unclean=True) or frozenset()
        rebalance = self.rebalance_interval_s is not None and self._clock() >= self._next_rebalance
        offline = self.store.admin.offline_replicas()
        led: list[tuple[TopicPartition, tuple[int, ...], Versioned[PartitionState]]] = []
        for topic in sorted(topics):
            assignment = self.store.topic_assignment(topic)
            if assignment is None:
                continue
            unclean: bool | None = None
            for index, replicas in sorted(assignment.value.partitions.items()):
                tp = TopicPartition(topic, index)
                live = _live_replicas(registered - stopping, offline, tp)
                state = self.store.partition_state(topic, index)
                if state is None:
                    self._create_state(tp, replicas.replicas, live, fence)
                    continue
                if state.value.leader in stopping or stopping & set(state.value.isr):
                    self._move_off(tp, replicas.replicas, state, registered, stopping, fence)
                elif state.value.leader not in live:
                    if unclean is None:
                        unclean = self._unclean(topic)
                    allowed = unclean or tp in forced
                    self._elect(tp, replicas.replicas, state, live, fence, unclean=allowed)
                elif tp in preferred:
                    self._elect_preferred(tp, replicas.replicas, state, live, fence)
                elif replicas.adding or replicas.removing:
                    self._drop_dead_followers(tp, state, live, fence)
                    self._reassign(tp, replicas, state, live, fence)
                else:
                    self._drop_dead_followers(tp, state, live, fence)
                    led.append((tp, replicas.replicas, state))
        if preferred:
            self.store.admin.complete_preferred_election(fence)
        if forced:
            self.store.admin.complete_preferred_election(fence, unclean=True)
        if rebalance:
            assert self.rebalance_interval_s is not None
            self._next_rebalance = self._clock() + self.rebalance_interval_s
            self._rebalance(led, registered - stopping, fence)

    def _pause(self) -> float:
        """Until the next pass without a change: the safety net, or the rebalance check."""
        if self.rebalance_interval_s is None or self.fence is None:
            return RECONCILE_INTERVAL_S
        return max(0.0, min(RECONCILE_INTERVAL_S, self._next_rebalance - self._clock()))

    def _rebalance(
        self,
        partitions: list[tuple[TopicPartition, tuple[int, ...], Versioned[PartitionState]]],
        live: frozenset[int],
        fence: ControllerFence,
    ) -> None:
        """Kafka's ``checkAndTriggerAutoLeaderRebalance``: a broker whose share of partitions
        it prefers but does not lead is above ``leader.imbalance.per.broker.percentage`` gets
        them back (those whose ISR it is in)."""
        by_preferred: dict[int, list[tuple[TopicPartition, tuple[int, ...], Any]]] = {}
        for tp, replicas, state in partitions:
            if replicas:
                by_preferred.setdefault(replicas[0], []).append((tp, replicas, state))
        for broker, preferring in sorted(by_preferred.items()):
            elsewhere = [p for p in preferring if p[2].value.leader != broker]
            if broker not in live or not elsewhere:
                continue
            if len(elsewhere) * 100 <= self.imbalance_percentage * len(preferring):
                continue
            log.info(
                "controller: broker %d leads %d of the %d partitions it prefers: rebalancing",
                broker,
                len(preferring) - len(elsewhere),
                len(preferring),
            )
            for tp, replicas, state in elsewhere:
                self._elect_preferred(tp, replicas, state, live, fence)

    def _create_state(
        self,
        tp: TopicPartition,
        replicas: tuple[int, ...],
        live: frozenset[int],
        fence: ControllerFence,
    ) -> None:
        isr = tuple(r for r in replicas if r in live)
        if not isr:
            return  # no replica alive yet: the partition waits (Kafka's NewPartition)
        state = PartitionState(isr[0], 0, isr, fence.epoch)
        if not isinstance(
            self.store.create_partition_state(tp.topic, tp.partition, state, fence), BadVersion
        ):
            log.info("controller: %s-%d led by %d, isr %s", tp.topic, tp.partition, isr[0], isr)

    def _elect(
        self,
        tp: TopicPartition,
        replicas: tuple[int, ...],
        state: Versioned[PartitionState],
        live: frozenset[int],
        fence: ControllerFence,
        *,
        unclean: bool,
    ) -> None:
        current = _leader_and_isr(state.value)
        elected = elect_offline(replicas, current, live, unclean=unclean)
        if elected is None:
            if current.leader != NO_LEADER:  # the leader is gone and nobody may take over
                self._write(
                    tp, state, LeaderAndIsr(NO_LEADER, current.leader_epoch + 1, current.isr), fence
                )
            return
        clean = elected.leader in current.isr
        log.log(
            logging.INFO if clean else logging.WARNING,
            "controller: %s-%d %s leader %d in epoch %d, isr %s",
            tp.topic,
            tp.partition,
            "elected" if clean else "elected (UNCLEAN: records may be lost)",
            elected.leader,
            elected.leader_epoch,
            elected.isr,
        )
        self._write(tp, state, elected, fence, recovering=not clean)

    def _move_off(
        self,
        tp: TopicPartition,
        replicas: tuple[int, ...],
        state: Versioned[PartitionState],
        registered: frozenset[int],
        stopping: frozenset[int],
        fence: ControllerFence,
    ) -> None:
        """Controlled shutdown: leadership to a live in-sync replica that stays, and the
        brokers stopping out of the ISR (Kafka's ``ControlledShutdownLeaderElection`` and the
        follower side of ``doControlledShutdown``). A partition whose only in-sync replica is
        stopping keeps it: the broker stops anyway when its patience runs out."""
        current = _leader_and_isr(state.value)
        if current.leader in stopping:
            moved = elect_controlled_shutdown(replicas, current, registered, stopping)
            if moved is None:
                return
            log.info(
                "controller: %s-%d moved to %d for the controlled shutdown of %d",
                tp.topic,
                tp.partition,
                moved.leader,
                current.leader,
            )
            self._write(tp, state, moved, fence)
            return
        isr = tuple(r for r in current.isr if r not in stopping)
        if isr and isr != current.isr:
            self._write(
                tp, state, LeaderAndIsr(current.leader, current.leader_epoch + 1, isr), fence
            )

    def _elect_preferred(
        self,
        tp: TopicPartition,
        replicas: tuple[int, ...],
        state: Versioned[PartitionState],
        live: frozenset[int],
        fence: ControllerFence,
    ) -> None:
        current = _leader_and_isr(state.value)
        if replicas and current.leader == replicas[0]:
            return
        elected = elect_preferred(replicas, current, live)
        if elected is not None:
            log.info(
                "controller: %s-%d back to its preferred leader %d",
                tp.topic,
                tp.partition,
                elected.leader,
            )
            self._write(tp, state, elected, fence)

    def _reassign(
        self,
        tp: TopicPartition,
        replicas: ReplicaAssignment,
        state: Versioned[PartitionState],
        live: frozenset[int],
        fence: ControllerFence,
    ) -> None:
        """A reassignment in progress (KIP-455): once every target replica is in the ISR, a
        leader from the target if the current one is not in it, the removed replicas out of
        the ISR (the epoch moves on), then the assignment is the target alone — the removed
        replicas' brokers then drop their copies. Until then the new replicas catch up as
        followers and join the ISR through the leader."""
        target = tuple(r for r in replicas.replicas if r not in replicas.removing)
        current = _leader_and_isr(state.value)
        if not set(target) <= set(current.isr):
            return
        after = current
        if current.leader not in target:
            elected = elect_reassigned(target, current, live)
            if elected is None:
                return
            after = elected
        isr = tuple(r for r in after.isr if r in target)
        if (after.leader, isr) != (current.leader, current.isr):
            after = LeaderAndIsr(after.leader, current.leader_epoch + 1, isr)
            written = self.store.set_partition_state(
                tp.topic,
                tp.partition,
                PartitionState(after.leader, after.leader_epoch, after.isr, fence.epoch, 0),
                state.version,
                fence,
            )
            if isinstance(written, BadVersion):  # an ISR change raced: the next pass
                self._wake.set()
                return
        assignment = self.store.topic_assignment(tp.topic)
        if assignment is None:
            return
        partitions = dict(assignment.value.partitions)
        if partitions.get(tp.partition) != replicas:
            return  # altered meanwhile: the next pass sees the new one
        partitions[tp.partition] = ReplicaAssignment(target)
        new = TopicAssignment(partitions, assignment.value.topic_id)
        if isinstance(
            self.store.set_topic_assignment(tp.topic, new, assignment.version), BadVersion
        ):
            self._wake.set()
            return
        log.info(
            "controller: reassignment of %s-%d done: replicas %s, leader %d",
            tp.topic,
            tp.partition,
            list(target),
            after.leader,
        )

    def _drop_dead_followers(
        self,
        tp: TopicPartition,
        state: Versioned[PartitionState],
        live: frozenset[int],
        fence: ControllerFence,
    ) -> None:
        current = after = _leader_and_isr(state.value)
        for replica in current.isr:
            if replica not in live and len(after.isr) > 1:
                after = remove_from_isr(after, replica)
        if after != current:
            # remove_from_isr moves the epoch on once per replica; once is enough
            after = LeaderAndIsr(after.leader, current.leader_epoch + 1, after.isr)
            self._write(tp, state, after, fence)

    def _write(
        self,
        tp: TopicPartition,
        state: Versioned[PartitionState],
        new: LeaderAndIsr,
        fence: ControllerFence,
        *,
        recovering: bool = False,
    ) -> None:
        written = self.store.set_partition_state(
            tp.topic,
            tp.partition,
            PartitionState(new.leader, new.leader_epoch, new.isr, fence.epoch, int(recovering)),
            state.version,
            fence,
        )
        if isinstance(written, BadVersion):  # a leader changed the ISR meanwhile: next pass
            self._wake.set()

    def _unclean(self, topic: str) -> bool:
        value = self.store.configs.get("topics", topic).get("unclean.leader.election.enable")
        return self.unclean_default if value is None else value.strip().lower() == "true"

    def _watch_assignments(self, topics: frozenset[str]) -> None:
        """Watch each topic's assignment (partitions added), and stop for topics gone."""
        for topic in set(self._topic_watches) - topics:
            self._topic_watches.pop(topic).cancel()
        for topic in topics - set(self._topic_watches):
            self._topic_watches[topic] = self.store.watch_topic_assignment(
                topic, lambda _assignment: self._wake.set()
            )


def _leader_and_isr(state: PartitionState) -> LeaderAndIsr:
    return LeaderAndIsr(state.leader, state.leader_epoch, state.isr)


def _live_replicas(
    live: frozenset[int], offline: dict[int, frozenset[TopicPartition]], tp: TopicPartition
) -> frozenset[int]:
    """The live brokers whose replica of ``tp`` is not on a failed log directory."""
    gone = [broker for broker, partitions in offline.items() if tp in partitions]
    return live - frozenset(gone) if gone else live
