"""Where tasks run: Kafka Streams' high-availability task assignment (KIP-441), as a pure function.

The group leader gathers each instance's :class:`ClientState` — the tasks it ran and kept as
standbys, and how far along each task's changelogs the state on its disk is (offset sums) — and
the end offsets of every stateful task's changelogs, and places every task:

1. **Actives, balanced**: stateful tasks go round-robin over the instances (sorted, so the same
   group gives the same answer), stateless ones after them to the least loaded.
2. **Only where the state is**: a stateful task whose balanced home is not *caught up* (its lag
   — end offset sum minus the offsets it holds — above ``acceptable_recovery_lag``; a task running
   there is lag 0) stays with the most caught-up instance (its previous owner first), and the
   balanced home gets a **warm-up** replica of it instead, at most ``max_warmup_replicas`` in all.
   When nobody is caught up, the instance with the least lag takes it (a warm-up elsewhere
   likewise).
3. **Standbys**: ``num_standby_replicas`` per stateful task on other instances — an instance that
   keeps a warm-up of the task counts as one — preferring another rack than the active's (and
   than the other standbys') when instances set ``client.rack``, then the least loaded.
4. **Probing**: when warm-ups were placed, the answer asks for a probing rebalance
   (``probing.rebalance.interval.ms`` later) that moves the tasks whose warm-ups caught up.

>>> a, b = ClientState("a", previous_active={TaskId(0, 0), TaskId(0, 1)}), ClientState("b")
>>> plan = assign([a, b], stateful={TaskId(0, 0): 100, TaskId(0, 1): 100}, stateless=set(),
...               standby_replicas=0, max_warmup_replicas=2, acceptable_recovery_lag=10)
>>> sorted(map(str, plan.clients["a"].active)), sorted(map(str, plan.clients["b"].warmup))
(['0_0', '0_1'], ['0_1'])
>>> plan.probing_rebalance
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from sluice.streams.task import TaskId

__all__ = ["RUNNING", "Assignment", "ClientAssignment", "ClientState", "assign"]

RUNNING = -2
"""An offset sum that says "this task runs here now" (Kafka's ``Task.LATEST_OFFSET``): lag 0."""


@dataclass
class ClientState:
    """What one instance (one group member) tells the leader."""

    member_id: str
    previous_active: set[TaskId] = field(default_factory=set)
    previous_standby: set[TaskId] = field(default_factory=set)
    offset_sums: dict[TaskId, int] = field(default_factory=dict)
    rack: str | None = None

    def lag(self, task: TaskId, end: int) -> int:
        """Changelog records this instance lacks to run ``task`` (``end``: the end offset sum)."""
        if task in self.previous_active:
            return 0
        held = self.offset_sums.get(task)
        if held == RUNNING:
            return 0
        if held is None or held < 0:
            return end
        return max(0, end - held)


@dataclass
class ClientAssignment:
    """The tasks one instance runs, keeps as standbys, and warms up."""

    active: set[TaskId] = field(default_factory=set)
    standby: set[TaskId] = field(default_factory=set)
    warmup: set[TaskId] = field(default_factory=set)

    def load(self) -> int:
        return len(self.active)

    def holds(self, task: TaskId) -> bool:
        return task in self.active or task in self.standby or task in self.warmup


@dataclass
class Assignment:
    """Every instance's tasks, and whether a probing rebalance should follow."""

    clients: dict[str, ClientAssignment]
    probing_rebalance: bool


def assign(
    clients: Iterable[ClientState],
    stateful: Mapping[TaskId, int],
    stateless: Iterable[TaskId],
    *,
    standby_replicas: int,
    max_warmup_replicas: int,
    acceptable_recovery_lag: int,
) -> Assignment:
    """Place every task (see the module docstring); ``stateful`` maps each stateful task to the
    end offset sum of its changelogs."""
    states = {c.member_id: c for c in clients}
    ids = sorted(states)
    plan = {member: ClientAssignment() for member in ids}
    if not ids:
        return Assignment({}, False)
    tasks = sorted(stateful)
    for n, task in enumerate(tasks):  # 1. balanced
        plan[ids[n % len(ids)]].active.add(task)
    warmups = 0
    for task in tasks:  # 2. only where the state is
        home = next(m for m in ids if task in plan[m].active)
        end = stateful[task]

        def caught_up(member: str, task: TaskId = task, end: int = end) -> bool:
            return states[member].lag(task, end) <= acceptable_recovery_lag

        if caught_up(home):
            continue
        ready = [m for m in ids if caught_up(m)]
        if not ready:  # nobody is: the most caught-up restores least
            least = min(states[m].lag(task, end) for m in ids)
            if states[home].lag(task, end) == least:
                continue
            ready = [m for m in ids if states[m].lag(task, end) == least]
        source = min(
            ready,
            key=lambda m: (
                task not in states[m].previous_active,
                states[m].lag(task, end),
                plan[m].load(),
                m,
            ),
        )
        plan[home].active.discard(task)
        plan[source].active.add(task)
        if warmups < max_warmup_replicas:
            plan[home].warmup.add(task)
            warmups += 1
    for task in sorted(stateless):
        # the least loaded; on a tie the instance that ran it
        target = min(ids, key=lambda m: (plan[m].load(), task not in states[m].previous_active, m))
        plan[target].active.add(task)
    for task in tasks:  # 3. standbys
        active = next(m for m in ids if task in plan[m].active)
        racks = {states[active].rack} - {None}
        kept = sum(1 for m in ids if task in plan[m].warmup)
        for _ in range(max(0, standby_replicas - kept)):
            free = [m for m in ids if not plan[m].holds(task)]
            if not free:
                break
            chosen = min(
                free,
                key=lambda m: (
                    states[m].rack is not None and states[m].rack in racks,
                    states[m].lag(task, stateful[task]) > acceptable_recovery_lag,
                    len(plan[m].standby) + len(plan[m].warmup),
                    m,
                ),
            )
            plan[chosen].standby.add(task)
            if states[chosen].rack is not None:
                racks.add(states[chosen].rack)
    return Assignment(plan, warmups > 0)
