"""Offsets of the ``sluice`` Spark source: the checkpoint JSON, offset options, rate limits, splits.

A source offset is what Spark's Kafka source writes into a query's ``offsets/`` log: one JSON
object, topic → partition (a decimal string) → the next offset to read, topics and partitions in
ascending order so that the same positions always give the same text (Spark compares offsets by
their JSON)::

    {"orders": {"0": 23, "1": 17, "2": 0}}

In ``startingOffsets`` / ``endingOffsets`` the same form names specific positions, with ``-2`` for
a partition's earliest offset and ``-1`` for its latest.

>>> offsets = offsets_from_json({"t": {"10": 5, "2": 7}})
>>> offsets_to_json(offsets)
{'t': {'2': 7, '10': 5}}
>>> rate_limit({("t", 0): 0, ("t", 1): 0}, {("t", 0): 30, ("t", 1): 10}, 20)
{('t', 0): 15, ('t', 1): 5}
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetRange",
    "OffsetsOption",
    "PartitionOffsets",
    "TopicPartition",
    "offsets_from_json",
    "offsets_to_json",
    "parse_offsets_option",
    "rate_limit",
    "split_ranges",
]

EARLIEST = -2
LATEST = -1

TopicPartition = tuple[str, int]
PartitionOffsets = dict[TopicPartition, int]


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Positions as Spark's Kafka source checkpoints them, topics and partitions sorted."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = offsets[topic, partition]
    return out


def offsets_from_json(value: Any, what: str = "offset") -> PartitionOffsets:
    """Parse ``{"topic": {"0": 23}}`` (already decoded); ``ValueError`` names what is wrong."""
    if not isinstance(value, dict):
        raise ValueError(
            f'{what} must be a JSON object {{"topic": {{"0": offset}}}}, got {value!r}'
        )
    out: PartitionOffsets = {}
    for topic, partitions in value.items():
        if not isinstance(topic, str) or not topic or not isinstance(partitions, dict):
            raise ValueError(
                f'{what}: topic {topic!r} must map to an object {{"partition": offset}}, '
                f"got {partitions!r}"
            )
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{what}: partition {partition!r} of topic {topic!r} is not a number"
                ) from None
            if number < 0 or isinstance(offset, bool) or not isinstance(offset, int):
                raise ValueError(
                    f"{what}: topic {topic!r} partition {partition!r} must map to an integer "
                    f"offset, got {offset!r}"
                )
            out[topic, number] = offset
    return out


@dataclass(frozen=True)
class OffsetsOption:
    """A parsed ``startingOffsets`` / ``endingOffsets``: ``earliest``, ``latest`` or specific."""

    kind: str  # "earliest", "latest" or "specific"
    specific: PartitionOffsets = field(default_factory=dict)

    def resolve(
        self,
        partitions: list[TopicPartition],
        earliest: Mapping[TopicPartition, int],
        latest: Mapping[TopicPartition, int],
        name: str,
    ) -> PartitionOffsets:
        """Concrete positions for ``partitions`` (``-2``/``-1`` replaced by the log's bounds)."""
        if self.kind == "earliest":
            return {tp: earliest[tp] for tp in partitions}
        if self.kind == "latest":
            return {tp: latest[tp] for tp in partitions}
        if set(self.specific) != set(partitions):
            raise ValueError(
                f"{name} names specific offsets, so it must name every partition of the "
                f"subscription (use -2 for earliest, -1 for latest). "
                f"Named: {_describe(self.specific)}; subscribed: {_describe(partitions)}"
            )
        out: PartitionOffsets = {}
        for tp in partitions:
            offset = self.specific[tp]
            out[tp] = (
                earliest[tp] if offset == EARLIEST else latest[tp] if offset == LATEST else offset
            )
        return out


def parse_offsets_option(
    name: str, value: str | None, default: str, *, batch: bool
) -> OffsetsOption:
    """Parse ``earliest``, ``latest`` or Spark's JSON form; ``ValueError`` says what is wrong.

    Like Spark's Kafka source, a batch query may not start at ``latest`` nor end at ``earliest``.

    >>> parse_offsets_option("startingOffsets", '{"t": {"0": -2}}', "latest", batch=False)
    OffsetsOption(kind='specific', specific={('t', 0): -2})
    >>> parse_offsets_option("endingOffsets", "earliest", "latest", batch=True)
    Traceback (most recent call last):
    ...
    ValueError: endingOffsets=earliest is not allowed in a batch query
    """
    text = (value if value is not None else default).strip()
    starting = name == "startingOffsets"
    forbidden = "latest" if starting else "earliest"
    if text.lower() in ("earliest", "latest"):
        option = OffsetsOption(text.lower())
        if batch and option.kind == forbidden:
            raise ValueError(f"{name}={forbidden} is not allowed in a batch query")
        return option
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        decoded = None
    if not isinstance(decoded, dict):
        raise ValueError(
            f'{name} must be "earliest", "latest" or JSON like {{"topic": {{"0": 23, "1": -2}}}} '
            f"(-2 earliest, -1 latest); got {text!r}"
        )
    specific = offsets_from_json(decoded, name)
    for (topic, partition), offset in specific.items():
        if offset < EARLIEST:
            raise ValueError(f"{name}: offset {offset} of {topic}-{partition} is negative")
        if batch and offset == (LATEST if starting else EARLIEST):
            raise ValueError(
                f"{name}: {topic}-{partition} is {offset} ({forbidden}), "
                "which is not allowed in a batch query"
            )
    return OffsetsOption("specific", specific)


def rate_limit(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_rows: int
) -> PartitionOffsets:
    """End positions reading at most ``max_rows`` offsets, shared in proportion to each backlog.

    Shares are rounded down and the remainder given to the largest fractions, so the sum never
    exceeds ``max_rows`` and a partition with a backlog advances whenever the budget allows.
    A partition whose log now ends before its start (recreated topic) ends at the log's end, for
    the caller to report. Partitions of ``latest`` missing from ``start`` start at 0.
    """
    backlog = {tp: max(0, latest[tp] - start.get(tp, 0)) for tp in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    shares = {tp: max_rows * size / total for tp, size in backlog.items()}
    taken = {tp: math.floor(share) for tp, share in shares.items()}
    left = max_rows - sum(taken.values())
    for tp in sorted(shares, key=lambda tp: (taken[tp] - shares[tp], tp))[:left]:
        taken[tp] += 1
    return {
        tp: latest[tp] if latest[tp] < start.get(tp, 0) else start.get(tp, 0) + min(taken[tp], size)
        for tp, size in backlog.items()
    }


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one topic-partition: what one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Split the ranges into about ``min_partitions`` pieces, in proportion to their sizes.

    Without ``min_partitions`` (or with fewer wanted than there are ranges) each range stays one
    piece. A range is never split below one offset per piece.

    >>> [(r.start, r.end) for r in split_ranges([OffsetRange("t", 0, 0, 10)], 3)]
    [(0, 3), (3, 6), (6, 10)]
    """
    nonempty = [r for r in ranges if r.size > 0]
    if not min_partitions or len(nonempty) >= min_partitions:
        return nonempty
    total = sum(r.size for r in nonempty)
    out: list[OffsetRange] = []
    for r in nonempty:
        pieces = min(r.size, max(1, math.ceil(r.size * min_partitions / total)))
        bounds = [r.start + r.size * i // pieces for i in range(pieces + 1)]
        out.extend(
            OffsetRange(r.topic, r.partition, lo, hi)
            for lo, hi in itertools.pairwise(bounds)
            if hi > lo
        )
    return out


def _describe(partitions: Mapping[TopicPartition, int] | list[TopicPartition]) -> str:
    names = sorted(partitions)
    return ", ".join(f"{topic}-{partition}" for topic, partition in names) or "(none)"
