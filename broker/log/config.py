"""The topic configuration a partition log obeys, as one small immutable object.

Built from a mapping of Kafka topic keys to typed values (what ``BrokerConfig.topic_config``
returns); keys left out take the defaults of :data:`sluice.broker.config.TOPIC_KEYS`.

>>> config = LogConfig.from_mapping({"segment.bytes": 1024, "cleanup.policy": ["compact"]})
>>> config.segment_bytes, config.compact, config.delete, config.retention_ms
(1024, True, False, 604800000)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sluice.broker.config import LONG_MAX, TOPIC_KEYS

__all__ = ["LogConfig"]


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Typed topic settings used by the log (names are the Kafka keys with ``_`` for ``.``)."""

    segment_bytes: int
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    cleanup_policy: tuple[str, ...]
    delete_retention_ms: int
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    min_cleanable_dirty_ratio: float
    flush_messages: int
    flush_ms: int
    message_timestamp_type: str
    timestamp_before_max_ms: int
    """How far a CreateTime timestamp may lie behind the broker's clock
    (``message.timestamp.before.max.ms``, else the legacy ``difference.max.ms``)."""
    timestamp_after_max_ms: int
    """How far it may lie ahead (``message.timestamp.after.max.ms``, else the same legacy key)."""
    file_delete_delay_ms: int
    min_insync_replicas: int
    """Replicas that must hold an ``acks=all`` write: above 1, a single node refuses it (its
    in-sync replica set is itself), as Kafka refuses it for a partition with too few in sync."""

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any]) -> LogConfig:
        """Take the keys the log needs from ``config``, defaults for those missing."""

        def get(name: str) -> Any:
            value = config.get(name)
            return TOPIC_KEYS[name].default if value is None else value

        difference = int(get("message.timestamp.difference.max.ms"))
        before = int(get("message.timestamp.before.max.ms"))
        after = int(get("message.timestamp.after.max.ms"))
        policy = get("cleanup.policy")
        policy = [policy] if isinstance(policy, str) else list(policy)
        return cls(
            segment_bytes=int(get("segment.bytes")),
            segment_ms=int(get("segment.ms")),
            segment_jitter_ms=int(get("segment.jitter.ms")),
            segment_index_bytes=int(get("segment.index.bytes")),
            index_interval_bytes=int(get("index.interval.bytes")),
            retention_ms=int(get("retention.ms")),
            retention_bytes=int(get("retention.bytes")),
            cleanup_policy=tuple(str(p) for p in policy),
            delete_retention_ms=int(get("delete.retention.ms")),
            min_compaction_lag_ms=int(get("min.compaction.lag.ms")),
            max_compaction_lag_ms=int(get("max.compaction.lag.ms")),
            min_cleanable_dirty_ratio=float(get("min.cleanable.dirty.ratio")),
            flush_messages=int(get("flush.messages")),
            flush_ms=int(get("flush.ms")),
            message_timestamp_type=str(get("message.timestamp.type")),
            timestamp_before_max_ms=before if before != LONG_MAX else difference,
            timestamp_after_max_ms=after if after != LONG_MAX else difference,
            file_delete_delay_ms=int(get("file.delete.delay.ms")),
            min_insync_replicas=int(get("min.insync.replicas")),
        )

    @property
    def compact(self) -> bool:
        """``cleanup.policy`` contains ``compact``."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """``cleanup.policy`` contains ``delete``."""
        return "delete" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """Age at which the active segment rolls: ``segment.ms``, or ``max.compaction.lag.ms``
        when it is shorter on a compacted topic, so that no record waits in the active
        segment (which is never cleaned) past its compaction deadline (Kafka's rule)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    @property
    def timestamps_bounded(self) -> bool:
        """CreateTime timestamps are checked against the broker's clock on append."""
        return not self.log_append_time and (
            self.timestamp_before_max_ms != LONG_MAX or self.timestamp_after_max_ms != LONG_MAX
        )

    @property
    def log_append_time(self) -> bool:
        """``message.timestamp.type`` is ``LogAppendTime``: the broker stamps batches."""
        return self.message_timestamp_type == "LogAppendTime"
