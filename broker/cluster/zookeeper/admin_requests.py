"""Kafka's admin-request znodes on ZooKeeper: topic deletions (``/admin/delete_topics``),
log-directory failure events (``/log_dir_event_notification``), controlled shutdowns
(``/admin/controlled_shutdown``) and leader elections (``/admin/preferred_replica_election``,
Sluice's ``/admin/unclean_leader_election``) — requests one member writes and the controller
watches, answers and removes under its fence: the
:class:`~sluice.broker.cluster.metadata_store.AdminRequestStore` of
:class:`~sluice.broker.cluster.zookeeper.store.ZooKeeperMetadataStore` (its ``admin``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from kazoo.exceptions import NodeExistsError, NoNodeError

from sluice.broker.cluster import znodes
from sluice.broker.cluster.metadata_store import (
    AdminRequestPendingError,
    ControllerMovedError,
    UnknownTopicError,
)
from sluice.broker.cluster.model import ControllerFence, TopicPartition
from sluice.broker.cluster.zookeeper import znode_ops
from sluice.broker.cluster.zookeeper.session import BoundedClient, KazooWatch, translate_errors

__all__ = ["ZooKeeperAdminRequests"]

Fenced = Callable[[ControllerFence, Callable[[Any], None]], list[Any]]
"""The store's fenced ``multi``: the operations committed after a check of the controller epoch."""


