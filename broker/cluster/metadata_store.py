"""What the brokers and the controller need from the cluster's metadata store, and nothing more.

:class:`MetadataStore` is the one seam between Sluice and the coordination engine:
:class:`~sluice.broker.cluster.zookeeper.ZooKeeperMetadataStore` implements it on ZooKeeper with
Kafka's layout; an etcd backend would implement the same protocol (leases for ephemeral records,
``mod_revision`` compares for versions).

The rules every backend keeps:

* **Liveness is a session.** A broker's registration and the controller's office live as long
  as the store session that created them; when the session ends they vanish and the watches of
  other members fire. The owner learns it through :meth:`MetadataStore.on_session_expired`.
* **Every state change is a conditional write.** Reads return :class:`~.model.Versioned` values;
  a write names the version it read and returns :class:`~.model.BadVersion` when someone else
  wrote first. Writes made by the controller also carry the :class:`~.model.ControllerFence` of
  its election and raise :class:`ControllerMovedError` once another controller was elected.
* **Calls block**, for at most the connection timeout, and raise only this module's errors (a
  backend's own exceptions never leak): :class:`MetadataStoreUnavailableError` while the
  connection is down; callbacks run on the store's own thread and
  must not block (hand them to an event loop with ``loop.call_soon_threadsafe``). A watch fires
  once with the current value when it is set, then after each change, until cancelled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from sluice.broker.cluster.model import (
    BadVersion,
    BrokerRegistration,
    ConfigChange,
    ControllerFence,
    ControllerRegistration,
    LiveBroker,
    PartitionState,
    ProducerIdBlock,
    TopicAssignment,
    TopicPartition,
    Versioned,
)

#: Producer ids are claimed cluster-wide in blocks of this many (Kafka's ``PidBlockSize``).
PRODUCER_ID_BLOCK_SIZE = 1000


class MetadataStoreError(Exception):
    """The base of the store's errors."""


class MetadataStoreUnreachableError(MetadataStoreError):
    """No session could be established within the connection timeout."""


class MetadataStoreUnavailableError(MetadataStoreError):
    """The store did not answer: the connection is down or the session expired meanwhile.
    Nothing is known about a write that raised it; retry once the session is back."""


class BrokerIdInUseError(MetadataStoreError):
    """Another live broker is registered with this id (Kafka's NodeExistsException)."""


class ControllerMovedError(MetadataStoreError):
    """A controller write was refused: the controller epoch changed since this controller was
    elected, so it is no longer the controller (Kafka's ControllerMovedException)."""


class TopicExistsError(MetadataStoreError):
    """A topic of that name exists already (Kafka's TopicExistsException)."""


class UnknownTopicError(MetadataStoreError):
    """No topic of that name exists (Kafka's UnknownTopicOrPartitionException)."""


class AdminRequestPendingError(MetadataStoreError):
    """An admin request of the same kind waits for the controller already."""


class ProducerIdsExhaustedError(MetadataStoreError):
    """No producer-id block could be claimed: the ids ran out, or other brokers won every one of
    the bounded attempts."""


class Watch(Protocol):
    """A registered watch; :meth:`cancel` stops it (no callback runs after it returns)."""

    def cancel(self) -> None:
        """Stop the watch."""


