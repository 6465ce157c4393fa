"""Joins of streams with tables, global tables, tables with tables.

Stream–table: each stream record looks its key up in the table's store; table updates emit
nothing (Kafka's semantics). Stream–global-table: the lookup key comes from
``key_selector(key, value)``. Table–table: an update on either side is joined with the other
side's current row; the result is a table update. ``joiner(left, right)`` gets None for a missing
side in left and outer joins. Stream–stream joins are in :mod:`.windowed_join`.

>>> from sluice.serde import STRING, JSON
>>> from sluice.streams.record import Record
>>> from sluice.streams.state.keyvalue import KeyValueStore
>>> table = KeyValueStore(STRING, JSON); table.put("c1", {"tier": "gold"})
>>> join = StreamTableJoin("t", lambda o, c: {**o, "tier": c["tier"]}, left=False)
>>> join.store = table; out = []; join.forward = out.append
>>> join.process(Record("c1", {"amount": 5}, 0)); join.process(Record("c2", {"amount": 1}, 0))
>>> [r.value for r in out]
[{'amount': 5, 'tier': 'gold'}]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.streams.operators.base import StoreOperator
from sluice.streams.processor import ProcessorContext
from sluice.streams.record import Change, Record
from sluice.streams.state.keyvalue import KeyValueStore

__all__ = ["StreamGlobalTableJoin", "StreamTableJoin", "TableTableJoin"]

Joiner = Callable[[Any, Any], Any]


class StreamTableJoin(StoreOperator):
    """Join each stream record with the table row of its key."""

    def __init__(self, store_name: str, joiner: Joiner, *, left: bool) -> None:
        self.store_name = store_name
        self.joiner = joiner
        self.left = left

    def process(self, record: Record) -> None:
        if record.key is None or record.value is None:
            return  # Kafka drops these: no key to look up, or nothing to join
        other = self.store.get(record.key)
        if other is None and not self.left:
            return
        self.forward(
            Record(record.key, self.joiner(record.value, other), record.timestamp, record.headers)
        )


class StreamGlobalTableJoin(StreamTableJoin):
    """Join each stream record with the global table row at ``key_selector(key, value)``."""

    def __init__(
        self,
        store_name: str,
        key_selector: Callable[[Any, Any], Any],
        joiner: Joiner,
        *,
        left: bool,
    ) -> None:
        super().__init__(store_name, joiner, left=left)
        self.key_selector = key_selector

    def process(self, record: Record) -> None:
        if record.value is None:
            return
        lookup = self.key_selector(record.key, record.value)
        other = None if lookup is None else self.store.get(lookup)
        if other is None and not self.left:
            return
        self.forward(
            Record(record.key, self.joiner(record.value, other), record.timestamp, record.headers)
        )


class TableTableJoin(StoreOperator):
    """One side of a table–table join: updates here meet the other side's store.

    ``kind`` is ``inner``, ``left`` or ``outer``; ``this_is_left`` says which argument of the
    joiner this side fills.
    """

    def __init__(self, other_store: str, joiner: Joiner, kind: str, this_is_left: bool) -> None:
        self.store_name = other_store
        self.joiner = joiner
        self.kind = kind
        self.this_is_left = this_is_left

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        assert isinstance(self.store, KeyValueStore)

    def _join(self, mine: Any, other: Any) -> Any:
        left, right = (mine, other) if self.this_is_left else (other, mine)
        if left is None and right is None:
            return None
        if self.kind == "inner" and (left is None or right is None):
            return None
        if self.kind == "left" and left is None:
            return None
        return self.joiner(left, right)

    def process(self, record: Record) -> None:
        if record.key is None:
            return
        change: Change = record.value
        entry = self.store.get_with_timestamp(record.key)
        other, other_ts = (None, -1) if entry is None else entry
        new = self._join(change.new, other)
        old = self._join(change.old, other)
        if new is None and old is None:
            return
        timestamp = max(record.timestamp, other_ts)
        self.forward(Record(record.key, Change(new, old), timestamp, record.headers))
