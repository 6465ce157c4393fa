"""Where a connector and its tasks run: a *slot* each, and slots are spread over the workers.

A distributed worker's share of the work is the set of slots (partitions of ``connect-offsets``)
the group gave it, round-robin. A connector instance is placed in the slot of its name's CRC-32,
its task ``t`` in the next ``t + 1`` slots, so one connector's tasks land on consecutive slots —
that is, on workers in turn — and adding or removing one connector moves nobody else's work.

>>> connector_slot("orders", 25), [task_slot("orders", t, 25) for t in range(4)]
(12, [13, 14, 15, 16])
"""

from __future__ import annotations

import zlib

__all__ = ["connector_slot", "task_slot"]


def connector_slot(name: str, slots: int) -> int:
    """The slot of connector ``name``'s instance (stable across processes and runs)."""
    return zlib.crc32(name.encode()) % slots


def task_slot(name: str, task: int, slots: int) -> int:
    """The slot of task ``task`` of connector ``name``."""
    return (zlib.crc32(name.encode()) + 1 + task) % slots
