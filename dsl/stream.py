"""``KStream``: an unbounded stream of independent records.

Every method adds a node to the topology and returns a new stream (or table, or grouped stream);
nothing runs until the app does. User functions take ``(key, value)`` except the value mappers
(``map_values``, ``flat_map_values``), which take the value.

>>> from sluice.dsl import App
>>> app = App("docs")
>>> words = app.stream("lines").flat_map_values(str.split).filter(lambda k, w: len(w) > 3)
>>> words.to("long-words")
>>> with app.test_driver() as d:
...     d.pipe("lines", "l1", "the quick brown fox")
...     [r.value for r in d.read_output("long-words")]
['quick', 'brown']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from sluice.dsl.builder import Builder
from sluice.dsl.signatures import check_function
from sluice.serde import JSON, STRING, SerdeSpec, serde_from
from sluice.streams.errors import TopologyError
from sluice.streams.operators import stateless as ops
from sluice.streams.operators.aggregate import ToTable
from sluice.streams.operators.joins import StreamGlobalTableJoin, StreamTableJoin
from sluice.streams.operators.windowed_join import StreamStreamJoin, side_serde
from sluice.streams.processor import Processor
from sluice.streams.record import Record
from sluice.streams.windows import JoinWindows

if TYPE_CHECKING:
    from sluice.dsl.grouped import KGroupedStream
    from sluice.dsl.table import GlobalKTable, KTable

__all__ = ["KStream", "Split"]

KeyValueFn = Callable[[Any, Any], Any]


class KStream:
    """A stream of records; see the module docstring."""

    def __init__(
        self,
        builder: Builder,
        node: str,
        key_serde: SerdeSpec,
        value_serde: SerdeSpec,
        *,
        topics: frozenset[str],
        repartition_required: bool = False,
    ) -> None:
        self._builder = builder
        self._node = node
        self.key_serde = serde_from(key_serde)
        self.value_serde = serde_from(value_serde)
        self._topics = topics  # the topics this stream's partitioning comes from
        self._repartition_required = repartition_required

    def _derive(
        self,
        node: str,
        *,
        key_changed: bool = False,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
    ) -> KStream:
        return KStream(
            self._builder,
            node,
            key_serde or self.key_serde,
            value_serde or self.value_serde,
            topics=self._topics,
            repartition_required=self._repartition_required or key_changed,
        )

    def _add(self, prefix: str, supplier: Callable[[], Processor], name: str | None) -> str:
        return self._builder.add(prefix, supplier, self._node, name=name)

    # -- stateless --------------------------------------------------------------------------
    def filter(self, predicate: KeyValueFn, *, name: str | None = None) -> KStream:
        """Keep records for which ``predicate(key, value)`` is true."""
        check_function("KStream.filter", "predicate(key, value)", predicate)
        return self._derive(self._add("KSTREAM-FILTER", lambda: ops.Filter(predicate), name))

    def filter_not(self, predicate: KeyValueFn, *, name: str | None = None) -> KStream:
        """Drop records for which ``predicate(key, value)`` is true."""
        check_function("KStream.filter_not", "predicate(key, value)", predicate)
        node = self._add("KSTREAM-FILTER", lambda: ops.Filter(predicate, negate=True), name)
        return self._derive(node)

    def map(
        self,
        mapper: Callable[[Any, Any], tuple[Any, Any]],
        *,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """New key and value from ``mapper(key, value) -> (key, value)`` (marks for repartition)."""
        check_function("KStream.map", "mapper(key, value)", mapper)
        node = self._add("KSTREAM-MAP", lambda: ops.Map(mapper), name)
        return self._derive(
            node, key_changed=True, key_serde=key_serde or STRING, value_serde=value_serde or JSON
        )

    def map_values(
        self,
        mapper: Callable[[Any], Any],
        *,
        with_key: bool = False,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """New value from ``mapper(value)`` (``mapper(key, value)`` with ``with_key=True``)."""
        call = "mapper(key, value)" if with_key else "mapper(value)"
        check_function("KStream.map_values", call, mapper)
        node = self._add("KSTREAM-MAPVALUES", lambda: ops.MapValues(mapper, with_key), name)
        return self._derive(node, value_serde=value_serde or JSON)

    def flat_map(
        self,
        mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]],
        *,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """Zero or more ``(key, value)`` per record (marks for repartition)."""
        check_function("KStream.flat_map", "mapper(key, value)", mapper)
        node = self._add("KSTREAM-FLATMAP", lambda: ops.FlatMap(mapper), name)
        return self._derive(
            node, key_changed=True, key_serde=key_serde or STRING, value_serde=value_serde or JSON
        )

    def flat_map_values(
        self,
        mapper: Callable[[Any], Iterable[Any]],
        *,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """Zero or more values per record, same key."""
        check_function("KStream.flat_map_values", "mapper(value)", mapper)
        node = self._add("KSTREAM-FLATMAPVALUES", lambda: ops.FlatMapValues(mapper), name)
        return self._derive(node, value_serde=value_serde or JSON)

    def select_key(
        self, selector: KeyValueFn, *, key_serde: SerdeSpec | None = None, name: str | None = None
    ) -> KStream:
        """New key from ``selector(key, value)`` (marks for repartition)."""
        check_function("KStream.select_key", "selector(key, value)", selector)
        node = self._add("KSTREAM-KEY-SELECT", lambda: ops.SelectKey(selector), name)
        return self._derive(node, key_changed=True, key_serde=key_serde or STRING)

    def peek(self, action: KeyValueFn, *, name: str | None = None) -> KStream:
        """Call ``action(key, value)`` for each record, pass it on."""
        check_function("KStream.peek", "action(key, value)", action)
        return self._derive(self._add("KSTREAM-PEEK", lambda: ops.Peek(action), name))

    def foreach(self, action: KeyValueFn, *, name: str | None = None) -> None:
        """Call ``action(key, value)`` for each record (terminal)."""
        check_function("KStream.foreach", "action(key, value)", action)
        self._add("KSTREAM-FOREACH", lambda: ops.Foreach(action), name)

    def split(self, prefix: str = "") -> Split:
        """Named branches: ``split().branch("big", pred).default_branch("rest")``."""
        return Split(self, prefix)

    def merge(self, other: KStream, *, name: str | None = None) -> KStream:
        """One stream with the records of both."""
        node = self._builder.add(
            "KSTREAM-MERGE", ops.Passthrough, self._node, other._node, name=name
        )
        return KStream(
            self._builder,
            node,
            self.key_serde,
            self.value_serde,
            topics=self._topics | other._topics,
            repartition_required=self._repartition_required or other._repartition_required,
        )

    def process(
        self,
        supplier: Callable[[], Processor],
        *,
        stores: Sequence[str] = (),
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """Run a Processor API processor (connected to ``stores``); what it forwards flows on."""
        check_function("KStream.process", "supplier()", supplier)
        node = self._builder.add(
            "KSTREAM-PROCESSOR", supplier, self._node, stores=tuple(stores), name=name
        )
        return self._derive(
            node, key_changed=True, key_serde=key_serde or STRING, value_serde=value_serde or JSON
        )

    # -- sinks ------------------------------------------------------------------------------
    def to(
        self,
        topic: str | Callable[[Record], str],
        *,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> None:
        """Write to ``topic``, or to ``topic(record)`` for each record."""
        if not isinstance(topic, str):
            check_function("KStream.to", "topic(record)", topic)
        self._builder.topology.add_sink(
            self._builder.name("KSTREAM-SINK", name),
            topic,
            self._node,
            key_serde=serde_from(key_serde or self.key_serde),
            value_serde=serde_from(value_serde or self.value_serde),
        )

    def repartition(
        self,
        *,
        partitions: int | None = None,
        name: str | None = None,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
    ) -> KStream:
        """Through an internal topic, partitioned by the current key."""
        stream = self._derive(self._node, key_serde=key_serde, value_serde=value_serde)
        return stream._through_repartition(name, partitions)

    def _through_repartition(self, name: str | None, partitions: int | None = None) -> KStream:
        builder = self._builder
        base = builder.name("KSTREAM-REPARTITION", name)
        topic = builder.repartition_topic(base)
        builder.topology.add_repartition_topic(topic, partitions)
        builder.topology.add_sink(
            f"{base}-sink",
            topic,
            self._node,
            key_serde=self.key_serde,
            value_serde=self.value_serde,
        )
        builder.topology.add_source(
            f"{base}-source", [topic], key_serde=self.key_serde, value_serde=self.value_serde
        )
        return KStream(
            builder,
            f"{base}-source",
            self.key_serde,
            self.value_serde,
            topics=frozenset([topic]),
        )

    def _partitioned(self, name: str | None = None) -> KStream:
        return self._through_repartition(name) if self._repartition_required else self

    def to_table(self, *, name: str | None = None, value_serde: SerdeSpec | None = None) -> KTable:
        """A table of the latest value per key (None values delete)."""
        from sluice.dsl.table import KTable

        stream = self._partitioned()
        builder = self._builder
        value_serde = serde_from(value_serde or stream.value_serde)
        store = builder.kv_store(
            builder.name("KSTREAM-TOTABLE-STATE-STORE", name),
            stream.key_serde,
            value_serde,
        )
        node = builder.add("KSTREAM-TOTABLE", lambda: ToTable(store), stream._node, stores=(store,))
        return KTable(
            builder,
            node,
            stream.key_serde,
            value_serde or stream.value_serde,
            store=store,
            topics=stream._topics,
        )

    # -- grouping ---------------------------------------------------------------------------
    def group_by(
        self,
        selector: KeyValueFn,
        *,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KGroupedStream:
        """Group by ``selector(key, value)`` (through a repartition topic)."""
        check_function("KStream.group_by", "selector(key, value)", selector)
        from sluice.dsl.grouped import KGroupedStream

        keyed = self.select_key(selector, key_serde=key_serde)
        if value_serde is not None:
            keyed.value_serde = serde_from(value_serde)
        return KGroupedStream(keyed, name)

    def group_by_key(
        self,
        *,
        key_serde: SerdeSpec | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KGroupedStream:
        """Group by the current key (repartitions only if an upstream operator changed keys)."""
        from sluice.dsl.grouped import KGroupedStream

        stream = self._derive(self._node, key_serde=key_serde, value_serde=value_serde)
        return KGroupedStream(stream, name)

    # -- joins ------------------------------------------------------------------------------
    def join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows | None = None,
        *,
        key_selector: KeyValueFn | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """Inner join with a stream (needs ``windows``), a table, or a global table
        (needs ``key_selector(key, value)`` giving the table key)."""
        return self._join(other, joiner, windows, key_selector, "inner", value_serde, name)

    def left_join(
        self,
        other: KStream | KTable | GlobalKTable,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows | None = None,
        *,
        key_selector: KeyValueFn | None = None,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """Like :meth:`join`, keeping every left record (``joiner(value, None)`` alone)."""
        return self._join(other, joiner, windows, key_selector, "left", value_serde, name)

    def outer_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        *,
        value_serde: SerdeSpec | None = None,
        name: str | None = None,
    ) -> KStream:
        """Windowed stream–stream join keeping records of both sides without partner."""
        return self._join(other, joiner, windows, None, "outer", value_serde, name)

    def _join(
        self,
        other: Any,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows | None,
        key_selector: KeyValueFn | None,
        kind: str,
        value_serde: SerdeSpec | None,
        name: str | None,
    ) -> KStream:
        from sluice.dsl.table import GlobalKTable, KTable

        operator = "KStream.join" if kind == "inner" else f"KStream.{kind}_join"
        check_function(operator, "joiner(value, other_value)", joiner)
        if key_selector is not None:
            check_function(operator, "key_selector(key, value)", key_selector)
        builder = self._builder
        if isinstance(other, GlobalKTable):
            if key_selector is None:
                raise TopologyError(
                    "a join with a global table needs key_selector=(key, value) -> table key"
                )
            store = other.store
            node = builder.add(
                "KSTREAM-GLOBALTABLE-JOIN",
                lambda: StreamGlobalTableJoin(store, key_selector, joiner, left=kind == "left"),
                self._node,
                stores=(store,),
                name=name,
            )
            return self._derive(node, value_serde=value_serde or JSON)
        if isinstance(other, KTable):
            if kind == "outer":
                raise TopologyError("a stream–table join is inner or left, not outer")
            stream = self._partitioned()
            table = other.materialized()
            builder.topology.require_copartitioned(*stream._topics, *table._topics)
            assert table.store is not None
            table_store: str = table.store
            node = builder.add(
                "KSTREAM-TABLE-JOIN",
                lambda: StreamTableJoin(table_store, joiner, left=kind == "left"),
                stream._node,
                stores=(table_store,),
                name=name,
            )
            return stream._derive(node, value_serde=value_serde or JSON)
        if isinstance(other, KStream):
            if windows is None:
                raise TopologyError("a stream–stream join needs JoinWindows")
            return self._windowed_join(other, joiner, windows, kind, value_serde, name)
        raise TopologyError(f"cannot join a stream with {type(other).__name__}")

    def _windowed_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        kind: str,
        value_serde: SerdeSpec | None,
        name: str | None,
    ) -> KStream:
        builder = self._builder
        left = self._partitioned()
        right = other._partitioned()
        builder.topology.require_copartitioned(*left._topics, *right._topics)
        base = builder.name(f"KSTREAM-{kind.upper()}-JOIN", name)
        retention = windows.retention_ms
        this_store = builder.window_store(
            f"{base}-this-store", left.key_serde, left.value_serde, retention, duplicates=True
        )
        other_store = builder.window_store(
            f"{base}-other-store", right.key_serde, right.value_serde, retention, duplicates=True
        )
        outer_store = None
        if kind != "inner":
            changelog = builder.changelog_topic(f"{base}-outer-store")
            outer_store = builder.window_store(
                f"{base}-outer-store",
                left.key_serde,
                side_serde(
                    builder.topology.bind(left.value_serde, changelog, is_key=False),
                    builder.topology.bind(right.value_serde, changelog, is_key=False),
                ),
                retention,
                duplicates=True,
            )
        stores = tuple(s for s in (this_store, other_store, outer_store) if s is not None)
        left_node = builder.add(
            "KSTREAM-JOINTHIS",
            lambda: StreamStreamJoin(
                this_store, other_store, outer_store, windows, joiner, this_is_left=True, kind=kind
            ),
            left._node,
            stores=stores,
            name=f"{base}-this",
        )
        right_node = builder.add(
            "KSTREAM-JOINOTHER",
            lambda: StreamStreamJoin(
                other_store, this_store, outer_store, windows, joiner, this_is_left=False, kind=kind
            ),
            right._node,
            stores=stores,
            name=f"{base}-other",
        )
        merged = builder.add(
            "KSTREAM-MERGE", ops.Passthrough, left_node, right_node, name=f"{base}-merge"
        )
        return KStream(
            builder,
            merged,
            left.key_serde,
            value_serde or JSON,
            topics=left._topics | right._topics,
        )


class Split:
    """Named branches of a stream; each record goes to the first branch whose predicate holds."""

    def __init__(self, stream: KStream, prefix: str) -> None:
        self._stream = stream
        self._prefix = prefix
        self._branches: list[tuple[str, KeyValueFn | None]] = []

    def branch(self, name: str, predicate: KeyValueFn) -> Split:
        """Add a branch named ``prefix + name``."""
        check_function("Split.branch", "predicate(key, value)", predicate)
        self._branches.append((self._prefix + name, predicate))
        return self

    def default_branch(self, name: str = "default") -> dict[str, KStream]:
        """Add a branch for records no predicate took; returns every branch by name."""
        self._branches.append((self._prefix + name, None))
        return self.branches()

    def branches(self) -> dict[str, KStream]:
        """Every branch by name (records no predicate took are dropped)."""
        builder = self._builder
        stream = self._stream
        routes = list(self._branches)
        children = [(builder.name("KSTREAM-BRANCHCHILD"), predicate) for _, predicate in routes]
        branch_node = builder.add("KSTREAM-BRANCH", lambda: ops.Branch(children), stream._node)
        result = {}
        for (branch, _), (child, _) in zip(routes, children, strict=True):
            builder.topology.add_processor(child, ops.Passthrough, branch_node)
            result[branch] = stream._derive(child)
        return result

    @property
    def _builder(self) -> Builder:
        return self._stream._builder
