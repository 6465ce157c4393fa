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
from sluice.connect.runtime.client_configs import worker_clients

__all__ = ["GroupAssignment"]

log = logging.getLogger("sluice.connect")

# Kafka Connect's worker settings that shape the group, with Kafka's defaults.
GROUP_SETTINGS = {
    "session.timeout.ms": "10000",
    "heartbeat.interval.ms": "3000",
    "rebalance.timeout.ms": "60000",
}


class GroupAssignment:
    """A worker's :class:`~sluice.connect.runtime.reconciler.Assignment` in ``group``: the
    partitions of ``topic`` (``offset.storage.topic``) it is given; see the module docstring.

    ``on_revoke()`` and ``on_assign(slots)`` run in this object's thread; the group waits for
    ``on_revoke`` to return before it hands the slots to anyone. ``settings`` are the worker's
    (``session.timeout.ms``, ``heartbeat.interval.ms``, ``rebalance.timeout.ms``).
    """

    def __init__(self, bootstrap: str, group: str, settings: dict[str, Any]) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topic = str(settings["offset.storage.topic"])
        self.settings = settings
        self.slots: frozenset[int] | None = None
        self.slot_count = int(settings["offset.storage.partitions"])
        self.consumer: Consumer | None = None
        self._on_revoke: Callable[[], None] = lambda: None
        self._on_assign: Callable[[frozenset[int]], None] = lambda slots: None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="connect-group", daemon=True)

    def join(
        self,
        worker_id: str,
        on_revoke: Callable[[], None],
        on_assign: Callable[[frozenset[int]], None],
    ) -> None:
        """Join the group as ``worker_id`` (in a thread that keeps polling)."""
        self._on_revoke, self._on_assign = on_revoke, on_assign
        group_settings = {k: str(self.settings.get(k, v)) for k, v in GROUP_SETTINGS.items()}
        rebalance_timeout = group_settings.pop("rebalance.timeout.ms")
        consumer = clients.consumer(
            self.bootstrap,
            **{
                "group.id": self.group,
                "client.id": f"connect-{worker_id}",
                "partition.assignment.strategy": "roundrobin",
                "enable.auto.commit": False,
                "max.poll.interval.ms": max(int(rebalance_timeout), 300_000),
                **group_settings,
                **worker_clients(self.settings),
            },
        )
        topic = consumer.list_topics(self.topic, timeout=30).topics[self.topic]
        self.slot_count = len(topic.partitions)
        self.consumer = consumer
        consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked)
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
        assert self.consumer is not None
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
        if self._thread.is_alive():
            self._thread.join(10)
        self.slots = None
        if self.consumer is not None:
            self.consumer.close()
