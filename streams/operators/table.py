"""Table operators: filter, map values, materialize, to stream, and re-grouping.

A table flows as ``Record(key, Change(new, old))``; each operator maps both sides so that the
ones downstream (aggregations with a subtractor, joins) see what changed.

>>> from sluice.streams.record import Change, Record
>>> op = TableFilter(lambda k, v: v > 1); out = []; op.forward = out.append
>>> op.process(Record("a", Change(2, 1), 0)); op.process(Record("a", Change(0, 2), 0))
>>> [r.value for r in out]
[Change(new=2, old=None), Change(new=None, old=2)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.streams.operators.aggregate import CachedStoreOperator
from sluice.streams.operators.base import Emit, FusedOperator, Operator
from sluice.streams.record import Change, Headers, Record

__all__ = ["TableFilter", "TableMapValues", "TableMaterialize", "TableRegroup", "TableToStream"]


class TableFilter(Operator):
    """Keep rows for which ``predicate(key, value)`` holds; a row that stops matching is deleted."""

    def __init__(self, predicate: Callable[[Any, Any], Any], negate: bool = False) -> None:
        self.predicate = predicate
        self.negate = negate

    def _keep(self, key: Any, value: Any) -> Any:
        if value is None:
            return None
        return value if bool(self.predicate(key, value)) is not self.negate else None

    def process(self, record: Record) -> None:
        change: Change = record.value
        new = self._keep(record.key, change.new)
        old = self._keep(record.key, change.old)
        if new is None and old is None:
            return
        self.forward(Record(record.key, Change(new, old), record.timestamp, record.headers))


class TableMapValues(Operator):
    """Map both the new and the old value with ``mapper(value)``."""

    def __init__(self, mapper: Callable[[Any], Any]) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        change: Change = record.value
        new = None if change.new is None else self.mapper(change.new)
        old = None if change.old is None else self.mapper(change.old)
        self.forward(Record(record.key, Change(new, old), record.timestamp, record.headers))


class TableMaterialize(CachedStoreOperator):
    """Keep the table's current rows in a store (for joins and queries), forward the change
    (through a record cache, as every materialized table; :mod:`sluice.streams.state.cache`)."""

    def __init__(self, store_name: str, *, caching: bool = True) -> None:
        self.store_name = store_name
        self.caching = caching

    def process(self, record: Record) -> None:
        change: Change = record.value
        old = self.store.get(record.key)
        self.store.put(record.key, change.new, record.timestamp)
        if old is None and change.new is None:
            return
        self.forward(Record(record.key, Change(change.new, old), record.timestamp, record.headers))


class TableToStream(FusedOperator):
    """Each table update as a stream record; deletions become records with a None value."""

    def fuse(self, downstream: Emit) -> Emit:
        def to_stream(key: Any, change: Any, timestamp: int, headers: Headers) -> None:
            downstream(key, change.new, timestamp, headers)

        return to_stream


class TableRegroup(Operator):
    """``KTable.group_by``: the old row leaves its group, the new row joins its group.

    ``selector(key, value) -> (group key, value)``. When the group key stays the same, one
    ``Change(new, old)`` goes on so that the subtractor runs before the adder on one record
    (Kafka 3.5+, KIP-904); otherwise the old side goes on as ``Change(None, old)`` to its group
    and the new side as ``Change(new, None)`` to its own, both to be repartitioned by group
    key. A pair whose group key or value is None is skipped, as in Kafka.
    """

    def __init__(self, selector: Callable[[Any, Any], tuple[Any, Any]]) -> None:
        self.selector = selector

    def process(self, record: Record) -> None:
        change: Change = record.value
        old = None if change.old is None else self.selector(record.key, change.old)
        new = None if change.new is None else self.selector(record.key, change.new)
        if old is not None and (old[0] is None or old[1] is None):
            old = None
        if new is not None and (new[0] is None or new[1] is None):
            new = None
        ts, headers = record.timestamp, record.headers
        if old is not None and new is not None and old[0] == new[0]:
            self.forward(Record(new[0], Change(new[1], old[1]), ts, headers))
            return
        if old is not None:
            self.forward(Record(old[0], Change(None, old[1]), ts, headers))
        if new is not None:
            self.forward(Record(new[0], Change(new[1], None), ts, headers))