class ZooKeeperAdminRequests:
    """The admin-request znodes on ``client``; ``fenced`` commits the controller's removals."""

    def __init__(self, client: BoundedClient, fenced: Fenced) -> None:
        self._client = client
        self._fenced = fenced

    @translate_errors
    def request_topic_deletion(self, topic: str) -> None:
        """Create ``/admin/delete_topics/<t>`` (nothing if it exists)."""
        if self._client.exists(znodes.topic_path(topic)) is None:
            raise UnknownTopicError(f"Topic '{topic}' does not exist.")
        with contextlib.suppress(NodeExistsError):
            self._client.create(znodes.delete_topic_path(topic))

    @translate_errors
    def pending_topic_deletions(self) -> frozenset[str]:
        """The children of ``/admin/delete_topics``."""
        return frozenset(self._client.get_children(znodes.DELETE_TOPICS))

    @translate_errors
    def watch_topic_deletions(self, callback: Callable[[frozenset[str]], None]) -> KazooWatch:
        """Call ``callback`` with the pending deletions at every change."""
        return znode_ops.watch_children(
            self._client, znodes.DELETE_TOPICS, lambda children: callback(frozenset(children))
        )

    @translate_errors
    def complete_topic_deletion(self, topic: str, fence: ControllerFence) -> None:
        """Delete the topic's subtree, config and deletion request in one fenced ``multi``."""
        doomed = znode_ops.subtree(self._client, znodes.topic_path(topic))
        for path in (znodes.config_path("topics", topic), znodes.delete_topic_path(topic)):
            if self._client.exists(path) is not None:
                doomed.append(path)

        def add(tx: Any) -> None:
            for path in doomed:
                tx.delete(path)

        if znode_ops.failed(self._fenced(fence, add)):  # changed under us (only admin paths may)
            raise ControllerMovedError(
                f"the deletion of topic '{topic}' raced another writer of its znodes; retry"
            )

    @translate_errors
    def notify_log_dir_failure(self, broker_id: int, partitions: Iterable[TopicPartition]) -> None:
        """A sequential ``/log_dir_event_notification/log_dir_event_<n>``."""
        self._client.create(
            f"{znodes.LOG_DIR_EVENT_NOTIFICATION}/{znodes.LOG_DIR_EVENT_PREFIX}",
            znodes.encode_log_dir_event(broker_id, sorted(partitions, key=_tp)),
            sequence=True,
        )

    def _log_dir_events(self) -> list[tuple[str, int, frozenset[TopicPartition]]]:
        events = []
        for child in sorted(self._client.get_children(znodes.LOG_DIR_EVENT_NOTIFICATION)):
            path = f"{znodes.LOG_DIR_EVENT_NOTIFICATION}/{child}"
            with contextlib.suppress(NoNodeError):  # cleared in between
                data, _stat = self._client.get(path)
                events.append((path, *znodes.decode_log_dir_event(path, data)))
        return events

    @translate_errors
    def offline_replicas(self) -> dict[int, frozenset[TopicPartition]]:
        """The partitions of every ``/log_dir_event_notification`` child, per broker."""
        offline: dict[int, frozenset[TopicPartition]] = {}
        for _path, broker, partitions in self._log_dir_events():
            offline[broker] = offline.get(broker, frozenset()) | partitions
        return offline

    @translate_errors
    def watch_log_dir_failures(self, callback: Callable[[], None]) -> KazooWatch:
        """Call ``callback`` at every change of ``/log_dir_event_notification``'s children."""
        return znode_ops.watch_children(
            self._client, znodes.LOG_DIR_EVENT_NOTIFICATION, lambda _children: callback()
        )

    @translate_errors
    def clear_log_dir_failures(self, broker_id: int) -> None:
        """Delete the broker's ``/log_dir_event_notification`` children."""
        for path, broker, _partitions in self._log_dir_events():
            if broker == broker_id:
                with contextlib.suppress(NoNodeError):
                    self._client.delete(path)

    @translate_errors
    def request_controlled_shutdown(self, broker_id: int) -> None:
        """Create the ephemeral ``/admin/controlled_shutdown/<id>`` (nothing if it exists)."""
        with contextlib.suppress(NodeExistsError):
            self._client.create(f"{znodes.CONTROLLED_SHUTDOWN}/{broker_id}", ephemeral=True)

    @translate_errors
    def controlled_shutdowns(self) -> frozenset[int]:
        """The children of ``/admin/controlled_shutdown``."""
        return frozenset(int(c) for c in self._client.get_children(znodes.CONTROLLED_SHUTDOWN))

    @translate_errors
    def watch_controlled_shutdowns(self, callback: Callable[[frozenset[int]], None]) -> KazooWatch:
        """Call ``callback`` with the brokers shutting down at every change."""
        return znode_ops.watch_children(
            self._client,
            znodes.CONTROLLED_SHUTDOWN,
            lambda children: callback(frozenset(int(c) for c in children)),
        )

    @translate_errors
    def request_preferred_election(
        self, partitions: Iterable[TopicPartition], *, unclean: bool = False
    ) -> None:
        """Create ``/admin/preferred_replica_election`` (``unclean``: Sluice's
        ``/admin/unclean_leader_election``); refused while one is pending."""
        wanted = frozenset(partitions)
        try:
            self._client.create(
                _election_path(unclean), znodes.encode_partitions(sorted(wanted, key=_tp))
            )
        except NodeExistsError:
            pending = self.pending_preferred_election(unclean=unclean) or frozenset()
            names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(pending, key=_tp))
            kind = "Unclean" if unclean else "Preferred replica"
            raise AdminRequestPendingError(
                f"{kind} leader election currently in progress for {names}. Aborting operation"
            ) from None

    @translate_errors
    def pending_preferred_election(
        self, *, unclean: bool = False
    ) -> frozenset[TopicPartition] | None:
        """The partitions of the pending request, or None."""
        request = znode_ops.read(self._client, _election_path(unclean), _decode_election)
        return None if request is None else request.value

    @translate_errors
    def watch_preferred_election(
        self,
        callback: Callable[[frozenset[TopicPartition] | None], None],
        *,
        unclean: bool = False,
    ) -> KazooWatch:
        """Call ``callback`` with the pending request (or None) at every change."""
        return znode_ops.watch_versioned(
            self._client,
            _election_path(unclean),
            _decode_election,
            lambda request: callback(None if request is None else request.value),
        )

    @translate_errors
    def complete_preferred_election(self, fence: ControllerFence, *, unclean: bool = False) -> None:
        """Remove the pending request under the fence (nothing if there is none)."""
        path = _election_path(unclean)
        if self._client.exists(path) is None:
            return
        self._fenced(fence, lambda tx: tx.delete(path))


def _election_path(unclean: bool) -> str:
    return znodes.UNCLEAN_LEADER_ELECTION if unclean else znodes.PREFERRED_REPLICA_ELECTION


def _decode_election(data: bytes) -> frozenset[TopicPartition]:
    return znodes.decode_partitions(znodes.PREFERRED_REPLICA_ELECTION, data)


def _tp(tp: TopicPartition) -> tuple[str, int]:
    return tp.topic, tp.partition
