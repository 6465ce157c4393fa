"""How the controller picks a partition's leader: Kafka's leader election algorithms, as pure
functions (``PartitionLeaderElectionAlgorithms`` and the ISR each election leaves).

Every election walks the partition's *assignment* in order (the first replica is the
preferred leader) and takes the first replica that fits:

- **offline** (the leader's broker is gone, or a new partition): a live replica in the ISR; if
  none and ``unclean.leader.election.enable``, any live replica — an *unclean* election, which
  loses what the old leader had acknowledged beyond the new leader's log. The ISR becomes the
  live part of the old one (just the new leader after an unclean election);
- **controlled shutdown**: a live ISR replica that is not shutting down; the brokers shutting
  down leave the ISR;
- **preferred** (``auto.leader.rebalance.enable``, the ElectLeaders API): the first replica of
  the assignment, only if it is live and in the ISR;
- **reassignment**: the first replica of the target assignment that is live and in the ISR.

None means no replica fits: the partition stays offline (leader ``-1``) until one does.
Each election bumps the leader epoch. :func:`remove_from_isr` is what the controller does to
the partitions a dead follower was in the ISR of; the last ISR member is never removed (the
partition goes leaderless and keeps it, so that a clean election waits for that broker).

>>> state = LeaderAndIsr(leader=1, leader_epoch=4, isr=(1, 2))
>>> elect_offline((1, 2, 3), state, live={2, 3}, unclean=False)
LeaderAndIsr(leader=2, leader_epoch=5, isr=(2,))
>>> elect_offline((1, 2, 3), LeaderAndIsr(1, 4, (1,)), live={2, 3}, unclean=False) is None
True
>>> elect_offline((1, 2, 3), LeaderAndIsr(1, 4, (1,)), live={2, 3}, unclean=True)
LeaderAndIsr(leader=2, leader_epoch=5, isr=(2,))
>>> remove_from_isr(LeaderAndIsr(1, 4, (1,)), 1)
LeaderAndIsr(leader=-1, leader_epoch=5, isr=(1,))
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = [
    "NO_LEADER",
    "LeaderAndIsr",
    "elect_controlled_shutdown",
    "elect_offline",
    "elect_preferred",
    "elect_reassigned",
    "remove_from_isr",
]

NO_LEADER = -1


@dataclass(frozen=True)
class LeaderAndIsr:
    """A partition's leader (``-1``: none), leader epoch and in-sync replicas."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]

    def led_by(self, leader: int, isr: Sequence[int]) -> LeaderAndIsr:
        """The state after ``leader`` was elected with ``isr``: the next epoch."""
        return LeaderAndIsr(leader, self.leader_epoch + 1, tuple(isr))


def elect_offline(
    assignment: Sequence[int], state: LeaderAndIsr, live: Collection[int], *, unclean: bool
) -> LeaderAndIsr | None:
    """A leader for a partition without one; see the module docstring."""
    for replica in assignment:
        if replica in live and replica in state.isr:
            return state.led_by(replica, [r for r in state.isr if r in live])
    if unclean:
        for replica in assignment:
            if replica in live:
                return state.led_by(replica, [replica])
    return None


def elect_controlled_shutdown(
    assignment: Sequence[int],
    state: LeaderAndIsr,
    live: Collection[int],
    shutting_down: Collection[int],
) -> LeaderAndIsr | None:
    """A leader instead of one shutting down; the brokers shutting down leave the ISR."""
    for replica in assignment:
        if replica in live and replica in state.isr and replica not in shutting_down:
            return state.led_by(replica, [r for r in state.isr if r not in shutting_down])
    return None


def elect_preferred(
    assignment: Sequence[int], state: LeaderAndIsr, live: Collection[int]
) -> LeaderAndIsr | None:
    """The preferred replica as leader, if it can be (live and in sync); the ISR is kept."""
    preferred = assignment[0] if assignment else None
    if preferred is None or preferred not in live or preferred not in state.isr:
        return None
    return state.led_by(preferred, state.isr)


def elect_reassigned(
    target: Sequence[int], state: LeaderAndIsr, live: Collection[int]
) -> LeaderAndIsr | None:
    """A leader among a reassignment's target replicas (live and in sync); the ISR is kept."""
    for replica in target:
        if replica in live and replica in state.isr:
            return state.led_by(replica, state.isr)
    return None


def remove_from_isr(state: LeaderAndIsr, replica: int) -> LeaderAndIsr:
    """``replica`` (a dead broker) out of the ISR, as Kafka's controller does (the epoch
    moves on, fencing the old state); a leader removed leaves the partition leaderless. The
    last member stays in the ISR."""
    if replica not in state.isr:
        return state
    isr = state.isr if len(state.isr) == 1 else [r for r in state.isr if r != replica]
    return state.led_by(NO_LEADER if state.leader == replica else state.leader, isr)
