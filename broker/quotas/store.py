"""Where the client quotas are kept: Kafka's ``/config/users`` and ``/config/clients`` znodes in
a cluster, a file of the data directory on one node.

- :class:`FileQuotaStore`: ``<data_dir>/client-quotas.json``::

      {"version": 1, "entities": [{"user": "alice", "client-id": null,
                                   "quotas": {"producer_byte_rate": 1024.0}}]}

  where a part that is absent is missing from the object and ``null`` names the default; the
  file is replaced atomically (temporary file, fsync, rename), so a crash leaves the old or the
  new quotas; a file that does not parse is refused with its path, not guessed at.
- :class:`ZooKeeperQuotaStore`: Kafka's layout, ``/config/users/<user>``,
  ``/config/clients/<client-id>`` and ``/config/users/<user>/clients/<client-id>`` (``<default>``
  for a default, names sanitized as Kafka's ``Sanitizer``:
  :func:`sluice.broker.cluster.znodes.sanitize`), each
  ``{"version":1,"config":{"producer_byte_rate":"1024"}}``, written at the znode's version with
  a change notification ``/config/changes/config_change_<n>`` that every broker watches. A
  user's znode also holds its SCRAM credentials: only the quota keys are touched here.

Both are blocking (file system, ZooKeeper): callers on the event loop use ``run_blocking``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Protocol

from sluice.broker.cluster.metadata_store import EntityConfigStore, Watch
from sluice.broker.cluster.model import ConfigChange
from sluice.broker.cluster.znodes import desanitize, sanitize
from sluice.broker.log.files import write_atomically
from sluice.broker.quotas.config import (
    DEFAULT,
    QUOTA_KEYS,
    REQUEST_PERCENTAGE,
    Default,
    Entity,
    Name,
)

__all__ = [
    "FILE_NAME",
    "FileQuotaStore",
    "QuotaStore",
    "ZooKeeperQuotaStore",
    "follow",
]

FILE_NAME: Final = "client-quotas.json"

Quotas = dict[Entity, dict[str, float]]


class QuotaStore(Protocol):
    """The client quotas of the cluster (or of the one node)."""

    def load(self) -> Quotas:
        """Every entity with a quota, and its quotas."""
        ...

    def alter(self, entity: Entity, upsert: Mapping[str, float], remove: set[str]) -> None:
        """Set ``upsert``'s quotas of ``entity`` and remove those in ``remove``."""
        ...


class FileQuotaStore:
    """One node's quotas, in ``<data_dir>/client-quotas.json``."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME

    def load(self) -> Quotas:
        if not self.path.exists():
            return {}
        try:
            doc = json.loads(self.path.read_bytes())
            found: Quotas = {}
            for item in doc["entities"]:
                entity = Entity(_part(item, "user"), _part(item, "client-id"))
                found[entity] = {str(k): float(v) for k, v in item["quotas"].items()}
            return found
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{self.path}: not a client quotas file ({error})") from None

    def alter(self, entity: Entity, upsert: Mapping[str, float], remove: set[str]) -> None:
        every = self.load()
        mine = {k: v for k, v in every.get(entity, {}).items() if k not in remove}
        mine.update(upsert)
        if mine:
            every[entity] = mine
        else:
            every.pop(entity, None)
        items = []
        for e, quotas in every.items():
            item: dict[str, Any] = {}
            for key, name in (("user", e.user), ("client-id", e.client_id)):
                if name is not None:
                    item[key] = None if isinstance(name, Default) else name
            item["quotas"] = dict(sorted(quotas.items()))
            items.append(item)
        items.sort(key=lambda i: json.dumps(i, sort_keys=True))
        doc = {"version": 1, "entities": items}
        write_atomically(self.path, json.dumps(doc, indent=1).encode())


def _part(item: Mapping[str, Any], key: str) -> Name | None:
    if key not in item:
        return None
    value = item[key]
    if value is None:
        return DEFAULT
    if not isinstance(value, str):
        raise TypeError(f"{key} is {value!r}")
    return value


class ZooKeeperQuotaStore:
    """The cluster's quotas, in Kafka's ``/config/users`` and ``/config/clients`` znodes."""

    def __init__(self, store: EntityConfigStore) -> None:
        self.store = store

    def load(self) -> Quotas:
        found: Quotas = {}
        for user in self.store.entities("users"):
            self._read(found, "users", user, Entity(_name(user), None))
            for client in self.store.children("users", user, "clients"):
                self._read(
                    found, "users", f"{user}/clients/{client}", Entity(_name(user), _name(client))
                )
        for client in self.store.entities("clients"):
            self._read(found, "clients", client, Entity(None, _name(client)))
        return found

    def _read(self, found: Quotas, entity_type: str, path: str, entity: Entity) -> None:
        config = self.store.get(entity_type, path)
        quotas = {k: float(v) for k, v in config.items() if k in QUOTA_KEYS}
        if quotas:
            found[entity] = quotas

    def alter(self, entity: Entity, upsert: Mapping[str, float], remove: set[str]) -> None:
        if entity.user is not None:
            entity_type, path = "users", _znode_name(entity.user)
            if entity.client_id is not None:
                path = f"{path}/clients/{_znode_name(entity.client_id)}"
        else:
            assert entity.client_id is not None
            entity_type, path = "clients", _znode_name(entity.client_id)

        def change(config: dict[str, str]) -> dict[str, str]:
            kept = {k: v for k, v in config.items() if k not in remove}
            kept.update({k: _text(k, v) for k, v in upsert.items()})
            return kept

        self.store.update(entity_type, path, change)

    def watch(self, callback: Callable[[], None]) -> Watch:
        """Call ``callback`` (from the store's thread) at every change notification of a user
        or client id published after the watch is set."""
        seen = [max((c.sequence for c in self.store.changes(-1)), default=-1)]

        def changed(changes: list[ConfigChange]) -> None:
            fresh = [c for c in changes if c.sequence > seen[0]]
            if not fresh:
                return
            seen[0] = max(c.sequence for c in fresh)
            if any(c.entity_path.startswith(("users/", "clients/")) for c in fresh):
                callback()

        return self.store.watch_changes(changed)


async def follow(store: ZooKeeperQuotaStore, configure: Callable[[Quotas], None]) -> Watch:
    """Put the cluster's quotas in force now (``configure``) and again at every change of a
    user's or client id's config, read on a thread; the watch returned keeps it going. The
    watch is set before the first read and reads run one at a time, so that no change is
    missed and the last one put in force is the newest."""
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task[None]] = set()
    lock = asyncio.Lock()

    async def reload() -> None:
        async with lock:
            configure(await asyncio.to_thread(store.load))

    def changed() -> None:
        task = loop.create_task(reload())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def notified() -> None:  # on the store's thread
        loop.call_soon_threadsafe(changed)

    watch = await asyncio.to_thread(store.watch, notified)
    await reload()
    return watch


def _name(znode: str) -> Name:
    return DEFAULT if znode == DEFAULT.value else desanitize(znode)


def _znode_name(name: Name) -> str:
    return DEFAULT.value if isinstance(name, Default) else sanitize(name)


def _text(key: str, value: float) -> str:
    """Kafka's text of a quota value: a long for the byte rates, a double for the percentage."""
    return str(float(value)) if key == REQUEST_PERCENTAGE else str(int(value))
