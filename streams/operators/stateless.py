"""Stateless stream operators: filter, map, flat map, select key, peek, foreach, branch, merge.

User functions take ``(key, value)`` except the ``*_values`` mappers, which take the value.

Each operator also has ``fuse(downstream)``: the same operator as a plain function of the record's
fields, ``(key, value, timestamp, headers)``, that calls ``downstream`` with the fields of what it
would forward. A task chains these from its sources to its sinks, so that a record passing a run of
stateless operators costs a few function calls and no intermediate :class:`Record` (a processor
that has no ``fuse`` gets a new ``Record`` of the fields). ``fuse`` is used only when the class
itself defines it: a subclass that overrides ``process`` alone is called through ``process``.

>>> from sluice.streams.record import Record
>>> seen = []
>>> class Collect:
...     def process(self, record): seen.append((record.key, record.value))
>>> op = FlatMapValues(lambda v: v.split())
>>> op.forward = Collect().process
>>> op.process(Record("k", "a b", 0)); seen
[('k', 'a'), ('k', 'b')]
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import Any

from sluice.streams.processor import Processor, ProcessorContext
from sluice.streams.record import Headers, Record

__all__ = [
    "Branch",
    "Filter",
    "FlatMap",
    "FlatMapValues",
    "Foreach",
    "Map",
    "MapValues",
    "Passthrough",
    "Peek",
    "SelectKey",
]

KeyValueFn = Callable[[Any, Any], Any]
Emit = Callable[[Any, Any, int, Headers], None]
"""A record given by its fields: ``emit(key, value, timestamp, headers)``."""


class _Operator(Processor):
    """A processor that forwards to all children through one fast callable."""

    forward: Callable[[Record], None]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.forward = context.forwarder()


class _FusedOperator(_Operator):
    """An operator written once, as :meth:`fuse`; :meth:`process` runs the fused function
    (made on first use, when the store and context are in place) with a forward of Records."""

    _fused: Emit | None = None

    @abstractmethod
    def fuse(self, downstream: Emit) -> Emit:
        """The operator as a function of a record's fields that calls ``downstream``."""

    def process(self, record: Record) -> None:
        fused = self._fused
        if fused is None:
            fused = self._fused = self.fuse(self._forward_fields)
        fused(record.key, record.value, record.timestamp, record.headers)

    def _forward_fields(self, key: Any, value: Any, timestamp: int, headers: Headers) -> None:
        self.forward(Record(key, value, timestamp, headers))


class Filter(_Operator):
    """Keep records for which ``predicate(key, value)`` is true (false with ``negate``)."""

    def __init__(self, predicate: KeyValueFn, negate: bool = False) -> None:
        self.predicate = predicate
        self.negate = negate

    def process(self, record: Record) -> None:
        if bool(self.predicate(record.key, record.value)) is not self.negate:
            self.forward(record)

    def fuse(self, downstream: Emit) -> Emit:
        predicate = self.predicate
        if self.negate:

            def filter_not(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
                if not predicate(key, value):
                    downstream(key, value, timestamp, headers)

            return filter_not

        def filter_(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            if predicate(key, value):
                downstream(key, value, timestamp, headers)

        return filter_


class Map(_Operator):
    """Replace key and value with ``mapper(key, value) -> (key, value)``."""

    def __init__(self, mapper: KeyValueFn) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        key, value = self.mapper(record.key, record.value)
        self.forward(Record(key, value, record.timestamp, record.headers))

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper

        def map_(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            key, value = mapper(key, value)
            downstream(key, value, timestamp, headers)

        return map_


class MapValues(_Operator):
    """Replace the value with ``mapper(value)`` (``mapper(key, value)`` with ``with_key``)."""

    def __init__(self, mapper: Callable[..., Any], with_key: bool = False) -> None:
        self.mapper = mapper
        self.with_key = with_key

    def process(self, record: Record) -> None:
        if self.with_key:
            value = self.mapper(record.key, record.value)
        else:
            value = self.mapper(record.value)
        self.forward(Record(record.key, value, record.timestamp, record.headers))

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper
        if self.with_key:

            def map_values_with_key(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
                downstream(key, mapper(key, value), timestamp, headers)

            return map_values_with_key

        def map_values(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            downstream(key, mapper(value), timestamp, headers)

        return map_values


class FlatMap(_Operator):
    """Zero or more records from ``mapper(key, value) -> iterable of (key, value)``."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        forward = self.forward
        for key, value in self.mapper(record.key, record.value):
            forward(Record(key, value, record.timestamp, record.headers))

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper

        def flat_map(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            for new_key, new_value in mapper(key, value):
                downstream(new_key, new_value, timestamp, headers)

        return flat_map


class FlatMapValues(_Operator):
    """Zero or more records, same key, from ``mapper(value) -> iterable of values``."""

    def __init__(self, mapper: Callable[[Any], Iterable[Any]]) -> None:
        self.mapper = mapper

    def process(self, record: Record) -> None:
        forward = self.forward
        for value in self.mapper(record.value):
            forward(Record(record.key, value, record.timestamp, record.headers))

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper

        def flat_map_values(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            for new_value in mapper(value):
                downstream(key, new_value, timestamp, headers)

        return flat_map_values


class SelectKey(_Operator):
    """Replace the key with ``selector(key, value)``."""

    def __init__(self, selector: KeyValueFn) -> None:
        self.selector = selector

    def process(self, record: Record) -> None:
        key = self.selector(record.key, record.value)
        self.forward(Record(key, record.value, record.timestamp, record.headers))

    def fuse(self, downstream: Emit) -> Emit:
        selector = self.selector

        def select_key(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            downstream(selector(key, value), value, timestamp, headers)

        return select_key


class Peek(_Operator):
    """Call ``action(key, value)`` and pass the record on unchanged."""

    def __init__(self, action: KeyValueFn) -> None:
        self.action = action

    def process(self, record: Record) -> None:
        self.action(record.key, record.value)
        self.forward(record)

    def fuse(self, downstream: Emit) -> Emit:
        action = self.action

        def peek(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            action(key, value)
            downstream(key, value, timestamp, headers)

        return peek


class Foreach(Processor):
    """Call ``action(key, value)``; a terminal operator."""

    def __init__(self, action: KeyValueFn) -> None:
        self.action = action

    def process(self, record: Record) -> None:
        self.action(record.key, record.value)

    def fuse(self, downstream: Emit) -> Emit:
        action = self.action

        def foreach(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            action(key, value)

        return foreach


class Branch(Processor):
    """Send each record to the first branch whose predicate holds (``None``: the default branch)."""

    def __init__(self, branches: list[tuple[str, KeyValueFn | None]]) -> None:
        self.branches = branches

    def process(self, record: Record) -> None:
        for child, predicate in self.branches:
            if predicate is None or predicate(record.key, record.value):
                self.context.forward(record, to=child)
                return


class Passthrough(_Operator):
    """Forward every record (the node where merged streams meet)."""

    def process(self, record: Record) -> None:
        self.forward(record)

    def fuse(self, downstream: Emit) -> Emit:
        return downstream
