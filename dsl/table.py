"""``KTable`` and ``GlobalKTable``: the latest value per key, as updates flowing downstream.

>>> from sluice.dsl import App
>>> app = App("docs")
>>> users = app.table("users", name="users")
>>> users.filter(lambda k, u: u["active"]).to_stream().to("active-users")
>>> with app.test_driver() as d:
...     d.pipe("users", "u1", {"active": True}); d.pipe("users", "u1", {"active": False})
...     [r.value for r in d.read_output("active-users")], d.store("users").get("u1")
([{'active': True}, None], {'active': False})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sluice.dsl.builder import Builder
from sluice.dsl.signatures import check_function
from sluice.serde import JSON, Serde, SerdeSpec, serde_from
from sluice.streams.errors import TopologyError
from sluice.streams.operators.fk_join import (
    FkResolve,
    FkRightUpdate,
    FkSubscribe,
    FkSubscriptions,
    response_serde,
    subscription_serde,
)
from sluice.streams.operators.joins import TableTableJoin
from sluice.streams.operators.serdes import windowed_binary
from sluice.streams.operators.stateless import Passthrough
from sluice.streams.operators.suppress import BufferConfig, Suppress, buffered
from sluice.streams.operators.table import (
    TableFilter,
    TableMapValues,
    TableMaterialize,
    TableRegroup,
    TableToStream,
)
from sluice.streams.windows import Duration, duration_ms

if TYPE_CHECKING:
    from sluice.dsl.grouped import KGroupedTable
    from sluice.dsl.stream import KStream

__all__ = ["GlobalKTable", "KTable"]


class KTable:
    """A changelog read as a table; see the module docstring."""

    def __init__(
        self,
        builder: Builder,
        node: str,
        key_serde: SerdeSpec,
        value_serde: SerdeSpec,
        *,
        store: str | None,
        topics: frozenset[str],
        window_grace_ms: int | None = None,
        inner_key_serde: Serde | None = None,
    ) -> None:
        self._builder = builder
        self._node = node
        self.key_serde = serde_from(key_serde)
        self.value_serde = serde_from(value_serde)
        self.store = store
        self._topics = topics
        # set for windowed aggregation results: how long after a window's end it may change
        self._window_grace_ms = window_grace_ms
        self._inner_key_serde = inner_key_serde

    @property
    def name(self) -> str | None:
        """The store holding this table (None if it is not materialized)."""
        return self.store

    def _derive(
        self, node: str, *, store: str | None = None, value_serde: SerdeSpec | None = None
    ) -> KTable:
        return KTable(
            self._builder,
            node,
            self.key_serde,
            value_serde or self.value_serde,
            store=store,
            topics=self._topics,
            window_grace_ms=self._window_grace_ms,
            inner_key_serde=self._inner_key_serde,
        )

    def materialized(self, name: str | None = None) -> KTable:
        """This table with a store (adds one if it has none)."""
        if self.store is not None and name is None:
            return self
        if self._window_grace_ms is not None:
            raise TopologyError("a windowed table cannot be materialized again; query its store")
        builder = self._builder
        store = builder.kv_store(
            builder.name("KTABLE-STATE-STORE", name), self.key_serde, self.value_serde
        )
        node = builder.add(
            "KTABLE-MATERIALIZE", lambda: TableMaterialize(store), self._node, stores=(store,)
        )
        return self._derive(node, store=store)

    def filter(self, predicate: Callable[[Any, Any], Any], *, name: str | None = None) -> KTable:
        """Rows for which ``predicate(key, value)`` holds (rows that stop matching are deleted)."""
        check_function("KTable.filter", "predicate(key, value)", predicate)
        node = self._builder.add("KTABLE-FILTER", lambda: TableFilter(predicate), self._node)
        table = self._derive(node)
        return table.materialized(name) if name else table

    def filter_not(
        self, predicate: Callable[[Any, Any], Any], *, name: str | None = None
    ) -> KTable:
        """Rows for which ``predicate(key, value)`` does not hold."""
        check_function("KTable.filter_not", "predicate(key, value)", predicate)
        node = self._builder.add(
            "KTABLE-FILTER", lambda: TableFilter(predicate, negate=True), self._node
        )
        table = self._derive(node)
        return table.materialized(name) if name else table

    def map_values(
        self,
        mapper: Callable[[Any], Any],
        *,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KTable:
        """Rows with values ``mapper(value)``."""
        check_function("KTable.map_values", "mapper(value)", mapper)
        node = self._builder.add("KTABLE-MAPVALUES", lambda: TableMapValues(mapper), self._node)
        table = self._derive(node, value_serde=value_serde or JSON)
        return table.materialized(name) if name else table

    def to_stream(self) -> KStream:
        """Every update as a stream record (deletions as None values)."""
        from sluice.dsl.stream import KStream

        node = self._builder.add("KTABLE-TOSTREAM", TableToStream, self._node)
        return KStream(self._builder, node, self.key_serde, self.value_serde, topics=self._topics)

    def suppress_until_window_closes(
        self, *, buffer: BufferConfig | None = None, name: str | None = None
    ) -> KTable:
        """Only the final result of each window, once it has closed: stream time at its end +
        grace for time windows, past its end + grace for sliding windows, past its end + gap +
        grace for sessions (Kafka's ``suppress(Suppressed.untilWindowCloses(buffer))``).

        ``buffer`` is :meth:`BufferConfig.unbounded` (the default) or a bounded buffer that
        shuts down when full (``BufferConfig.max_records(n).shut_down_when_full()``): final
        results never come early, so ``emit_early_when_full`` is refused."""
        if self._window_grace_ms is None or self._inner_key_serde is None:
            raise TopologyError("suppress_until_window_closes needs a windowed aggregation result")
        buffer = BufferConfig.unbounded() if buffer is None else buffer
        if not buffer.strict:
            raise TopologyError(
                "suppress_until_window_closes needs a strict buffer: BufferConfig.unbounded(), "
                "or a bounded one with shut_down_when_full() (final results never come early)"
            )
        builder = self._builder
        store = builder.kv_store(
            builder.name("KTABLE-SUPPRESS-STATE-STORE", name),
            windowed_binary(self._inner_key_serde),
            self.value_serde,
        )
        grace = self._window_grace_ms
        node = builder.add(
            "KTABLE-SUPPRESS",
            lambda: Suppress(store, grace, buffer=buffer),
            self._node,
            stores=(store,),
        )
        return self._derive(node)

    def suppress_until_time_limit(
        self,
        time_limit: Duration,
        *,
        buffer: BufferConfig | None = None,
        name: str | None = None,
    ) -> KTable:
        """Rate-limit updates (Kafka's ``suppress(Suppressed.untilTimeLimit(limit, buffer))``):
        a key's updates wait until stream time is ``time_limit`` (ms, or ``"30s"``-style) past
        the first of them, then its latest goes on as one ``Change(latest, value seen before)``.

        ``buffer`` bounds the wait (:class:`BufferConfig`): ``BufferConfig.max_records(n)`` or
        ``max_bytes(n)`` emit the oldest keys early when full, ``.shut_down_when_full()`` stops
        the application instead; unbounded by default."""
        wait = duration_ms(time_limit)
        if wait < 0:
            raise TopologyError(f"a suppression time limit cannot be negative, got {time_limit!r}")
        buffer = BufferConfig.unbounded() if buffer is None else buffer
        builder = self._builder
        key_serde = (
            self.key_serde
            if self._inner_key_serde is None
            else windowed_binary(self._inner_key_serde)
        )
        store = builder.kv_store(
            builder.name("KTABLE-SUPPRESS-STATE-STORE", name), key_serde, buffered(self.value_serde)
        )
        node = builder.add(
            "KTABLE-SUPPRESS",
            lambda: Suppress(store, time_limit_ms=wait, buffer=buffer),
            self._node,
            stores=(store,),
        )
        return self._derive(node)

    def group_by(
        self,
        selector: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KGroupedTable:
        """Re-group rows by ``selector(key, value) -> (new key, new value)``."""
        check_function("KTable.group_by", "selector(key, value)", selector)
        from sluice.dsl.grouped import KGroupedTable

        node = self._builder.add("KTABLE-SELECT", lambda: TableRegroup(selector), self._node)
        return KGroupedTable(
            self._builder, node, key_serde or self.key_serde, value_serde or self.value_serde, name
        )

    # -- joins ------------------------------------------------------------------------------
    def join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KTable:
        """Inner join on the key, or with ``foreign_key(value)`` naming the other table's key."""
        return self._join(other, joiner, "inner", foreign_key, value_serde, name)

    def left_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        *,
        foreign_key: Callable[[Any], Any] | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KTable:
        """Left join: every row of this table, ``joiner(value, None)`` without partner."""
        return self._join(other, joiner, "left", foreign_key, value_serde, name)

    def outer_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        *,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KTable:
        """Outer join on the key: rows of either table."""
        return self._join(other, joiner, "outer", None, value_serde, name)

    def _join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        kind: str,
        foreign_key: Callable[[Any], Any] | None,
        value_serde: SerdeSpec | None,
        name: str | None,
    ) -> KTable:
        operator = "KTable.join" if kind == "inner" else f"KTable.{kind}_join"
        check_function(operator, "joiner(value, other_value)", joiner)
        if foreign_key is not None:
            check_function(operator, "foreign_key(value)", foreign_key)
            if kind == "outer":
                raise TopologyError("a foreign-key join is inner or left")
            return self._fk_join(other, joiner, foreign_key, kind == "left", value_serde, name)
        builder = self._builder
        left = self.materialized()
        right = other.materialized()
        builder.topology.require_copartitioned(*left._topics, *right._topics)
        assert left.store is not None and right.store is not None
        left_store, right_store = left.store, right.store
        this = builder.add(
            "KTABLE-JOINTHIS",
            lambda: TableTableJoin(right_store, joiner, kind, this_is_left=True),
            left._node,
            stores=(right_store,),
        )
        that = builder.add(
            "KTABLE-JOINOTHER",
            lambda: TableTableJoin(left_store, joiner, kind, this_is_left=False),
            right._node,
            stores=(left_store,),
        )
        merged = builder.add("KTABLE-MERGE", Passthrough, this, that)
        result = KTable(
            builder,
            merged,
            left.key_serde,
            value_serde or JSON,
            store=None,
            topics=left._topics | right._topics,
        )
        return result.materialized(name) if name else result

    def _fk_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        foreign_key: Callable[[Any], Any],
        left_join: bool,
        value_serde: SerdeSpec | None,
        name: str | None,
    ) -> KTable:
        builder = self._builder
        left = self.materialized()
        right = other.materialized()
        assert left.store is not None and right.store is not None
        left_store, right_store = left.store, right.store
        base = builder.name("KTABLE-FK-JOIN", name)
        topology = builder.topology
        pk_serde, fk_serde = left.key_serde, right.key_serde
        left_values = left.value_serde
        # 1. left side: subscriptions, by foreign key
        sub_topic = f"{builder.application_id}-{base}-subscription-registration-topic"
        topology.add_repartition_topic(sub_topic)
        topology.require_copartitioned(sub_topic, *right._topics)
        subscribe = builder.add(
            "KTABLE-FK-JOIN-SUBSCRIBE",
            lambda: FkSubscribe(foreign_key, left_values, left_join),
            left._node,
        )
        topology.add_sink(
            f"{base}-subscription-sink",
            sub_topic,
            subscribe,
            key_serde=fk_serde,
            value_serde=subscription_serde(pk_serde),
        )
        topology.add_source(
            f"{base}-subscription-source",
            [sub_topic],
            key_serde=fk_serde,
            value_serde=subscription_serde(pk_serde),
        )
        # 2. right side: the subscription store, answering subscriptions and right updates
        subscriptions = builder.kv_store(f"{base}-subscription-store", fk_serde, JSON)
        stores = (subscriptions, right_store)
        answer = builder.add(
            "KTABLE-FK-JOIN-SUBSCRIPTIONS",
            lambda: FkSubscriptions(subscriptions, right_store, pk_serde),
            f"{base}-subscription-source",
            stores=stores,
        )
        update = builder.add(
            "KTABLE-FK-JOIN-RIGHT-UPDATE",
            lambda: FkRightUpdate(subscriptions, right_store, pk_serde),
            right._node,
            stores=stores,
        )
        response_topic = f"{builder.application_id}-{base}-subscription-response-topic"
        topology.add_repartition_topic(response_topic)
        topology.require_copartitioned(response_topic, *left._topics)
        responses = response_serde(right.value_serde)
        topology.add_sink(
            f"{base}-response-sink",
            response_topic,
            answer,
            update,
            key_serde=pk_serde,
            value_serde=responses,
        )
        topology.add_source(
            f"{base}-response-source", [response_topic], key_serde=pk_serde, value_serde=responses
        )
        # 3. left side: resolve answers against the current left row
        resolve = builder.add(
            "KTABLE-FK-JOIN-RESOLVE",
            lambda: FkResolve(left_store, left_values, joiner, left_join),
            f"{base}-response-source",
            stores=(left_store,),
        )
        result = KTable(
            builder, resolve, pk_serde, value_serde or JSON, store=None, topics=left._topics
        )
        # Always materialized (as Kafka does): the store gives downstream operators the old
        # value of each row and drops deletions of rows that never joined.
        return result.materialized(name)


class GlobalKTable:
    """A table every instance holds in full; joined from streams with a key selector."""

    def __init__(self, store: str, key_serde: Serde, value_serde: Serde) -> None:
        self.store = store
        self.key_serde = key_serde
        self.value_serde = value_serde
