"""A fake of the Connect runtime's committed source offsets, shared by the source-connector tests.

Source tasks read their committed offsets through ``context.offset_storage_reader``; the tests
drive the tasks directly (no broker, no worker), so ``FakeOffsets`` plays that store, fed by
``commit(records)``, and ``FakeContext`` hands it to a task's ``initialize``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sluice.connect.api.data import SourceRecord

PartitionKey = tuple[tuple[str, Any], ...]


def _key(partition: Mapping[str, Any]) -> PartitionKey:
    return tuple(sorted(partition.items()))


class FakeOffsets:
    """Committed source offsets, as the runtime stores them after the broker's acks."""

    def __init__(self) -> None:
        self.committed: dict[PartitionKey, dict[str, Any]] = {}

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.committed.get(_key(partition))

    def offsets(self, partitions: list[Mapping[str, Any]]) -> dict[PartitionKey, dict[str, Any]]:
        return {_key(p): self.committed[_key(p)] for p in partitions if _key(p) in self.committed}

    def commit(self, records: list[SourceRecord]) -> None:
        """Store the latest offset per source partition of ``records`` (acknowledged in order)."""
        for record in records:
            self.committed[_key(record.source_partition)] = dict(record.source_offset)


class FakeContext:
    """A source task's context: only the reader of the committed offsets."""

    def __init__(self, offsets: FakeOffsets) -> None:
        self.offset_storage_reader = offsets
