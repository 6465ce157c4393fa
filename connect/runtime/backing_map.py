"""Where the config and status stores keep their records: memory or a compacted topic.

Kafka Connect's herders differ in where configs and statuses live: a standalone worker keeps them
in memory (``MemoryConfigBackingStore``), a distributed one in ``connect-configs`` and
``connect-status`` (``KafkaConfigBackingStore``). Here the stores
(:mod:`.config_store`, :mod:`.status_store`) are written once, over a :class:`BackingMap`:
:class:`MemoryMap` or :class:`~sluice.connect.runtime.topic_store.TopicMap`. Values are JSON,
as the topic holds them, so both maps hand back the same shapes.

>>> seen = []
>>> records = MemoryMap()
>>> records.on_change = lambda key, value: seen.append((key, value))
>>> records.put("task-a-0", {"properties": {"batch": (1, 2)}})
>>> records.put("task-a-1", None)
>>> records.items("task-"), seen[0]
([('task-a-0', {'properties': {'batch': [1, 2]}})], ('task-a-0', {'properties': {'batch': [1, 2]}}))
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["BackingMap", "MemoryMap"]


class BackingMap(Protocol):
    """A map of JSON values by key, shared by whoever reads it; ``on_change(key, value)`` is
    called after each change that is read (None: the key was removed)."""

    on_change: Callable[[str, Any], None] | None

    def get(self, key: str) -> Any:
        """The current value of ``key`` (None: absent)."""

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        """Entries whose key starts with ``prefix``, in key order."""

    def put(self, key: str, value: Any, *, wait: bool = True, partition: int | None = None) -> None:
        """Write ``key`` (None: remove it); with ``wait``, return once it reads back."""

    def sync(self, timeout_s: float = 30.0) -> None:
        """Wait until everything written so far reads back."""

    def close(self) -> None:
        """Release what the map holds."""


class MemoryMap:
    """A :class:`BackingMap` in this process's memory (a standalone worker's): a write reads
    back at once, and ``on_change`` runs in the writer's thread."""

    def __init__(self) -> None:
        self.on_change: Callable[[str, Any], None] | None = None
        self._data: dict[str, Any] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        """The current value of ``key`` (None: absent)."""
        with self._lock:
            return self._data.get(key)

    def items(self, prefix: str = "") -> list[tuple[str, Any]]:
        """Entries whose key starts with ``prefix``, in key order."""
        with self._lock:
            return sorted((k, v) for k, v in self._data.items() if k.startswith(prefix))

    def put(self, key: str, value: Any, *, wait: bool = True, partition: int | None = None) -> None:
        """Write ``key`` (None: remove it) as JSON would give it back; ``wait`` and
        ``partition`` mean nothing in memory (a write is read back at once)."""
        self.load(key, None if value is None else json.loads(json.dumps(value, sort_keys=True)))

    def load(self, key: str, value: Any) -> None:
        """Take ``value``, already in JSON's shapes (read from a topic), as it is (None:
        remove ``key``)."""
        with self._lock:
            if value is None:
                self._data.pop(key, None)
            else:
                self._data[key] = value
        if self.on_change is not None:
            self.on_change(key, value)

    def sync(self, timeout_s: float = 30.0) -> None:
        """Nothing to wait for: every write has been read back."""

    def close(self) -> None:
        """Nothing to release."""
