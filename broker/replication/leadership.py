"""A partition leader's side of replication: its record of its followers, the high watermark,
ISR shrink and expansion, and the ``acks=all`` waiters (Kafka's ``Partition`` as a leader, with
its ``DelayedProduce`` purgatory).

A :class:`Leadership` exists for each partition this broker leads in a cluster, from the
election that made it leader until it resigns (on one node, and on a follower, a partition has
none: there the high watermark is the log end offset). It applies the pure rules of
:class:`~sluice.broker.cluster.replica_state.ReplicaState` to the partition's log:

- **Followers acknowledge by fetching.** The Fetch handler calls :meth:`Leadership.follower_fetched`
  for each partition of a replica fetch; the fetch offset is the follower's log end. The high
  watermark then advances to what every in-sync replica has (and stands still while the ISR is
  below the effective ``min.insync.replicas``, Kafka 3.7's rule); when it moves, consumer
  long-polls are woken (:meth:`Partition.notify`) and so are the ``acks=all`` writes it passed.
  The leader's own appends call :meth:`Leadership.appended` (which matters when the ISR is the
  leader alone). The high watermark starts at the log's (restored from the
  ``replication-offset-checkpoint`` by the cluster member) and never moves back.
- **ISR changes are proposed, never assumed.** A follower that caught up (its log end reached the
  high watermark and the start of the leader's epoch) is added, and in-sync followers that have
  not caught up for ``replica.lag.time.max.ms`` are dropped (:meth:`Leadership.maybe_shrink_isr`,
  called every half lag time), by a versioned write of the partition state through an
  :class:`IsrStore` (the cluster member, on ZooKeeper: Kafka's ZooKeeper-mode leader writing
  ``/brokers/topics/<t>/partitions/<p>/state`` at the version it read). One proposal is in flight
  at a time, as a task of its own, so a fetch never waits for ZooKeeper. A proposal that loses
  the race (someone else wrote first) changes nothing: the leader goes on with the ISR it knows
  until :meth:`Leadership.update_state` brings the newer state, and proposes again after that (or
  after :data:`PROPOSAL_RETRY_MS`, should the store have been unreachable). Until a shrink is
  written the dropped followers still count for the high watermark; an addition counts as soon
  as the follower caught up (the stricter choice both ways, as Kafka's "maximal ISR").
- **acks=all.** Before appending, :meth:`Leadership.check_min_isr` refuses with
  NOT_ENOUGH_REPLICAS when the ISR is smaller than ``min(min.insync.replicas, replication
  factor)``; after it, :meth:`Leadership.wait_for_replication` waits until the high watermark
  passed the batch (NONE), or answers NOT_ENOUGH_REPLICAS_AFTER_APPEND when it passed while the
  ISR was below the minimum (the batch is in the log), REQUEST_TIMED_OUT after the produce
  request's timeout (the batch may still commit later), NOT_LEADER_OR_FOLLOWER when the broker
  stopped leading meanwhile (:meth:`Leadership.resign`).

- **Read replicas (KIP-392).** :meth:`Leadership.read_replicas` lists the in-sync followers
  whose log holds a consumer's fetch offset, for the Fetch handler's replica selector.

Time comes from the injected clock (milliseconds) or from the caller's ``now_ms``. Not
thread-safe: used from the broker's event loop only. Nothing is written to disk here (the log
and the checkpoint are).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode

from sluice.broker.cluster.model import PartitionState, Versioned
from sluice.broker.cluster.replica_state import AckState, ReplicaState
from sluice.broker.config import BrokerConfig

if TYPE_CHECKING:
    from sluice.broker.topics import Partition

__all__ = ["PROPOSAL_RETRY_MS", "IsrStore", "Leadership"]

log = logging.getLogger(__name__)

PROPOSAL_RETRY_MS = 1_000
"""After a proposal that was not written, how long the leader waits for a newer state before it
proposes again."""

_ACK_CODES = {
    AckState.DONE: ErrorCode.none,
    AckState.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.not_enough_replicas_after_append,
}


class IsrStore(Protocol):
    """Where a leader writes its partition's ISR (the cluster member, on the metadata store)."""

    async def propose_isr(
        self,
        topic: str,
        partition: int,
        state: Versioned[PartitionState],
        isr: tuple[int, ...],
    ) -> Versioned[PartitionState] | None:
        """Write ``state`` with ``isr`` at ``state.version`` (leader and leader epoch kept);
        the state written with its new version, or None when someone else wrote first (the
        newer state then reaches the leader through :meth:`Leadership.update_state`)."""
        ...


