"""An in-memory :class:`~sluice.broker.replication.leadership.IsrStore` for the leader's tests:
a partition's state record written at a version, as ZooKeeper's znode is."""

from __future__ import annotations

import asyncio
import dataclasses

from sluice.broker.cluster.model import PartitionState, Versioned


class MemoryIsrStore:
    """A partition's state record in memory. A proposal naming another version than the
    current one is refused (None), as a conditional write to ZooKeeper is; ``gate`` makes
    proposals wait (a slow store), ``failure`` makes them raise (a store that is away),
    ``answer_gate`` holds the answer of a proposal already written (its watch may come first)."""

    def __init__(self, state: Versioned[PartitionState], where: tuple[str, int]) -> None:
        self.current = state
        self.where = where
        self.proposed: list[tuple[int, ...]] = []
        self.gate: asyncio.Event | None = None
        self.answer_gate: asyncio.Event | None = None
        self.failure: Exception | None = None

    async def propose_isr(
        self, topic: str, partition: int, state: Versioned[PartitionState], isr: tuple[int, ...]
    ) -> Versioned[PartitionState] | None:
        assert (topic, partition) == self.where, f"proposal for {topic}-{partition}"
        self.proposed.append(isr)
        if self.gate is not None:
            await self.gate.wait()
        if self.failure is not None:
            raise self.failure
        if state.version != self.current.version:
            return None
        written = self.write(isr, state=state)
        if self.answer_gate is not None:
            await self.answer_gate.wait()
        return written

    def write(
        self, isr: tuple[int, ...], state: Versioned[PartitionState] | None = None
    ) -> Versioned[PartitionState]:
        """Write the ISR at the next version (as another writer — the controller — would when
        ``state`` is None)."""
        base = state or self.current
        self.current = Versioned(dataclasses.replace(base.value, isr=isr), base.version + 1)
        return self.current
