"""Grouped streams and tables, and windowed streams: where aggregations are declared.

>>> from sluice.dsl import App, TimeWindows
>>> app = App("docs")
>>> counts = app.stream("clicks").group_by_key().windowed_by(TimeWindows.of("1m")).count()
>>> counts.to_stream().to("clicks-per-minute")
>>> with app.test_driver() as d:
...     d.pipe("clicks", "u1", {}, timestamp=1_000); d.pipe("clicks", "u1", {}, timestamp=2_000)
...     [(r.key, r.value) for r in d.read_output("clicks-per-minute")]
[(Windowed(key='u1', start=0, end=60000), 1), (Windowed(key='u1', start=0, end=60000), 2)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sluice.dsl.builder import Builder
from sluice.dsl.signatures import check_function
from sluice.dsl.table import KTable
from sluice.serde import JSON, Serde, SerdeSpec, serde_from
from sluice.streams.errors import TopologyError
from sluice.streams.operators.aggregate import StreamAggregate, TableAggregate
from sluice.streams.operators.serdes import change, windowed_json
from sluice.streams.operators.windowed import SessionAggregate, SlidingAggregate, WindowedAggregate
from sluice.streams.windowed_serdes import WindowedKeyFormat, session_windowed, time_windowed
from sluice.streams.windows import (
    Duration,
    SessionWindows,
    SlidingWindows,
    TimeWindows,
    duration_ms,
)

if TYPE_CHECKING:
    from sluice.dsl.stream import KStream

__all__ = ["KGroupedStream", "KGroupedTable", "WindowedKStream"]

Windows = TimeWindows | SlidingWindows | SessionWindows


def _count(key: Any, value: Any, total: int) -> int:
    return total + 1


def _zero() -> int:
    return 0


def _reducing(reducer: Callable[[Any, Any], Any]) -> Callable[[Any, Any, Any], Any]:
    def aggregate(key: Any, value: Any, current: Any) -> Any:
        return value if current is None else reducer(current, value)

    return aggregate


def _none() -> None:
    return None


class KGroupedStream:
    """A stream grouped by key, ready to aggregate."""

    def __init__(self, stream: KStream, name: str | None) -> None:
        self._stream = stream._partitioned(name)
        self._builder: Builder = stream._builder

    def count(self, *, name: str | None = None, caching: bool = True) -> KTable:
        """Records per key."""
        return self.aggregate(_zero, _count, name=name, value_serde=JSON, caching=caching)

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *,
        name: str | None = None,
        caching: bool = True,
    ) -> KTable:
        """``reducer(aggregate, value)`` per key, starting from the first value."""
        check_function("KGroupedStream.reduce", "reducer(aggregate, value)", reducer)
        return self.aggregate(
            _none,
            _reducing(reducer),
            name=name,
            value_serde=self._stream.value_serde,
            caching=caching,
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        name: str | None = None,
        value_serde: SerdeSpec = JSON,
        caching: bool = True,
    ) -> KTable:
        """``aggregator(key, value, aggregate)`` per key, starting from ``initializer()``.

        With ``caching`` (the default; Kafka's ``Materialized.withCachingEnabled``) the updates
        of a key between two commits go downstream as one (``statestore_cache_max_bytes``);
        ``caching=False`` forwards every update (``withCachingDisabled``)."""
        check_function("KGroupedStream.aggregate", "initializer()", initializer)
        check_function("KGroupedStream.aggregate", "aggregator(key, value, aggregate)", aggregator)
        value_serde = serde_from(value_serde)
        builder = self._builder
        stream = self._stream
        store = builder.kv_store(
            builder.name("KSTREAM-AGGREGATE-STATE-STORE", name), stream.key_serde, value_serde
        )
        node = builder.add(
            "KSTREAM-AGGREGATE",
            lambda: StreamAggregate(store, initializer, aggregator, caching=caching),
            stream._node,
            stores=(store,),
        )
        return KTable(
            builder, node, stream.key_serde, value_serde, store=store, topics=stream._topics
        )

    def windowed_by(
        self, windows: Windows, *, windowed_key_format: WindowedKeyFormat = "json"
    ) -> WindowedKStream:
        """Aggregate per window: ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``.

        ``windowed_key_format`` is how the results' keys are written to topics: ``"json"``
        (``{"key": …, "window": {"start": …, "end": …}}``) or ``"kafka"``, the bytes of Kafka's
        ``TimeWindowedSerde`` / ``SessionWindowedSerde`` (:mod:`sluice.streams.windowed_serdes`),
        which a Java Kafka Streams application reads."""
        if windowed_key_format not in ("json", "kafka"):
            raise TopologyError(
                f"windowed_key_format must be 'json' or 'kafka', got {windowed_key_format!r}"
            )
        return WindowedKStream(self._stream, windows, windowed_key_format)


class WindowedKStream:
    """A grouped stream with windows; its aggregates are keyed by ``Windowed``."""

    def __init__(
        self, stream: KStream, windows: Windows, key_format: WindowedKeyFormat = "json"
    ) -> None:
        self._stream = stream
        self._builder: Builder = stream._builder
        self.windows = windows
        self.key_format = key_format

    def _key_serde(self) -> Serde:
        """How the results' keys are written to topics."""
        inner = self._stream.key_serde
        windows = self.windows
        if self.key_format == "json":
            return windowed_json(inner)
        if isinstance(windows, SessionWindows):
            return session_windowed(inner)
        return time_windowed(inner, windows.size_ms)

    def _retention_ms(self, store: str, retention: Duration | None) -> int:
        """The store's retention: at least what the windows need (Kafka refuses less)."""
        needed = self.windows.retention_ms
        if retention is None:
            return needed
        given = duration_ms(retention)
        if given < needed:
            what = "gap" if isinstance(self.windows, SessionWindows) else "size"
            raise TopologyError(
                f"the retention of window store {store!r} must be no smaller than its window "
                f"{what} plus the grace period: at least {needed} ms, got {given} ms"
            )
        return given

    def count(
        self,
        *,
        name: str | None = None,
        caching: bool = True,
        retention: Duration | None = None,
    ) -> KTable:
        """Records per key and window."""
        return self.aggregate(
            _zero,
            _count,
            merger=lambda k, a, b: a + b,
            name=name,
            caching=caching,
            retention=retention,
        )

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        *,
        name: str | None = None,
        caching: bool = True,
        retention: Duration | None = None,
    ) -> KTable:
        """``reducer(aggregate, value)`` per key and window."""
        check_function("WindowedKStream.reduce", "reducer(aggregate, value)", reducer)
        return self.aggregate(
            _none,
            _reducing(reducer),
            merger=lambda k, a, b: b if a is None else reducer(a, b),
            name=name,
            value_serde=self._stream.value_serde,
            caching=caching,
            retention=retention,
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        *,
        merger: Callable[[Any, Any, Any], Any] | None = None,
        name: str | None = None,
        value_serde: SerdeSpec = JSON,
        caching: bool = True,
        retention: Duration | None = None,
    ) -> KTable:
        """``aggregator(key, value, aggregate)`` per key and window; session windows also need
        ``merger(key, aggregate_a, aggregate_b)`` to combine sessions a record bridges.
        ``caching`` as for :meth:`KGroupedStream.aggregate` (time and session windows; sliding
        window results are forwarded at once). ``retention`` keeps windows in the store longer
        than their size plus grace (Kafka's ``Materialized.withRetention``), for queries."""
        check_function("WindowedKStream.aggregate", "initializer()", initializer)
        check_function("WindowedKStream.aggregate", "aggregator(key, value, aggregate)", aggregator)
        if merger is not None:
            check_function(
                "WindowedKStream.aggregate", "merger(key, aggregate_a, aggregate_b)", merger
            )
        value_serde = serde_from(value_serde)
        builder = self._builder
        stream = self._stream
        windows = self.windows
        store_name = builder.name("KSTREAM-AGGREGATE-STATE-STORE", name)
        retention_ms = self._retention_ms(store_name, retention)
        if isinstance(windows, TimeWindows):
            store = builder.window_store(store_name, stream.key_serde, value_serde, retention_ms)
            supplier: Callable[[], Any] = lambda: WindowedAggregate(  # noqa: E731
                store, windows, initializer, aggregator, caching=caching
            )
        elif isinstance(windows, SlidingWindows):
            store = builder.window_store(
                store_name,
                stream.key_serde,
                stream.value_serde,
                retention_ms,
                duplicates=True,
            )
            supplier = lambda: SlidingAggregate(store, windows, initializer, aggregator)  # noqa: E731
        else:
            if merger is None:
                raise TypeError(
                    "session window aggregation needs merger=(key, agg_a, agg_b) -> agg"
                )
            merge = merger
            store = builder.session_store(store_name, stream.key_serde, value_serde, retention_ms)
            supplier = lambda: SessionAggregate(  # noqa: E731
                store, windows, initializer, aggregator, merge, caching=caching
            )
        node = builder.add("KSTREAM-WINDOWED-AGGREGATE", supplier, stream._node, stores=(store,))
        # How long after a window's end its result may still change (what suppression waits):
        # time windows end before their end bound; sliding windows include theirs; a session
        # still merges with a record up to ``gap`` after its (inclusive) end.
        if isinstance(windows, SessionWindows):
            close_delay = windows.gap_ms + windows.grace_ms + 1
        elif isinstance(windows, SlidingWindows):
            close_delay = windows.grace_ms + 1
        else:
            close_delay = windows.grace_ms
        return KTable(
            builder,
            node,
            self._key_serde(),
            value_serde,
            store=store,
            topics=stream._topics,
            window_grace_ms=close_delay,
            inner_key_serde=stream.key_serde,
        )


