"""How groups survive restarts: their records in ``__consumer_offsets``, written and replayed.

At each generation that becomes stable (and when a group becomes empty) the group's metadata
with its members and assignments is appended; at start the topic is replayed, latest record per
key winning, so the last stable generation and every committed offset come back. Mixed into
:class:`~sluice.broker.group.coordinator.GroupCoordinator`; not thread-safe.
"""

from __future__ import annotations

import logging
from typing import Protocol

from sluice.broker.group import records as rec
from sluice.broker.group.group import CommittedOffset, Group, GroupState, Member
from sluice.broker.internal_topic import InternalTopic
from sluice.broker.records.codec import Record

log = logging.getLogger(__name__)

S = GroupState


class _Coordinator(Protocol):
    groups: dict[str, Group]
    store: InternalTopic

    def _replay(self, record: Record, pending_for: int | None = None) -> None: ...


class GroupPersistence:
    """Loading and storing group metadata."""

    def load(self: _Coordinator) -> None:
        """Rebuild groups, their last stable generation with its members, and offsets from
        ``__consumer_offsets``, as Kafka does when it loads a coordinator partition.
        Transactional offset commits are applied when their commit marker follows; those
        still open stay pending. Call :meth:`start` in the event loop afterwards."""
        pending: dict[int, list[Record]] = {}
        for batch in self.store.replay():
            if batch.control:
                records = pending.pop(batch.producer_id, [])
                if batch.commits:
                    for record in records:
                        self._replay(record)
            elif batch.transactional:
                pending.setdefault(batch.producer_id, []).extend(batch.records)
            else:
                for record in batch.records:
                    self._replay(record)
        for producer_id, records in pending.items():
            for record in records:
                self._replay(record, pending_for=producer_id)
        for group in self.groups.values():
            group.state = S.STABLE if group.members and group.protocol else S.EMPTY
            if group.state is S.EMPTY:
                group.members.clear()
                group.static_members.clear()
                group.leader = None
        log.info("loaded %d groups from __consumer_offsets", len(self.groups))

    def _replay(self: _Coordinator, record: Record, pending_for: int | None = None) -> None:
        if record.key is None:
            return
        try:
            key = rec.decode_key(record.key)
            value = record.value
            if isinstance(key, rec.OffsetKey):
                group = self.groups.setdefault(key.group, Group(key.group))
                target = (
                    group.offsets
                    if pending_for is None
                    else (group.pending_txn_offsets.setdefault(pending_for, {}))
                )
                if value is None:
                    target.pop((key.topic, key.partition), None)
                else:
                    v = rec.decode_offset_value(value)
                    target[(key.topic, key.partition)] = CommittedOffset(
                        v.offset, v.leader_epoch, v.metadata, v.commit_timestamp
                    )
            elif value is None:
                self.groups.pop(key.group, None)
            else:
                meta = rec.decode_group_value(value)
                group = self.groups.setdefault(key.group, Group(key.group))
                group.protocol_type = meta.protocol_type or None
                group.generation = meta.generation
                group.state_timestamp = meta.state_timestamp
                group.protocol = meta.protocol
                group.members.clear()
                group.static_members.clear()
                group.leader = None
                for m in meta.members:
                    group.add(
                        Member(
                            m.member_id,
                            m.group_instance_id,
                            m.client_id,
                            m.client_host,
                            m.rebalance_timeout,
                            m.session_timeout,
                            meta.protocol_type,
                            [(meta.protocol or "", m.subscription)],
                            m.assignment,
                            is_new=False,
                        )
                    )
                group.leader = meta.leader if meta.leader in group.members else group.leader
        except rec.RecordFormatError as exc:
            log.warning("skipping an unreadable record of __consumer_offsets: %s", exc)

    def _persist_group(self: _Coordinator, group: Group) -> None:
        members = tuple(
            rec.MemberValue(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(group.protocol) if group.protocol else b"",
                m.assignment,
            )
            for m in group.members.values()
        )
        value = rec.GroupValue(
            group.protocol_type or "",
            group.generation,
            group.protocol,
            group.leader if group.members else None,
            group.state_timestamp,
            members,
        )
        self.store.append(group.group_id, [(rec.group_key(group.group_id), rec.group_value(value))])
