"""A worker's membership of its Connect group, and the slots the group gives it.

The workers of group ``G`` form the consumer group ``G`` (Kafka's ``group.id``) subscribed to
``connect-offsets`` with the ``roundrobin`` assignor: the partitions each is assigned are its
*slots* (:mod:`.slots`). The partitions are paused as soon as they are
assigned — nothing is fetched through this consumer; the group is only a membership and a
failure detector. A worker that stops heartbeating for ``session.timeout.ms`` is dropped and
its slots go to the others at the next rebalance.

Rebalances are eager, as Kafka's ``connect.protocol=eager``: every worker is told to give its
slots up (``on_revoke``: it stops all it runs, committing) before any worker is given new ones
(``on_assign``), so a connector or task never runs on two workers at once — except on a worker
that was dropped while alive but unresponsive, as in Kafka.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from sluice import clients

__all__ = ["Membership"]

log = logging.getLogger("sluice.connect")

# Kafka Connect's worker settings that shape the group, with Kafka's defaults.
GROUP_SETTINGS = {
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "3000",
    "rebalance.timeout.ms": "60000",
}


class Membership:
    """Joins ``group`` and reports slot changes; see the module docstring.

    ``on_revoke()`` and ``on_assign(slots)`` run in this object's thread; the group waits for
    ``on_revoke`` to return before it hands the slots to anyone.
    """

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        *,
        worker_id: str,
        settings: dict[str, Any],
        on_revoke: Callable[[], None],
        on_assign: Callable[[frozenset[int]], None],
    ) -> None:
        self.topic = topic
        self._on_revoke = on_revoke
        self._on_assign = on_assign
        self.slots: frozenset[int] | None = None
        group_settings = {k: str(settings.get(k, v)) for k, v in GROUP_SETTINGS.items()}
        rebalance_timeout = group_settings.pop("rebalance.timeout.ms")
        self.consumer: Consumer = clients.consumer(
            bootstrap,
            **{
                "group.id": group,
                "client.id": f"connect-{worker_id}",
                "partition.assignment.strategy": "roundrobin",
                "enable.auto.commit": False,
                "max.poll.interval.ms": max(int(rebalance_timeout), 300_000),
                **group_settings,
            },
        )
        self.slot_count = len(self.consumer.list_topics(topic, timeout=30).topics[topic].partitions)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="connect-group", daemon=True)

    def start(self) -> None:
        """Join the group (in a thread that keeps polling)."""
        self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked)
        self._thread.start()

    @property
    def rebalancing(self) -> bool:
        """True from joining (or a revocation) until the next assignment."""
        return self.slots is None

    def _assigned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        consumer.assign(partitions)
        consumer.pause(partitions)
        slots = frozenset(p.partition for p in partitions)
        log.info("connect group: assigned %d of %d slots", len(slots), self.slot_count)
        self.slots = slots
        self._on_assign(slots)

    def _revoked(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        log.info("connect group: rebalance, giving up %d slots", len(partitions))
        self.slots = None
        self._on_revoke()
        consumer.unassign()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for message in self.consumer.consume(100, 0.5):
                    if message.error() is not None:
                        log.warning("connect group: %s", message.error())
            except Exception as error:  # keep the membership: a client hiccup is not fatal
                log.error("connect group: %s", error)

    def close(self) -> None:
        """Leave the group (what this worker runs must be stopped first)."""
        self._stop.set()
        self._thread.join(10)
        self.slots = None
        self.consumer.close()
