"""Which replica a consumer should fetch from (KIP-392): Kafka's ``ReplicaSelector``, as pure
functions.

A leader configured with ``replica.selector.class =
org.apache.kafka.common.replica.RackAwareReplicaSelector`` asks, on every consumer fetch
(Fetch v11+), where the consumer had better read: the Fetch handler describes the partition's
replicas as :class:`ReplicaView` — the leader, and each in-sync follower whose log covers the
fetch offset (Kafka's ``ReplicaManager.findPreferredReadReplica``) — and
:func:`preferred_read_replica` names the follower to send the consumer to, or None to serve it
here. The rack-aware rule is Kafka's ``RackAwareReplicaSelector``:

- a consumer with no rack (``client.rack`` unset: an empty ``rack_id``) reads from the leader;
- when no replica shares its rack, from the leader;
- when the leader shares its rack, from the leader;
- otherwise from the replica of its rack that is most caught up: the largest log end offset,
  then the most recently caught up, then the largest broker id (``ReplicaView.comparator``).

No ``replica.selector.class`` (unset or empty, Kafka's default) always reads from the leader.

>>> leader = ReplicaView(1, "a", log_end_offset=10)
>>> followers = [ReplicaView(2, "b", 10, 5), ReplicaView(3, "b", 10, 0), ReplicaView(4, "c", 9)]
>>> preferred_read_replica(RACK_AWARE_SELECTOR, "b", leader, followers)
3
>>> preferred_read_replica(RACK_AWARE_SELECTOR, "a", leader, followers) is None
True
>>> preferred_read_replica(None, "b", leader, followers) is None
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "RACK_AWARE_SELECTOR",
    "ReplicaView",
    "check_selector_class",
    "preferred_read_replica",
    "select_rack_aware",
]

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""The one ``replica.selector.class`` Sluice has (Kafka's built-in one)."""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """A replica as the selector sees it (Kafka's ``ReplicaView``): its broker and that
    broker's ``broker.rack`` (None: no rack), its log end offset as the leader knows it, and
    how long ago it was last caught up with the leader (0 for the leader itself)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_caught_up_ms: int = 0


def _most_caught_up(view: ReplicaView) -> tuple[int, int, int]:
    return (view.log_end_offset, -view.time_since_caught_up_ms, view.broker_id)


def select_rack_aware(
    client_rack: str, leader: ReplicaView, replicas: Iterable[ReplicaView]
) -> ReplicaView:
    """Kafka's ``RackAwareReplicaSelector.select``: the replica a consumer in ``client_rack``
    reads from (``leader`` unless a replica of ``replicas`` shares the consumer's rack while
    the leader does not; see the module docstring). ``replicas`` may include the leader.

    >>> leader = ReplicaView(1, "a", 10)
    >>> select_rack_aware("", leader, [ReplicaView(2, "", 10)]).broker_id
    1
    >>> select_rack_aware("c", leader, [ReplicaView(2, "b", 10)]).broker_id
    1
    >>> select_rack_aware("b", leader, [ReplicaView(2, "b", 8), ReplicaView(3, "b", 9)]).broker_id
    3
    """
    if not client_rack:
        return leader
    if leader.rack == client_rack:
        return leader
    same_rack = [view for view in replicas if view.rack == client_rack]
    if not same_rack:
        return leader
    return max(same_rack, key=_most_caught_up)


def preferred_read_replica(
    selector: str | None,
    client_rack: str,
    leader: ReplicaView,
    candidates: Iterable[ReplicaView],
) -> int | None:
    """The broker id of the follower a consumer fetching from the leader should read from
    instead (Fetch's ``preferred_read_replica``), or None to read from the leader: always
    None without a ``selector`` (``replica.selector.class`` unset or empty). ``candidates``
    are the in-sync followers whose log covers the fetch offset."""
    if not selector:
        return None
    chosen = select_rack_aware(client_rack, leader, candidates)
    return None if chosen.broker_id == leader.broker_id else chosen.broker_id


def check_selector_class(value: Any) -> str | None:
    """The check of ``replica.selector.class``: unset, empty, or Kafka's rack-aware selector
    (the only one Sluice has).

    >>> check_selector_class(None), check_selector_class(RACK_AWARE_SELECTOR)
    (None, None)
    >>> check_selector_class("com.example.Mine")  # doctest: +ELLIPSIS
    'must be empty or org.apache.kafka.common.replica.RackAwareReplicaSelector ...'
    """
    if value in (None, "", RACK_AWARE_SELECTOR):
        return None
    return (
        f"must be empty or {RACK_AWARE_SELECTOR} (the only replica selector Sluice has; "
        "custom selector classes cannot be loaded)"
    )
