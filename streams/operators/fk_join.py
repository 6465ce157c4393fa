"""Foreign-key table–table joins (KIP-213), as Kafka Streams does them.

The left table (primary key ``pk``) names a row of the right table through
``foreign_key(left_value)``. Three processors and two internal topics:

1. :class:`FkSubscribe` (left side): each left update *subscribes* its pk to the new foreign
   key (with a hash of the left value) and *unsubscribes* it from the old one, through the
   subscription topic, partitioned by foreign key like the right table.
2. :class:`FkSubscriptions` (right side): keeps ``fk → {pk: hash}`` in a store; answers each
   subscription with the right row, and each right update to every subscriber, through the
   response topic, partitioned by pk like the left table.
3. :class:`FkResolve` (left side): joins the response with the left row *if the row still has
   the hash it was sent with* (a stale answer to an older left value is dropped).

A deleted left row, or one whose foreign key becomes None, results in a deletion (inner) or a
row joined with None (left join). In a left join a row without foreign key still gets its
``joiner(row, None)``: its subscription goes out with a None key and is answered at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from sluice.serde import Serde
from sluice.streams.operators.base import Operator, StoreOperator
from sluice.streams.processor import ProcessorContext
from sluice.streams.record import Change, Record
from sluice.streams.state.keyvalue import KeyValueStore

__all__ = [
    "FkResolve",
    "FkRightUpdate",
    "FkSubscribe",
    "FkSubscriptions",
    "response_serde",
    "subscription_serde",
]

SUBSCRIBE, UNSUBSCRIBE, DELETE = 1, 2, 3
_NO_HASH = b"\x00" * 8


def value_hash(serde: Serde, value: Any) -> bytes:
    """8 bytes identifying a left value (of its serialized form)."""
    return hashlib.blake2b(serde.serialize(value), digest_size=8).digest()


def subscription_serde(pk_serde: Serde) -> Serde:
    """``(op, hash, pk)`` as 1 byte op, 8 bytes hash, then the pk's bytes."""

    def serialize(item: tuple[int, bytes, Any]) -> bytes:
        op, digest, pk = item
        return bytes([op]) + digest + pk_serde.serialize(pk)

    def deserialize(data: bytes) -> tuple[int, bytes, Any]:
        return data[0], data[1:9], pk_serde.deserialize(data[9:])

    return Serde(serialize, deserialize, f"fk-subscription({pk_serde.name})")


def response_serde(right_serde: Serde) -> Serde:
    """``(hash, right value or None)`` as 8 bytes hash, 1 byte presence, then the value."""

    def serialize(item: tuple[bytes, Any]) -> bytes:
        digest, value = item
        if value is None:
            return digest + b"\x00"
        return digest + b"\x01" + right_serde.serialize(value)

    def deserialize(data: bytes) -> tuple[bytes, Any]:
        value = right_serde.deserialize(data[9:]) if data[8] == 1 else None
        return data[:8], value

    return Serde(serialize, deserialize, f"fk-response({right_serde.name})")


class FkSubscribe(Operator):
    """Left updates → (un)subscriptions keyed by foreign key."""

    def __init__(
        self, foreign_key: Callable[[Any], Any], left_serde: Serde, left: bool = False
    ) -> None:
        self.foreign_key = foreign_key
        self.left_serde = left_serde
        self.left = left

    def process(self, record: Record) -> None:
        change: Change = record.value
        pk, ts = record.key, record.timestamp
        new_fk = None if change.new is None else self.foreign_key(change.new)
        old_fk = None if change.old is None else self.foreign_key(change.old)
        if old_fk is not None and old_fk != new_fk:
            op = DELETE if new_fk is None else UNSUBSCRIBE
            self.forward(Record(old_fk, (op, _NO_HASH, pk), ts))
        if new_fk is not None:
            digest = value_hash(self.left_serde, change.new)
            self.forward(Record(new_fk, (SUBSCRIBE, digest, pk), ts))
        elif self.left and old_fk is None:
            # a left join answers rows without foreign key too (Kafka: a subscription to a None
            # foreign key, answered with no right row and stored nowhere)
            if change.new is not None:
                digest = value_hash(self.left_serde, change.new)
                self.forward(Record(None, (SUBSCRIBE, digest, pk), ts))
            elif change.old is not None:
                self.forward(Record(None, (DELETE, _NO_HASH, pk), ts))


class _Subscribers(StoreOperator):
    """Shares the subscription store and the right table's store."""

    def __init__(self, subscriptions: str, right_store: str, pk_serde: Serde) -> None:
        self.store_name = subscriptions
        self.right_name = right_store
        self.pk_serde = pk_serde

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        right = context.get_state_store(self.right_name)
        assert isinstance(right, KeyValueStore)
        self.right = right


class FkSubscriptions(_Subscribers):
    """Subscriptions in, right rows out (to the response topic, keyed by pk)."""

    def process(self, record: Record) -> None:
        fk, ts = record.key, record.timestamp
        op, digest, pk = record.value
        if fk is None:  # a left-join row without foreign key: nothing to join, nothing to keep
            if op != UNSUBSCRIBE:
                self.forward(Record(pk, (digest if op == SUBSCRIBE else _NO_HASH, None), ts))
            return
        pk_hex = self.pk_serde.serialize(pk).hex()
        subscribers: dict[str, str] = dict(self.store.get(fk) or {})
        if op == SUBSCRIBE:
            subscribers[pk_hex] = digest.hex()
        else:
            subscribers.pop(pk_hex, None)
        self.store.put(fk, subscribers or None, ts)
        if op == SUBSCRIBE:
            self.forward(Record(pk, (digest, self.right.get(fk)), ts))
        elif op == DELETE:
            self.forward(Record(pk, (_NO_HASH, None), ts))


class FkRightUpdate(_Subscribers):
    """A right row changed: tell every subscriber."""

    def process(self, record: Record) -> None:
        subscribers = self.store.get(record.key) or {}
        new = record.value.new
        for pk_hex, digest_hex in sorted(subscribers.items()):  # by pk bytes, as Kafka's scan
            pk = self.pk_serde.deserialize(bytes.fromhex(pk_hex))
            self.forward(Record(pk, (bytes.fromhex(digest_hex), new), record.timestamp))


class FkResolve(StoreOperator):
    """Responses in; joined rows out if the left row still matches."""

    def __init__(
        self, left_store: str, left_serde: Serde, joiner: Callable[[Any, Any], Any], left: bool
    ) -> None:
        self.store_name = left_store
        self.left_serde = left_serde
        self.joiner = joiner
        self.left = left

    def process(self, record: Record) -> None:
        pk, ts = record.key, record.timestamp
        digest, right = record.value
        current = self.store.get(pk)
        if current is None:
            if digest == _NO_HASH:
                self.forward(Record(pk, Change(None, None), ts))
            return
        if digest == _NO_HASH:
            # the foreign key went away while the row stayed
            result = self.joiner(current, None) if self.left else None
            self.forward(Record(pk, Change(result, None), ts))
            return
        if value_hash(self.left_serde, current) != digest:
            return  # an answer about an older left value
        if right is None and not self.left:
            self.forward(Record(pk, Change(None, None), ts))
            return
        self.forward(Record(pk, Change(self.joiner(current, right), None), ts))
