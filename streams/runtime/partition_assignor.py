"""The Streams side of a rebalance (Kafka's ``StreamsPartitionAssignor``): what an instance says
when it joins, and what the leader makes of everyone's subscriptions.

An instance reports, per task whose state is on its disk, the changelog offsets it holds — a
running task as :data:`~sluice.streams.runtime.assignor.RUNNING`, a standby or warm-up by how far
it has read, any other task directory by its checkpoint. The leader reads the end offsets of
every stateful task's changelogs (when one is not known, as Kafka's fallback: the prior
owners count as caught up and a probing rebalance follows), runs
:func:`~sluice.streams.runtime.assignor.assign`, and
tells each member its tasks (as the partitions of its active tasks, plus the task lists),
everyone's partitions by ``application_server`` (for interactive queries) and, when warm-ups
were placed, when to probe again (``probing_rebalance_interval_ms``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from sluice.streams.runtime import checkpoint
from sluice.streams.runtime.assignor import ClientState, assign
from sluice.streams.runtime.group_protocol import Assignment, Subscription
from sluice.streams.task import TaskId
from sluice.streams.topology import Topology

__all__ = ["StreamsPartitionAssignor", "offset_sums_on_disk"]

log = logging.getLogger("sluice.streams")


def offset_sums_on_disk(state_dir: Path) -> dict[TaskId, int]:
    """Per task directory under ``state_dir`` with a checkpoint: the sum of its offsets."""
    sums: dict[TaskId, int] = {}
    if not state_dir.is_dir():
        return sums
    for directory in state_dir.iterdir():
        sub, sep, partition = directory.name.partition("_")
        if not (sep and sub.isdigit() and partition.isdigit()):
            continue
        offsets = checkpoint.read(directory)
        if offsets:
            sums[TaskId(int(sub), int(partition))] = sum(offsets.values())
    return sums


class StreamsPartitionAssignor:
    """The leader's work (see the module docstring)."""

    def __init__(
        self,
        topology: Topology,
        partitions: Mapping[str, int],
        changelog_topic: Callable[[str], str | None],
        end_offset: Callable[[str, int], int | None],
        *,
        standby_replicas: int,
        max_warmup_replicas: int,
        acceptable_recovery_lag: int,
        probing_rebalance_interval_ms: int,
        skip_topics: Iterable[str] = (),
    ) -> None:
        skipped = set(skip_topics)
        self.subtopologies = [
            sub
            for sub in topology.subtopologies()
            if sub.source_topics and not set(sub.source_topics) <= skipped
        ]
        self.partitions = partitions
        self.changelog_topic = changelog_topic
        self.end_offset = end_offset
        self.standby_replicas = standby_replicas
        self.max_warmup_replicas = max_warmup_replicas
        self.acceptable_recovery_lag = acceptable_recovery_lag
        self.probing_rebalance_interval_ms = probing_rebalance_interval_ms

    def topics(self) -> list[str]:
        """Every topic the instances subscribe to."""
        return sorted({t for sub in self.subtopologies for t in sub.source_topics})

    def _tasks(self) -> tuple[dict[TaskId, list[tuple[str, int]]], dict[TaskId, list[str]]]:
        """Every task with its input partitions, and the changelogs of the stateful ones."""
        inputs: dict[TaskId, list[tuple[str, int]]] = {}
        changelogs: dict[TaskId, list[str]] = {}
        for sub in self.subtopologies:
            count = max((self.partitions.get(t, 0) for t in sub.source_topics), default=0)
            logged = [c for s in sub.stores if (c := self.changelog_topic(s)) is not None]
            for number in range(count):
                task = TaskId(sub.id, number)
                inputs[task] = [
                    (t, number) for t in sub.source_topics if number < self.partitions.get(t, 0)
                ]
                if sub.stores:
                    changelogs[task] = logged
        return inputs, changelogs

    def assign(self, members: list[tuple[str, bytes]]) -> dict[str, bytes]:
        """Every member's assignment, from every member's subscription."""
        subscriptions = {member: Subscription.decode(data) for member, data in members}
        inputs, changelogs = self._tasks()
        stateful: dict[TaskId, int] = {}
        unknown = []
        for task, topics in changelogs.items():
            ends = [self.end_offset(topic, task.partition) for topic in topics]
            if None in ends:
                # Kafka's fallback: only the prior owners count as caught up (the end is put
                # past every other instance's acceptable lag), and a probing rebalance follows
                unknown.append(task)
                sums = [s.offset_sums.get(task, 0) for s in subscriptions.values()]
                stateful[task] = max([0, *sums]) + self.acceptable_recovery_lag + 1
            else:
                stateful[task] = sum(end for end in ends if end is not None)
        stateless = [task for task in inputs if task not in changelogs]
        plan = assign(
            [
                ClientState(
                    member,
                    set(s.active),
                    set(s.standby),
                    dict(s.offset_sums),
                    s.rack,
                )
                for member, s in subscriptions.items()
            ],
            stateful,
            stateless,
            standby_replicas=self.standby_replicas,
            max_warmup_replicas=self.max_warmup_replicas,
            acceptable_recovery_lag=self.acceptable_recovery_lag,
        )
        hosts: dict[str, dict[str, list[tuple[str, int]]]] = {}
        for member, placed in plan.clients.items():
            endpoint = subscriptions[member].endpoint
            if endpoint is not None:
                hosts[endpoint] = {
                    "active": [tp for t in sorted(placed.active) for tp in inputs[t]],
                    "standby": [tp for t in sorted(placed.standby) for tp in inputs[t]],
                }
        if unknown:
            log.warning(
                "changelog ends of %s not known: assigned as before, probing again later",
                _names(set(unknown)),
            )
        probing = plan.probing_rebalance or bool(unknown)
        probe = self.probing_rebalance_interval_ms if probing else None
        answer = {}
        for member, placed in plan.clients.items():
            answer[member] = Assignment(
                [tp for t in sorted(placed.active) for tp in inputs[t]],
                placed.active,
                placed.standby,
                placed.warmup,
                probe,
                hosts,
            ).encode()
            log.info(
                "assigned %s: active %s, standby %s, warm-up %s",
                member,
                _names(placed.active),
                _names(placed.standby),
                _names(placed.warmup),
            )
        return answer


def _names(tasks: set[TaskId]) -> str:
    return ", ".join(str(t) for t in sorted(tasks)) or "none"