class Leadership:
    """This broker's leadership of one partition; see the module docstring.

    ``replicas`` is the partition's assignment (preference order), ``state`` the partition
    state that made this broker leader, ``live_brokers`` the ids of the brokers registered now.
    The log's current high watermark is where the leader's starts.
    """

    def __init__(
        self,
        partition: Partition,
        broker_id: int,
        replicas: tuple[int, ...],
        state: Versioned[PartitionState],
        config: BrokerConfig,
        clock: Callable[[], int],
        isr_store: IsrStore,
        live_brokers: Callable[[], Collection[int]],
    ) -> None:
        self.partition = partition
        self.broker_id = broker_id
        self._state = state
        self._clock = clock
        self._store = isr_store
        self._live = live_brokers
        self._lag_max_ms = int(config["replica.lag.time.max.ms"])
        self._replicas = ReplicaState(broker_id, replicas, state.value.isr, now_ms=clock())
        for replica, follower in self._replicas.followers.items():
            if replica not in state.value.isr:
                # Kafka's leader gives only its in-sync followers a lag interval on election:
                # the others hold the high watermark back only once they catch up
                follower.last_caught_up_ms = 0
        plog = partition.log
        plog.set_high_watermark(plog.high_watermark)  # from now on it follows the ISR only
        self._replicas.hw = plog.high_watermark
        latest = plog.leader_epochs.latest_entry
        self.epoch_start_offset = (
            latest.start_offset
            if latest is not None and latest.epoch == plog.leader_epoch
            else plog.log_end_offset
        )
        """Where the leader's epoch starts in the log: a follower joins the ISR only once past
        it, and ListOffsets answers OFFSET_NOT_AVAILABLE while the high watermark is below it."""
        self._waiters: list[tuple[int, int, asyncio.Future[ErrorCode]]] = []
        """``acks=all`` writes: (required offset, sequence, future), a heap."""
        self._sequence = itertools.count()
        self._proposal: asyncio.Task[None] | None = None
        self._retry_after_ms: int | None = None
        """Set when a proposal was not written: no new one before then or a newer state."""
        self._resigned = False
        # Kafka's makeLeader: the ISR may be this leader alone (the controller took a dead
        # leader out), and then nothing else would move the high watermark up to its log's end
        self._advance(clock())

    # -- what the leader knows ----------------------------------------------------------------

    @property
    def name(self) -> str:
        """``<topic>-<partition>``, for messages."""
        return f"{self.partition.topic}-{self.partition.index}"

    @property
    def state(self) -> Versioned[PartitionState]:
        """The partition state the leader goes by (the last written or received)."""
        return self._state

    @property
    def isr(self) -> tuple[int, ...]:
        """The committed ISR, as the partition state lists it."""
        return self._state.value.isr

    @property
    def under_replicated(self) -> bool:
        """Whether the ISR is smaller than the replicas (``Partition.isUnderReplicated``)."""
        return len(self.isr) < 1 + len(self._replicas.followers)

    @property
    def high_watermark(self) -> int:
        """The partition's high watermark (the log's)."""
        return self.partition.log.high_watermark

    @property
    def min_isr(self) -> int:
        """The effective ``min.insync.replicas``: the topic's, at most the replication factor."""
        return min(self.partition.log.settings.min_insync_replicas, len(self._replicas.replicas))

    @property
    def resigned(self) -> bool:
        """Whether :meth:`resign` was called."""
        return self._resigned

    def is_follower(self, replica_id: int) -> bool:
        """Whether ``replica_id`` is one of the partition's other replicas."""
        return replica_id in self._replicas.followers

    def read_replicas(self, fetch_offset: int, now_ms: int) -> list[tuple[int, int, int]]:
        """The followers a consumer fetching at ``fetch_offset`` may be sent to read from
        (KIP-392, Kafka's ``ReplicaManager.findPreferredReadReplica``): each in-sync follower
        whose log holds ``fetch_offset`` (its log start offset, as its fetches tell, at or below
        it; its log end offset at or above it), as ``(broker id, log end offset, ms
        since it was last caught up)``; none after :meth:`resign`."""
        if self._resigned:
            return []
        isr = self.isr
        return [
            (replica, follower.leo, max(now_ms - follower.last_caught_up_ms, 0))
            for replica, follower in self._replicas.followers.items()
            if replica in isr and follower.log_start <= fetch_offset <= follower.leo
        ]

    # -- followers and the high watermark -----------------------------------------------------

    def follower_fetched(
        self, replica_id: int, fetch_offset: int, now_ms: int, log_start_offset: int = -1
    ) -> bool:
        """A replica fetch from ``replica_id`` at ``fetch_offset`` (its log end): record it,
        advance the high watermark, and propose adding the follower to the ISR when it caught
        up (in a task; the call never waits). False, and nothing recorded, when ``replica_id``
        is not a follower of this partition or the leadership ended. Called for a fetch whose
        log did not diverge from the leader's (a diverging follower truncates first)."""
        if self._resigned or replica_id not in self._replicas.followers:
            return False
        plog = self.partition.log
        self._replicas.fetched(
            replica_id,
            fetch_offset,
            now_ms=now_ms,
            leader_leo=plog.log_end_offset,
            log_start=log_start_offset,
        )
        # hot: every replica fetch, for each partition it names, idle ones included
        if plog.high_watermark < plog.log_end_offset:  # else nothing can advance, no one waits
            self._advance(now_ms)
        if (
            replica_id not in self._replicas.isr
            and self._may_propose(now_ms)
            and self._replicas.may_join(
                replica_id, epoch_start_offset=self.epoch_start_offset, live=self._live()
            )
        ):
            self._propose((*self.isr, replica_id))
        return True

    def appended(self, now_ms: int) -> None:
        """The leader appended to the log: advance the high watermark as far as the ISR
        allows (up to the new log end when the ISR is the leader alone)."""
        if not self._resigned:
            self._advance(now_ms)

    async def maybe_shrink_isr(self, now_ms: int) -> None:
        """Propose dropping the in-sync followers that have not caught up for
        ``replica.lag.time.max.ms``, and members that are no longer replicas (called every half
        lag time); returns once the proposal was answered. Nothing is proposed while another
        proposal is in flight."""
        if self._resigned or not self._may_propose(now_ms):
            return
        dropped = self._replicas.out_of_sync(
            now_ms=now_ms,
            leader_leo=self.partition.log.log_end_offset,
            lag_max_ms=self._lag_max_ms,
        )
        strays = self._strays()
        if not dropped and not strays:
            return
        if dropped:
            log.info(
                "%s: followers %s out of sync for %d ms; shrinking the ISR",
                self.name,
                dropped,
                self._lag_max_ms,
            )
        if strays:
            log.info("%s: %s no longer replicas; shrinking the ISR", self.name, strays)
        task = self._propose(tuple(r for r in self.isr if r not in dropped and r not in strays))
        await asyncio.wait([task])  # not cancelled with the caller, nor raising when resigned

    def update_replicas(self, replicas: tuple[int, ...]) -> None:
        """The partition's assignment changed (a reassignment adds or removes followers): new
        followers may fetch and join the ISR once caught up; removed ones are forgotten."""
        if self._resigned or replicas == self._replicas.replicas:
            return
        log.info("%s: replicas are now %s", self.name, list(replicas))
        self._replicas.set_replicas(replicas)
        self._advance(self._clock())
        self._drop_strays()

    def _strays(self) -> list[int]:
        """The ISR's members that are no longer replicas (an expansion written while a
        reassignment removed its follower)."""
        followers = self._replicas.followers
        return sorted(r for r in self.isr if r != self.broker_id and r not in followers)

    def _drop_strays(self) -> None:
        """Propose an ISR without :meth:`_strays`, unless a proposal is in flight (its answer
        calls this again) or waits for a retry (the periodic shrink drops them then)."""
        strays = self._strays()
        if strays and self._may_propose(self._clock()):
            log.info("%s: %s no longer replicas; shrinking the ISR", self.name, strays)
            self._propose(tuple(r for r in self.isr if r not in strays))

    def update_state(self, state: Versioned[PartitionState]) -> None:
        """A newer partition state naming this broker leader (the member's watch): take its
        ISR. A new leader epoch goes on in the same leadership — the controller bumps the epoch
        when it takes a dead follower out of the ISR, and Kafka's leader then keeps its
        followers' positions and its waiting writes (the member has recorded the epoch in the
        log first). An older or equal version, or another leader, is ignored."""
        current = self._state.value
        if self._resigned or state.version <= self._state.version:
            return
        if state.value.leader != current.leader or state.value.leader_epoch < current.leader_epoch:
            log.warning(
                "%s: state of leader %d epoch %d ignored by the leadership of epoch %d",
                self.name,
                state.value.leader,
                state.value.leader_epoch,
                current.leader_epoch,
            )
            return
        if state.value.leader_epoch > current.leader_epoch:
            self.epoch_start_offset = self.partition.log.log_end_offset
        self._retry_after_ms = None
        self._take(state)
        self._drop_strays()

    def resign(self) -> None:
        """No longer leader: every waiting ``acks=all`` write is answered
        NOT_LEADER_OR_FOLLOWER, a proposal in flight is abandoned, and later calls do nothing."""
        if self._resigned:
            return
        self._resigned = True
        if self._proposal is not None:
            self._proposal.cancel()
            self._proposal = None
        waiters, self._waiters = self._waiters, []
        for _, _, future in waiters:
            if not future.done():
                future.set_result(ErrorCode.not_leader_or_follower)

    # -- acks=all -----------------------------------------------------------------------------

    def check_min_isr(self) -> ErrorCode:
        """Before an ``acks=all`` append: NOT_ENOUGH_REPLICAS when the ISR is smaller than the
        effective ``min.insync.replicas``, NOT_LEADER_OR_FOLLOWER after :meth:`resign`, else
        NONE."""
        if self._resigned:
            return ErrorCode.not_leader_or_follower
        if len(self._replicas.isr) < self.min_isr:
            return ErrorCode.not_enough_replicas
        return ErrorCode.none

    async def wait_for_replication(self, required_offset: int, timeout_ms: int) -> ErrorCode:
        """Wait until the records below ``required_offset`` (the appended batch's last offset
        + 1) are committed; see the module docstring for the answers. The high watermark is
        advanced first, so that an append whose writer did not call :meth:`appended` is
        committed at once when the ISR is the leader alone."""
        if self._resigned:
            return ErrorCode.not_leader_or_follower
        self._advance(self._clock())
        code = self._ack(required_offset)
        if code is not None:
            return code
        future: asyncio.Future[ErrorCode] = asyncio.get_running_loop().create_future()
        entry = (required_offset, next(self._sequence), future)
        heapq.heappush(self._waiters, entry)
        try:
            return await asyncio.wait_for(future, max(timeout_ms, 0) / 1000)
        except TimeoutError:
            return ErrorCode.request_timed_out
        finally:
            if future.cancelled():  # timed out, or the produce request was cancelled
                self._forget(entry)

    def _ack(self, required_offset: int) -> ErrorCode | None:
        state = self._replicas.ack_state(required_offset, min_isr=self.min_isr)
        return _ACK_CODES.get(state)

    def _forget(self, entry: tuple[int, int, asyncio.Future[ErrorCode]]) -> None:
        try:
            self._waiters.remove(entry)
        except ValueError:
            return
        heapq.heapify(self._waiters)

    def _wake_waiters(self) -> None:
        """Answer the waiters whose batch the high watermark passed."""
        hw = self._replicas.hw
        while self._waiters and self._waiters[0][0] <= hw:
            required, _, future = heapq.heappop(self._waiters)
            code = self._ack(required)
            if not future.done() and code is not None:
                future.set_result(code)

    # -- internals ----------------------------------------------------------------------------

    def _advance(self, now_ms: int) -> None:
        plog = self.partition.log
        before = plog.high_watermark
        hw = self._replicas.high_watermark(
            leader_leo=plog.log_end_offset,
            min_isr=self.partition.log.settings.min_insync_replicas,
            now_ms=now_ms,
            lag_max_ms=self._lag_max_ms,
            live=self._live(),
        )
        if hw > before:
            plog.set_high_watermark(hw)
            self.partition.notify()
        self._wake_waiters()

    def _take(self, state: Versioned[PartitionState]) -> None:
        self._state = state
        self._replicas.isr = set(state.value.isr)
        self._advance(self._clock())

    def _may_propose(self, now_ms: int) -> bool:
        in_flight = self._proposal is not None and not self._proposal.done()
        waiting = self._retry_after_ms is not None and now_ms < self._retry_after_ms
        return not in_flight and not waiting

    def _propose(self, isr: tuple[int, ...]) -> asyncio.Task[None]:
        self._proposal = asyncio.get_running_loop().create_task(
            self._write_isr(self._state, isr), name=f"isr-{self.name}"
        )
        return self._proposal

    async def _write_isr(self, state: Versioned[PartitionState], isr: tuple[int, ...]) -> None:
        topic, index = self.partition.topic, self.partition.index
        try:
            written = await self._store.propose_isr(topic, index, state, isr)
        except Exception:  # a store failure must not end the leadership; retried later
            log.exception("%s: proposing ISR %s failed", self.name, list(isr))
            written = None
        if self._resigned:
            return
        if written is None:
            log.info(
                "%s: ISR %s not written (the state changed first, or the store is away)",
                self.name,
                list(isr),
            )
            if self._state.version <= state.version:  # no newer state came meanwhile
                self._retry_after_ms = self._clock() + PROPOSAL_RETRY_MS
            return
        if written.version > self._state.version:
            self._take(written)
        # the watch may have delivered the written state first: either way it is answered, a
        # follow-up proposal may start, and members the assignment dropped meanwhile go
        if self._proposal is asyncio.current_task():
            self._proposal = None
        self._drop_strays()