class KGroupedTable:
    """A table re-grouped by a new key: aggregations add new rows and subtract old ones."""

    def __init__(
        self,
        builder: Builder,
        node: str,
        key_serde: SerdeSpec,
        value_serde: SerdeSpec,
        name: str | None,
    ) -> None:
        key_serde, value_serde = serde_from(key_serde), serde_from(value_serde)
        self._builder = builder
        base = builder.name("KTABLE-REPARTITION", name)
        topic = builder.repartition_topic(base)
        builder.topology.add_repartition_topic(topic)
        changes = change(value_serde)
        builder.topology.add_sink(
            f"{base}-sink", topic, node, key_serde=key_serde, value_serde=changes
        )
        builder.topology.add_source(
            f"{base}-source", [topic], key_serde=key_serde, value_serde=changes
        )
        self._node = f"{base}-source"
        self._topics = frozenset([topic])
        self.key_serde = key_serde
        self.value_serde = value_serde

    def count(self, *, name: str | None = None, caching: bool = True) -> KTable:
        """Rows per group."""
        return self.aggregate(
            _zero, _count, lambda k, v, total: total - 1, name=name, caching=caching
        )

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        *,
        name: str | None = None,
        caching: bool = True,
    ) -> KTable:
        """``adder(aggregate, value)`` for new rows, ``subtractor(aggregate, value)`` for old."""
        check_function("KGroupedTable.reduce", "adder(aggregate, value)", adder)
        check_function("KGroupedTable.reduce", "subtractor(aggregate, value)", subtractor)
        return self.aggregate(
            _none,
            lambda k, v, agg: v if agg is None else adder(agg, v),
            lambda k, v, agg: subtractor(agg, v),
            name=name,
            value_serde=self.value_serde,
            caching=caching,
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        *,
        name: str | None = None,
        value_serde: SerdeSpec = JSON,
        caching: bool = True,
    ) -> KTable:
        """``adder(key, value, aggregate)`` / ``subtractor(key, value, aggregate)`` per group;
        ``caching`` as for :meth:`KGroupedStream.aggregate`."""
        check_function("KGroupedTable.aggregate", "initializer()", initializer)
        check_function("KGroupedTable.aggregate", "adder(key, value, aggregate)", adder)
        check_function("KGroupedTable.aggregate", "subtractor(key, value, aggregate)", subtractor)
        value_serde = serde_from(value_serde)
        builder = self._builder
        store = builder.kv_store(
            builder.name("KTABLE-AGGREGATE-STATE-STORE", name), self.key_serde, value_serde
        )
        node = builder.add(
            "KTABLE-AGGREGATE",
            lambda: TableAggregate(store, initializer, adder, subtractor, caching=caching),
            self._node,
            stores=(store,),
        )
        return KTable(builder, node, self.key_serde, value_serde, store=store, topics=self._topics)
