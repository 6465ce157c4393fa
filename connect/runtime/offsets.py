"""Where source offsets live: ``(connector, source partition) → source offset``.

Kafka Connect's format, so that tooling carries over: the key is the JSON array
``["<connector>", {<source partition>}]`` and the value the JSON object of the offset. The
standalone worker keeps them in a local file (``offset.storage.file.filename``), replaced
atomically (write, fsync, rename) at each commit; a crash loses at most the offsets of the last
commit interval, whose records are then sent again (at-least-once).

>>> import tempfile, pathlib
>>> store = FileOffsetStore(pathlib.Path(tempfile.mkdtemp()) / "offsets.json")
>>> store.put("tail", {"file": "/var/log/a"}, {"position": 42}); store.flush()
>>> FileOffsetStore(store.path).get("tail", {"file": "/var/log/a"})
{'position': 42}
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sluice.connect.runtime.topic_store import TopicMap

__all__ = ["FileOffsetStore", "KafkaOffsetStore", "OffsetReader", "OffsetStore", "offset_key"]


def offset_key(connector: str, partition: Mapping[str, Any]) -> str:
    """Kafka Connect's key of a source partition's offset."""
    return json.dumps([connector, dict(partition)], sort_keys=True, separators=(",", ":"))


class OffsetStore(Protocol):
    """Where a worker keeps source offsets (a file standalone, a topic distributed)."""

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The committed offset of one source partition."""

    def put(
        self, connector: str, partition: Mapping[str, Any], offset: dict[str, Any] | None
    ) -> None:
        """Stage an offset (None deletes it)."""

    def flush(self) -> None:
        """Make staged offsets durable."""

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every ``(partition, offset)`` of a connector."""

    def close(self) -> None:
        """Release what the store holds (its tasks have flushed and stopped)."""


class KafkaOffsetStore:
    """Offsets in the compacted topic ``connect-offsets`` (Kafka Connect's keys and values)."""

    def __init__(self, topic_map: TopicMap) -> None:
        self.map = topic_map
        self._staged: dict[str, dict[str, Any] | None] = {}
        self._lock = threading.Lock()

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        key = offset_key(connector, partition)
        with self._lock:
            if key in self._staged:
                return self._staged[key]
        found: dict[str, Any] | None = self.map.get(key)
        return found

    def put(
        self, connector: str, partition: Mapping[str, Any], offset: dict[str, Any] | None
    ) -> None:
        with self._lock:
            self._staged[offset_key(connector, partition)] = offset

    def flush(self) -> None:
        with self._lock:
            staged, self._staged = self._staged, {}
        for key, offset in staged.items():
            self.map.put(key, offset, wait=False)
        if staged:
            self.map.sync()

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        found = []
        for key, offset in self.map.items():
            name, partition = json.loads(key)
            if name == connector and offset is not None:
                found.append((partition, offset))
        return found

    def close(self) -> None:
        """Stop following the topic."""
        self.map.close()


class FileOffsetStore:
    """Offsets in a JSON file; thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._writing = threading.Lock()
        self._offsets: dict[str, dict[str, Any] | None] = {}
        if path.exists():
            try:
                raw = json.loads(path.read_text())
            except ValueError as error:
                raise OSError(f"{path}: not an offsets file ({error})") from error
            self._offsets = dict(raw)

    def get(self, connector: str, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The committed offset of one source partition."""
        with self._lock:
            return self._offsets.get(offset_key(connector, partition))

    def put(
        self, connector: str, partition: Mapping[str, Any], offset: dict[str, Any] | None
    ) -> None:
        """Stage an offset (None deletes it); durable after :meth:`flush`."""
        with self._lock:
            self._offsets[offset_key(connector, partition)] = offset

    def connector_offsets(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """Every ``(partition, offset)`` of a connector (``GET /connectors/{name}/offsets``)."""
        with self._lock:
            found = []
            for key, offset in self._offsets.items():
                name, partition = json.loads(key)
                if name == connector and offset is not None:
                    found.append((partition, offset))
            return found

    def flush(self) -> None:
        """Write the file atomically (one writer at a time: tasks commit concurrently)."""
        with self._writing:
            with self._lock:
                data = json.dumps(self._offsets, sort_keys=True)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(self.path.suffix + ".tmp")
            with open(temporary, "w") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)

    def close(self) -> None:
        """Nothing to release: each flush wrote the file whole."""


class OffsetReader:
    """A task's view of its connector's committed offsets (``context.offset_storage_reader``)."""

    def __init__(self, store: OffsetStore, connector: str) -> None:
        self.store = store
        self.connector = connector

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.store.get(self.connector, partition)

    def offsets(
        self, partitions: list[Mapping[str, Any]]
    ) -> dict[tuple[tuple[str, Any], ...], dict[str, Any]]:
        found = {}
        for partition in partitions:
            offset = self.offset(partition)
            if offset is not None:
                found[tuple(sorted(partition.items()))] = offset
        return found
