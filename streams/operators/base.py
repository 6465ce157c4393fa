"""The bases of the built-in operators: :class:`Operator`, :class:`FusedOperator` and
:class:`StoreOperator`.

An :class:`Operator` forwards to all its children through one callable (``context.forwarder()``,
their ``process`` methods), so a chain of operators is a chain of plain function calls.

A :class:`FusedOperator` is written once, as ``fuse(downstream)``: the operator as a plain
function of a record's fields, ``(key, value, timestamp, headers)`` (an :data:`Emit`), that calls
``downstream`` with the fields of what it would forward. A task chains these from its sources to
its sinks (:mod:`sluice.streams.fusion`), so that a record passing a run of such operators costs a
few function calls and no intermediate :class:`~sluice.streams.record.Record`. Its ``process``
(for a record that comes from a processor that is not fused) runs the same function: in a task,
fused with everything below it; alone, with a downstream that forwards a ``Record`` of the
fields. ``fuse`` is used only when the class itself defines it: a subclass that overrides
``process`` alone is called through ``process``.

>>> from sluice.streams.record import Record
>>> class Double(FusedOperator):
...     def fuse(self, downstream):
...         def double(key, value, timestamp, headers):
...             downstream(key, value * 2, timestamp, headers)
...         return double
>>> op, out = Double(), []
>>> op.forward = out.append
>>> op.process(Record("k", 21, 5)); out
[Record(key='k', value=42, timestamp=5, headers=())]
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import Any

from sluice.streams.processor import Processor, ProcessorContext
from sluice.streams.record import Headers, Record
from sluice.streams.state.keyvalue import KeyValueStore

__all__ = ["Emit", "FusedOperator", "Operator", "StoreOperator"]

Emit = Callable[[Any, Any, int, Headers], None]
"""A record given by its fields: ``emit(key, value, timestamp, headers)``."""


class Operator(Processor):
    """A processor that forwards to all children through one fast callable, ``forward``."""

    forward: Callable[[Record], None]

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self.forward = context.forwarder()


class FusedOperator(Operator):
    """An operator written once, as :meth:`fuse`; :meth:`process` runs :attr:`fused`."""

    fused: Emit | None = None
    """What :meth:`process` runs: set by the task to this operator fused with everything below it
    (:func:`sluice.streams.fusion.sources_of`), so that a record coming from a processor that
    is not fused becomes fields once; else made on first use (when the store and context are in
    place) with a downstream that forwards a ``Record`` of the fields."""

    @abstractmethod
    def fuse(self, downstream: Emit) -> Emit:
        """The operator as a function of a record's fields that calls ``downstream``."""

    def process(self, record: Record) -> None:
        fused = self.fused
        if fused is None:
            fused = self.fused = self.fuse(self._forward_fields)
        fused(record.key, record.value, record.timestamp, record.headers)

    def _forward_fields(self, key: Any, value: Any, timestamp: int, headers: Headers) -> None:
        self.forward(Record(key, value, timestamp, headers))


class StoreOperator(Operator):
    """An operator over one key-value store, ``store_name``, reached as ``store`` after init."""

    store_name: str
    store: KeyValueStore

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        store = context.get_state_store(self.store_name)
        assert isinstance(store, KeyValueStore)
        self.store = store
