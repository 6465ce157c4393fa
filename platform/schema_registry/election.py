"""Which registry instance writes: the one that a consumer group assigns the ``_schemas``
partition.

Confluent elects its leader with a group protocol of its own (``SchemaRegistryCoordinator``,
protocol type ``sr``) that librdkafka cannot speak, so Sluice uses Kafka's ordinary consumer
group protocol for the same effect: every instance runs a consumer in the group ``--group-id``
(default ``schema-registry``) subscribed to the one-partition ``_schemas`` topic, with its
advertised URL as ``client.id``. The group gives partition 0 to exactly one member: that member
is the leader. It finds out through its rebalance callbacks; any other instance finds the
leader's URL by describing the group (``DescribeGroups``: each member's ``client_id`` and
assignment). When the leader stops, the group moves the partition to another member (at once
on a clean shutdown, which leaves the group; after ``session.timeout.ms``, 10 s, when it is
killed). The election consumer only holds the partition: it reads from the end and commits
nothing; the registry's state is read by :class:`~sluice.schema_registry.kafka_store.KafkaLog`.

Two instances may both believe they lead for the moment of a rebalance; each write first reads
the topic to its end, which narrows that window but does not close it (Confluent's protocol
has the same window between generations).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException

from sluice import clients

__all__ = ["DEFAULT_GROUP", "Election"]

log = logging.getLogger("sluice.schema_registry")

DEFAULT_GROUP = "schema-registry"
"""Confluent's ``schema.registry.group.id`` default."""


class Election:
    """This instance's membership in the election group; see the module docstring."""

    def __init__(
        self,
        bootstrap: str,
        url: str,
        *,
        topic: str,
        group_id: str = DEFAULT_GROUP,
        client_config: Mapping[str, Any] | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        self.url = url
        self.topic = topic
        self.group_id = group_id
        self.timeout_s = timeout_s
        self._leader = threading.Event()
        self._stop = threading.Event()
        config = dict(client_config or {})
        self._consumer = clients.consumer(
            bootstrap,
            **{
                **config,
                "group.id": group_id,
                "client.id": url,
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000,
            },
        )
        self._admin = clients.admin(bootstrap, **config)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Join the group; the membership is kept by a background thread."""
        self._consumer.subscribe(
            [self.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._revoked
        )
        self._thread = threading.Thread(target=self._run, name="schemas-election", daemon=True)
        self._thread.start()

    def _assigned(self, consumer: Any, partitions: list[Any]) -> None:
        if any(p.topic == self.topic and p.partition == 0 for p in partitions):
            self._leader.set()
            log.info("this instance (%s) is the leader", self.url)

    def _revoked(self, consumer: Any, partitions: list[Any]) -> None:
        if self._leader.is_set():
            log.info("this instance (%s) is no longer the leader", self.url)
        self._leader.clear()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._consumer.consume(100, 0.2)  # records are not used: the membership is
            except Exception:
                log.exception("election consumer")
                self._stop.wait(0.5)

    def wait_for_leader(self, timeout_s: float) -> str | None:
        """The leader's URL once some member leads (waiting up to ``timeout_s``), or None.

        A member that describes itself as the leader without holding the partition is a
        killed predecessor on the same URL, still in the group until its session times out:
        that is no leader yet.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            leader = self.leader_url()
            if leader == self.url and not self.is_leader():
                leader = None
            if leader is not None or time.monotonic() >= deadline:
                return leader
            self._leader.wait(0.2)

    def is_leader(self) -> bool:
        """Whether the group has given this instance the partition."""
        return self._leader.is_set()

    def leader_url(self) -> str | None:
        """The leader's advertised URL (this instance's if it leads); None when no member has
        the partition (a rebalance under way, or the group cannot be described)."""
        if self.is_leader():
            return self.url
        futures = self._admin.describe_consumer_groups(
            [self.group_id], request_timeout=self.timeout_s
        )
        try:
            description = futures[self.group_id].result(self.timeout_s)
        except (KafkaException, TimeoutError) as error:
            log.warning("cannot describe group %s: %s", self.group_id, error)
            return None
        for member in description.members:
            assignment = member.assignment.topic_partitions if member.assignment else []
            if any(tp.topic == self.topic and tp.partition == 0 for tp in assignment or ()):
                return str(member.client_id)
        return None

    def close(self) -> None:
        """Leave the group (the partition moves to another instance at once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._leader.clear()
        self._consumer.close()