class MetadataStore(Protocol):
    """The cluster's shared metadata: brokers, controller, topics, configs, producer ids."""

    # session

    def close(self) -> None:
        """End the session: this member's ephemeral records (registration, controller office)
        disappear at once, as when its session expires. No callback runs after close returns."""

    def on_session_expired(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the session ends without :meth:`close`: the registration and
        any controller office are gone; the store reconnects with a new session, on which the
        owner registers again."""

    # cluster id

    def get_or_create_cluster_id(self, proposed: str) -> str:
        """The cluster's id; the first member to ask stores ``proposed``."""

    # brokers

    def register_broker(self, registration: BrokerRegistration) -> int:
        """Register this broker for the life of the session; return its broker epoch.
        Raise :class:`BrokerIdInUseError` if another session holds the id."""

    def live_brokers(self) -> dict[int, LiveBroker]:
        """Every registered broker, by id."""

    def watch_live_brokers(self, callback: Callable[[frozenset[int]], None]) -> Watch:
        """Call ``callback`` with the ids of the live brokers, now and at every change."""

    # controller

    def elect_controller(self, broker_id: int) -> ControllerFence | None:
        """Try to become the controller: take the controller office and increment the
        controller epoch in one atomic step. Return the fence for this term (the current term's
        when this session holds the office already), or None when another broker holds the
        office or took it first."""

    def controller(self) -> Versioned[ControllerRegistration] | None:
        """The current controller, or None between terms."""

    def controller_epoch(self) -> Versioned[int]:
        """The controller epoch (0 before the first election) and its version."""

    def watch_controller(self, callback: Callable[[int | None], None]) -> Watch:
        """Call ``callback`` with the controller's broker id (None between terms), now and at
        every change."""

    # topics and partitions

    def create_topic(
        self, topic: str, assignment: TopicAssignment, config: Mapping[str, str]
    ) -> None:
        """Create the topic's config and assignment (admin: any broker). Raise
        :class:`TopicExistsError` when it exists."""

    def topics(self) -> frozenset[str]:
        """The names of all topics."""

    def watch_topics(self, callback: Callable[[frozenset[str]], None]) -> Watch:
        """Call ``callback`` with the topic names, now and at every change."""

    def topic_assignment(self, topic: str) -> Versioned[TopicAssignment] | None:
        """The topic's replica assignment, or None if there is no such topic."""

    def set_topic_assignment(
        self, topic: str, assignment: TopicAssignment, expected_version: int
    ) -> int | BadVersion:
        """Replace the assignment if it is still at ``expected_version``; the new version."""

    def watch_topic_assignment(
        self, topic: str, callback: Callable[[Versioned[TopicAssignment] | None], None]
    ) -> Watch:
        """Call ``callback`` with the topic's assignment (None once deleted), now and at every
        change."""

    def partition_state(self, topic: str, partition: int) -> Versioned[PartitionState] | None:
        """The partition's leader, epoch and ISR, or None before the controller wrote it."""

    def create_partition_state(
        self, topic: str, partition: int, state: PartitionState, fence: ControllerFence
    ) -> int | BadVersion:
        """The controller's first write of a new partition's state (version 0); BadVersion
        (expected -1) when the state exists already."""

    def set_partition_state(
        self,
        topic: str,
        partition: int,
        state: PartitionState,
        expected_version: int,
        fence: ControllerFence | None,
    ) -> int | BadVersion:
        """Replace the state if it is still at ``expected_version``; the new version. The
        controller passes its fence (elections); a partition leader changing its ISR passes
        None (the version alone fences it)."""

    def watch_partition_state(
        self,
        topic: str,
        partition: int,
        callback: Callable[[Versioned[PartitionState] | None], None],
    ) -> Watch:
        """Call ``callback`` with the partition's state, now and at every change."""

    def notify_isr_change(self, partitions: Iterable[TopicPartition]) -> None:
        """Tell the controller these partitions' ISR changed (a sequential notification)."""

    # configs, ACLs and admin requests: collaborators with their own interfaces

    @property
    def configs(self) -> EntityConfigStore:
        """Dynamic configs of topics, brokers, users and clients, and their change
        notifications."""

    @property
    def acls(self) -> AclZnodeStore:
        """The ACL records and their change notifications."""

    @property
    def admin(self) -> AdminRequestStore:
        """The admin requests to the controller and their notifications."""

    # producer ids

    def allocate_producer_id_block(self, broker_id: int) -> ProducerIdBlock:
        """Claim the next :data:`PRODUCER_ID_BLOCK_SIZE` producer ids for ``broker_id``,
        unique across the cluster."""


class AdminRequestStore(Protocol):
    """The requests admins and brokers leave for the controller (topic deletions, log
    directory failures, controlled shutdowns, preferred and unclean elections) and the
    controller's completion of each."""

    def request_topic_deletion(self, topic: str) -> None:
        """Ask the controller to delete the topic (nothing if asked already). Raise
        :class:`UnknownTopicError` when there is no such topic."""

    def pending_topic_deletions(self) -> frozenset[str]:
        """The topics whose deletion was requested and is not complete."""

    def watch_topic_deletions(self, callback: Callable[[frozenset[str]], None]) -> Watch:
        """Call ``callback`` with the pending deletions, now and at every change."""

    def complete_topic_deletion(self, topic: str, fence: ControllerFence) -> None:
        """The controller's last step of a deletion: remove the topic's assignment, partition
        states, config and deletion request in one atomic step."""

    def notify_log_dir_failure(self, broker_id: int, partitions: Iterable[TopicPartition]) -> None:
        """A log directory of this broker failed: its replicas of ``partitions`` are offline
        (a record that stays until :meth:`clear_log_dir_failures`)."""

    def offline_replicas(self) -> dict[int, frozenset[TopicPartition]]:
        """Per broker, the replicas its failed log directories took offline."""

    def watch_log_dir_failures(self, callback: Callable[[], None]) -> Watch:
        """Call ``callback`` at every new (or cleared) log directory failure."""

    def clear_log_dir_failures(self, broker_id: int) -> None:
        """The broker starts (its directories healthy): forget its offline replicas."""

    def request_controlled_shutdown(self, broker_id: int) -> None:
        """Ask the controller to move this broker's leaderships away before it stops (a
        record that lives as long as the session)."""

    def controlled_shutdowns(self) -> frozenset[int]:
        """The brokers that asked for a controlled shutdown."""

    def watch_controlled_shutdowns(self, callback: Callable[[frozenset[int]], None]) -> Watch:
        """Call ``callback`` with the brokers shutting down, now and at every change."""

    def request_preferred_election(
        self, partitions: Iterable[TopicPartition], *, unclean: bool = False
    ) -> None:
        """Ask the controller to move these partitions' leadership to their preferred replica
        (``unclean``: to elect a leader, from outside the ISR if need be, for those without
        one). Raise :class:`AdminRequestPendingError` while an earlier request of the same kind
        is pending."""

    def pending_preferred_election(
        self, *, unclean: bool = False
    ) -> frozenset[TopicPartition] | None:
        """The partitions of the pending request of that kind, or None."""

    def watch_preferred_election(
        self,
        callback: Callable[[frozenset[TopicPartition] | None], None],
        *,
        unclean: bool = False,
    ) -> Watch:
        """Call ``callback`` with the pending request of that kind (None when there is none),
        now and at every change."""

    def complete_preferred_election(self, fence: ControllerFence, *, unclean: bool = False) -> None:
        """The controller is done with the pending request of that kind: remove it."""


class EntityConfigStore(Protocol):
    """Kafka's dynamic configs (``/config/<type>/<name>``) and their change notifications: topic
    and broker overrides, user and client quotas, SCRAM credentials."""

    def get(self, entity_type: str, name: str) -> dict[str, str]:
        """The dynamic config of a topic (``topics``), broker (``brokers``, the name an id or
        ``<default>``), user or client; empty when none is set."""

    def set(self, entity_type: str, name: str, config: Mapping[str, str]) -> None:
        """Replace the entity's dynamic config and publish a change notification."""

    def entities(self, entity_type: str) -> frozenset[str]:
        """The names of the entities of ``entity_type`` that have a config znode."""

    def update(
        self,
        entity_type: str,
        name: str,
        change: Callable[[dict[str, str]], dict[str, str]],
    ) -> None:
        """Replace the entity's config by ``change(current)``, read and written at the same
        znode version (retried while another writer moves it: the keys others keep there, a
        user's SCRAM credentials beside its quotas, survive), then publish a change
        notification. ``name`` may be nested: ``alice/clients/app``."""

    def children(self, entity_type: str, name: str, child_type: str) -> frozenset[str]:
        """The names under ``/config/<entity_type>/<name>/<child_type>`` (a user's client
        ids: ``("users", "alice", "clients")``); empty when there are none."""

    def changes(self, after: int) -> list[ConfigChange]:
        """The change notifications with a sequence number above ``after``, in order."""

    def watch_changes(self, callback: Callable[[list[ConfigChange]], None]) -> Watch:
        """Call ``callback`` with every notification published, now and at every new one."""


class AclZnodeStore(Protocol):
    """The ACL records (their meaning is :mod:`sluice.broker.security.acls`') and their change
    notifications."""

    def read_all(self) -> dict[str, bytes]:
        """Every ACL znode (``/kafka-acl/<Type>/<name>``, ``/kafka-acl-extended/prefixed/…``)
        and its data."""

    def update(
        self, path: str, change: Callable[[bytes | None], bytes | None], notification: str
    ) -> None:
        """Replace the ACL znode ``path`` by ``change(current)`` (None: delete it), retried
        while another writer moves it, then publish ``notification`` (the resource) as a
        sequential change under the pattern type's change path."""

    def watch_changes(self, callback: Callable[[], None]) -> Watch:
        """Call ``callback`` now and at every ACL change notification."""
