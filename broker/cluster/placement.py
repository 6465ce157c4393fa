"""Where a new partition's replicas go: Kafka's replica assignment (``AdminUtils``), as pure
functions.

The goals are Kafka's: spread replicas evenly over brokers; spread the other replicas of the
partitions a broker leads over the other brokers; and when every broker has a ``broker.rack``,
put each partition's replicas on different racks where possible. Without racks, each
partition's first replica goes round-robin from a random start, and the others follow at an
increasing shift (so that partition ``p`` and ``p + brokers`` do not share their followers).
With racks, the same is done over the brokers listed rack by rack in turn (``0, 3, 1, 5, 4, 2``
for racks ``{0: r1, 1: r3, 2: r3, 3: r2, 4: r2, 5: r1}``), skipping, for a follower, brokers
whose rack already holds a replica while a rack holds none.

>>> assign_replicas([Broker(b) for b in range(5)], 10, 3, start=0)[5]
[0, 2, 3]
>>> racks = {0: "r1", 1: "r3", 2: "r3", 3: "r2", 4: "r2", 5: "r1"}
>>> brokers = [Broker(b, rack) for b, rack in racks.items()]
>>> [assign_replicas(brokers, 7, 3, start=0)[p] for p in (0, 1, 6)]
[[0, 3, 1], [3, 1, 5], [0, 4, 2]]
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.errors import ErrorCode

from sluice.broker.errors import KafkaError

__all__ = ["Broker", "assign_replicas", "rack_alternated"]


@dataclass(frozen=True)
class Broker:
    """A live broker as placement sees it: its id and ``broker.rack`` (None: no rack)."""

    id: int
    rack: str | None = None


def assign_replicas(
    brokers: Sequence[Broker],
    partitions: int,
    replication_factor: int,
    *,
    start: int | None = None,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Replicas (the preferred leader first) of partitions ``first_partition`` … onwards.

    ``start`` fixes the first partition's leader and the first shift (Kafka's
    ``fixedStartIndex``); by default both are drawn from ``rng``. A replication factor above
    the brokers' count is ``INVALID_REPLICATION_FACTOR``; racks on some brokers only is
    ``INVALID_REPLICATION_FACTOR`` too (Kafka refuses a rack-aware assignment it cannot make).
    """
    if partitions <= 0:
        raise KafkaError(
            ErrorCode.invalid_partitions, "Number of partitions must be larger than 0."
        )
    if replication_factor <= 0:
        raise KafkaError(
            ErrorCode.invalid_replication_factor, "Replication factor must be larger than 0."
        )
    if replication_factor > len(brokers):
        raise KafkaError(
            ErrorCode.invalid_replication_factor,
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}.",
        )
    ordered = sorted(brokers, key=lambda broker: broker.id)
    with_racks = [broker for broker in ordered if broker.rack is not None]
    if with_racks and len(with_racks) < len(ordered):
        raise KafkaError(
            ErrorCode.invalid_replication_factor,
            "Not all brokers have rack information for replica rack aware assignment.",
        )
    draw = rng or random.Random()
    if not with_racks:
        ids = [broker.id for broker in ordered]
        return _round_robin(ids, {}, partitions, replication_factor, start, first_partition, draw)
    racks = {broker.id: str(broker.rack) for broker in ordered}
    arranged = rack_alternated(racks)
    return _round_robin(
        arranged, racks, partitions, replication_factor, start, first_partition, draw
    )


def rack_alternated(racks: dict[int, str]) -> list[int]:
    """The brokers taken from each rack in turn (racks by name, brokers by id).

    >>> rack_alternated({0: "r1", 1: "r1", 2: "r1", 3: "r2", 4: "r2", 5: "r2", 6: "r3"})
    [0, 3, 6, 1, 4, 2, 5]
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    queues = [iter(by_rack[rack]) for rack in sorted(by_rack)]
    arranged: list[int] = []
    while len(arranged) < len(racks):
        for queue in queues:
            taken = next(queue, None)
            if taken is not None:
                arranged.append(taken)
    return arranged


def _round_robin(
    brokers: list[int],
    racks: dict[int, str],
    partitions: int,
    replication_factor: int,
    start: int | None,
    first_partition: int,
    rng: random.Random,
) -> dict[int, list[int]]:
    """Kafka's assignment over ``brokers`` in this order; with ``racks``, followers avoid
    racks (then brokers) that already hold a replica while others hold none."""
    count = len(brokers)
    rack_count = len(set(racks.values()))
    start_index = start if start is not None else rng.randrange(count)
    shift = start if start is not None else rng.randrange(count)
    assignment: dict[int, list[int]] = {}
    for partition in range(max(0, first_partition), max(0, first_partition) + partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start_index) % count
        replicas = [brokers[first]]
        if not racks:
            for j in range(replication_factor - 1):
                replicas.append(brokers[_replica_index(first, shift, j, count)])
        else:
            used_racks = {racks[brokers[first]]}
            k = 0
            for _ in range(replication_factor - 1):
                while True:
                    broker = brokers[_replica_index(first, shift * rack_count, k, count)]
                    k += 1
                    rack = racks[broker]
                    if (rack not in used_racks or len(used_racks) == rack_count) and (
                        broker not in replicas or len(replicas) == count
                    ):
                        replicas.append(broker)
                        used_racks.add(rack)
                        break
        assignment[partition] = replicas
    return assignment


def _replica_index(first: int, shift: int, index: int, count: int) -> int:
    return (first + 1 + (shift + index) % (count - 1)) % count
