"""Aggregations of grouped streams and grouped tables into key-value stores.

Each emits table updates, ``Record(key, Change(new, old))``, with the largest timestamp that went
into the aggregate (Kafka's rule). Records with a None key or value are skipped, as in Kafka.
With ``caching`` (the default) and a task that caches (``statestore.cache.max.bytes`` > 0), the
updates go through a record cache (:mod:`sluice.streams.state.cache`): each key's latest update
goes downstream at commit, or when the cache evicts.

>>> from sluice.serde import STRING, INT64
>>> from sluice.streams.record import Change, Record
>>> from sluice.streams.state.keyvalue import KeyValueStore
>>> agg = StreamAggregate("counts", lambda: 0, lambda k, v, total: total + 1)
>>> agg.store = KeyValueStore(STRING, INT64); out = []; agg.forward = out.append
>>> agg.process(Record("a", "x", 5)); agg.process(Record("a", "y", 3))
>>> [(r.key, r.value, r.timestamp) for r in out]
[('a', Change(new=1, old=None), 5), ('a', Change(new=2, old=1), 5)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sluice.streams.operators.base import Emit, FusedOperator, Operator, StoreOperator
from sluice.streams.processor import ProcessorContext
from sluice.streams.record import Change, Headers, Record
from sluice.streams.state.cache import RecordCache, serialized_size

__all__ = ["CachedStoreOperator", "StreamAggregate", "TableAggregate", "TableSource", "ToTable"]

Initializer = Callable[[], Any]
Aggregator = Callable[[Any, Any, Any], Any]


class CachedStoreOperator(StoreOperator):
    """A store operator whose updates may go through a record cache (``cache``, set by
    :meth:`init` when ``caching`` and the task caches)."""

    caching = True
    cache: RecordCache | None = None

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        if self.caching:
            store = self.store
            self.cache = context.record_cache(
                self.store_name,
                serialized_size(store.key_serde),
                serialized_size(store.value_serde),
            )
        if self.cache is not None and not isinstance(self, FusedOperator):
            self.forward = self.cache.wrap_records(self.forward)


class StreamAggregate(FusedOperator, CachedStoreOperator):
    """``aggregator(key, value, aggregate) -> aggregate``, starting from ``initializer()``."""

    def __init__(
        self,
        store_name: str,
        initializer: Initializer,
        aggregator: Aggregator,
        *,
        caching: bool = True,
    ) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.aggregator = aggregator
        self.caching = caching

    def fuse(self, downstream: Emit) -> Emit:
        if self.cache is not None:
            downstream = self.cache.wrap(downstream)
        get, put = self.store.accessors()  # the backend's get, the store's put: no frame between
        initializer, aggregator = self.initializer, self.aggregator
        # tuple.__new__(Change, …) is Change(…) without the named tuple's Python-level __new__:
        # half the cost, once per record
        new_tuple = tuple.__new__

        def aggregate(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            if key is None or value is None:
                return
            entry = get(key)
            if entry is None:
                old = None
                current = initializer()
            else:
                old = current = entry[0]
                if entry[1] > timestamp:  # noqa: PLR1730 - faster than max() per record
                    timestamp = entry[1]
            new = aggregator(key, value, current)
            put(key, new, timestamp)
            downstream(key, new_tuple(Change, (new, old)), timestamp, headers)

        return aggregate


class TableAggregate(CachedStoreOperator):
    """Aggregates of a re-grouped table: ``subtractor`` takes the old value out, ``adder`` adds."""

    def __init__(
        self,
        store_name: str,
        initializer: Initializer,
        adder: Aggregator,
        subtractor: Aggregator,
        *,
        caching: bool = True,
    ) -> None:
        self.store_name = store_name
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor
        self.caching = caching

    def process(self, record: Record) -> None:
        key = record.key
        change: Change = record.value
        if key is None:
            return
        entry = self.store.get_with_timestamp(key)
        old = None if entry is None else entry[0]
        current = self.initializer() if old is None else old
        timestamp = record.timestamp if entry is None else max(entry[1], record.timestamp)
        if change.old is not None and old is not None:  # Kafka: nothing to subtract from
            current = self.subtractor(key, change.old, current)
        if change.new is not None:
            current = self.adder(key, change.new, current)
        self.store.put(key, current, timestamp)
        self.forward(Record(key, Change(current, old), timestamp, record.headers))


class TableSource(CachedStoreOperator):
    """Materializes a changelog topic: puts each record in the store, forwards the change.

    With ``store_name`` None the table is not materialized and the old value is unknown (None).
    """

    def __init__(self, store_name: str | None, *, caching: bool = True) -> None:
        self.store_name = store_name or ""
        self.materialized = store_name is not None
        self.caching = caching

    def init(self, context: ProcessorContext) -> None:
        if self.materialized:
            super().init(context)
        else:
            Operator.init(self, context)

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            return
        old = None
        if self.materialized:
            old = self.store.get(key)
            self.store.put(key, record.value, record.timestamp)
            if old is None and record.value is None:
                return  # deleting a key that is not there changes nothing
        self.forward(Record(key, Change(record.value, old), record.timestamp, record.headers))


ToTable = TableSource
"""``KStream.to_table``: the same operator as a source table."""
