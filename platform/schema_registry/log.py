"""Where the registry's writes go: the narrow interface of its record log.

A write is a list of ``(key, value)`` records (:mod:`sluice.schema_registry.records`) appended in
order; :meth:`RecordLog.write` returns once the instance's own :class:`Store` has applied them
(read-your-write), so the answer to a request always shows its effect. Two backends:
:class:`~sluice.schema_registry.kafka_store.KafkaLog` (the ``_schemas`` topic, the real one) and
:class:`MemoryLog` (applies at once; one process, nothing kept — for embedding and tests).

>>> from sluice.schema_registry.records import ModeKey, ModeValue
>>> log = MemoryLog(Store())
>>> log.write([(ModeKey(None), ModeValue("READONLY"))])
>>> log.store.mode(None)
'READONLY'
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Protocol

from sluice.schema_registry.records import Key, Value
from sluice.schema_registry.store import Store

__all__ = ["MemoryLog", "Record", "RecordLog"]

Record = tuple[Key, Value | None]


class RecordLog(Protocol):
    """An append-only log of registry records that feeds a :class:`Store`."""

    @property
    def store(self) -> Store:
        """The state built from the log."""

    def catch_up(self) -> None:
        """Return once every record appended so far (by any instance) has been applied."""

    def write(self, records: Sequence[Record]) -> None:
        """Append ``records`` in order; return once they have been applied to :attr:`store`."""


class MemoryLog:
    """A log that applies each record at once, in this process only."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()

    @property
    def store(self) -> Store:
        return self._store

    def catch_up(self) -> None:
        return None

    def write(self, records: Sequence[Record]) -> None:
        with self._lock:
            for key, value in records:
                self._store.apply(key, value)
