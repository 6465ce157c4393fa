"""Which old segments retention deletes (Kafka's ``UnifiedLog.deleteOldSegments``).

Three rules, each deleting a prefix of the segments (oldest first), the union taken:

* log start offset: a segment whose successor starts at or below the log start offset
  (after DeleteRecords) holds nothing readable; this rule applies whatever the policy;
* ``retention.ms`` (``-1`` disables): a segment whose largest timestamp is older than
  ``now - retention.ms`` (a segment without timestamps uses its file's modification time);
* ``retention.bytes`` (``-1`` disables): the oldest segments while the log without them still
  holds at least ``retention.bytes``.

The last two apply only when ``cleanup.policy`` contains ``delete``. The active segment counts
when it is not empty; if every segment is to go, the log rolls first so that it always keeps an
active segment (the caller's job). Pure functions: no I/O besides reading segment metadata.

>>> from types import SimpleNamespace as Seg
>>> segs = [Seg(base_offset=0, size=100, largest_timestamp=lambda: 1_000),
...         Seg(base_offset=10, size=100, largest_timestamp=lambda: 5_000),
...         Seg(base_offset=20, size=50, largest_timestamp=lambda: 9_000)]
>>> from sluice.broker.log.config import LogConfig
>>> config = LogConfig.from_mapping({"retention.ms": 3_000, "retention.bytes": -1})
>>> deletable_segments(segs, config, now_ms=9_500, log_start_offset=0)
2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sluice.broker.log.config import LogConfig

__all__ = ["deletable_segments"]


class _Segment(Protocol):
    @property
    def base_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    def largest_timestamp(self) -> int: ...


def deletable_segments(
    segments: Sequence[_Segment], config: LogConfig, *, now_ms: int, log_start_offset: int
) -> int:
    """How many of the oldest ``segments`` retention deletes now (may be all of them)."""
    count = 0
    while count + 1 < len(segments) and segments[count + 1].base_offset <= log_start_offset:
        count += 1
    if not config.delete:
        return count
    candidates = len(segments) - (1 if segments and segments[-1].size == 0 else 0)
    if config.retention_ms >= 0:
        expired = 0
        while (
            expired < candidates
            and now_ms - segments[expired].largest_timestamp() > config.retention_ms
        ):
            expired += 1
        count = max(count, expired)
    if config.retention_bytes >= 0:
        excess = sum(s.size for s in segments) - config.retention_bytes
        oversized = 0
        while oversized < candidates and excess - segments[oversized].size >= 0:
            excess -= segments[oversized].size
            oversized += 1
        count = max(count, oversized)
    return count
