"""Stateless stream operators: filter, map, flat map, select key, peek, foreach, branch, merge.

User functions take ``(key, value)`` except the ``*_values`` mappers, which take the value.

Each operator but ``Branch`` is a :class:`~sluice.streams.operators.base.FusedOperator`, written
once as ``fuse(downstream)``: a plain function of the record's fields, ``(key, value, timestamp,
headers)``, that calls ``downstream`` with the fields of what it would forward; its ``process``
runs that same function (see :mod:`sluice.streams.operators.base`).

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

from collections.abc import Callable, Iterable
from typing import Any

from sluice.streams.operators.base import Emit, FusedOperator
from sluice.streams.processor import Processor
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


class Filter(FusedOperator):
    """Keep records for which ``predicate(key, value)`` is true (false with ``negate``)."""

    def __init__(self, predicate: KeyValueFn, negate: bool = False) -> None:
        self.predicate = predicate
        self.negate = negate

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


class Map(FusedOperator):
    """Replace key and value with ``mapper(key, value) -> (key, value)``."""

    def __init__(self, mapper: KeyValueFn) -> None:
        self.mapper = mapper

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper

        def map_(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            key, value = mapper(key, value)
            downstream(key, value, timestamp, headers)

        return map_


class MapValues(FusedOperator):
    """Replace the value with ``mapper(value)`` (``mapper(key, value)`` with ``with_key``)."""

    def __init__(self, mapper: Callable[..., Any], with_key: bool = False) -> None:
        self.mapper = mapper
        self.with_key = with_key

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper
        if self.with_key:

            def map_values_with_key(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
                downstream(key, mapper(key, value), timestamp, headers)

            return map_values_with_key

        def map_values(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            downstream(key, mapper(value), timestamp, headers)

        return map_values


class FlatMap(FusedOperator):
    """Zero or more records from ``mapper(key, value) -> iterable of (key, value)``."""

    def __init__(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]]) -> None:
        self.mapper = mapper

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper

        def flat_map(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            for new_key, new_value in mapper(key, value):
                downstream(new_key, new_value, timestamp, headers)

        return flat_map


class FlatMapValues(FusedOperator):
    """Zero or more records, same key, from ``mapper(value) -> iterable of values``."""

    def __init__(self, mapper: Callable[[Any], Iterable[Any]]) -> None:
        self.mapper = mapper

    def fuse(self, downstream: Emit) -> Emit:
        mapper = self.mapper

        def flat_map_values(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            for new_value in mapper(value):
                downstream(key, new_value, timestamp, headers)

        return flat_map_values


class SelectKey(FusedOperator):
    """Replace the key with ``selector(key, value)``."""

    def __init__(self, selector: KeyValueFn) -> None:
        self.selector = selector

    def fuse(self, downstream: Emit) -> Emit:
        selector = self.selector

        def select_key(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            downstream(selector(key, value), value, timestamp, headers)

        return select_key


class Peek(FusedOperator):
    """Call ``action(key, value)`` and pass the record on unchanged."""

    def __init__(self, action: KeyValueFn) -> None:
        self.action = action

    def fuse(self, downstream: Emit) -> Emit:
        action = self.action

        def peek(key: Any, value: Any, timestamp: int, headers: Headers) -> None:
            action(key, value)
            downstream(key, value, timestamp, headers)

        return peek


class Foreach(FusedOperator):
    """Call ``action(key, value)``; a terminal operator."""

    def __init__(self, action: KeyValueFn) -> None:
        self.action = action

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


class Passthrough(FusedOperator):
    """Forward every record (the node where merged streams meet)."""

    def fuse(self, downstream: Emit) -> Emit:
        return downstream
