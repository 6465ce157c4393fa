"""Which record a task processes next when it reads several partitions (joins, merges).

As Kafka Streams' ``PartitionGroup``: each input partition of a task has a buffer; the task takes
the buffered record with the smallest timestamp, so that a stream–table join sees the table as it
was at the stream record's time. While a partition's buffer is empty but the broker still has
data for it, the task waits (up to ``max_idle_ms``) rather than run ahead of it.

>>> group = PartitionGroup([("a", 0), ("b", 0)], max_idle_ms=0)
>>> group.add(("a", 0), ["a@5", "a@9"], [5, 9]); group.add(("b", 0), ["b@7"], [7])
>>> [group.next(lambda tp: False, now=0) for _ in range(4)]
['a@5', 'b@7', 'a@9', None]
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["PartitionGroup"]

Partition = tuple[str, int]


class PartitionGroup:
    """Per-partition buffers of one task; see the module docstring."""

    def __init__(self, partitions: Sequence[Partition], max_idle_ms: int) -> None:
        self.buffers: dict[Partition, collections.deque[tuple[int, Any]]] = {
            p: collections.deque() for p in partitions
        }
        self.max_idle_ms = max_idle_ms
        self._waiting_since: int | None = None

    def add(self, partition: Partition, items: Sequence[Any], timestamps: Sequence[int]) -> None:
        """Buffer records of one partition, in offset order."""
        self.buffers.setdefault(partition, collections.deque()).extend(
            zip(timestamps, items, strict=True)
        )

    def __len__(self) -> int:
        return sum(len(b) for b in self.buffers.values())

    def next(self, has_unfetched: Callable[[Partition], bool], now: int) -> Any:
        """The next record to process, or None (nothing buffered, or waiting for a partition)."""
        best: collections.deque[tuple[int, Any]] | None = None
        lagging = False
        for partition, buffer in self.buffers.items():
            if not buffer:
                lagging = lagging or has_unfetched(partition)
                continue
            if best is None or buffer[0][0] < best[0][0]:
                best = buffer
        if not lagging:
            self._waiting_since = None  # every partition is buffered or caught up
        elif best is not None:
            # Wait once, up to max_idle_ms, then process what is there until no partition
            # lags any more (Kafka's "enforced processing"): never one record per wait.
            if self._waiting_since is None:
                self._waiting_since = now
            if now - self._waiting_since < self.max_idle_ms:
                return None
        if best is None:
            return None
        return best.popleft()[1]

    def drop(self, partition: Partition) -> None:
        """Forget a partition (revoked)."""
        self.buffers.pop(partition, None)
