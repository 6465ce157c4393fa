"""Key-value stores: a changelogged facade over a backend (a dict, or RocksDB).

Entries are ``(value, timestamp)`` pairs: the timestamp is the event time of the last update,
which table results carry downstream. The changelog record of a key is ``key → value`` with the
entry's timestamp as record timestamp, or a tombstone for a deleted key; between two flushes a
key changed a thousand times is logged once.

>>> from sluice.serde import STRING, INT64
>>> store = KeyValueStore(STRING, INT64)
>>> store.put("a", 1, 10); store.put("b", 2, 20); store.put("a", 3, 30)
>>> store.get("a"), store.get_with_timestamp("b"), len(store)
(3, (2, 20), 2)
>>> sent = []
>>> store.init(StoreContext("app-counts-changelog", 0, lambda *r: sent.append(r)))
>>> store.flush()
>>> sorted(sent)
[('app-counts-changelog', 0, b'a', b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x03', 30), \
('app-counts-changelog', 0, b'b', b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02', 20)]
>>> list(store.range("a", "a"))
[('a', 3)]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from sluice.serde import Serde
from sluice.streams.state.base import StateStore, StoreContext

__all__ = ["Entry", "KeyValueBackend", "KeyValueStore", "MemoryBackend", "Put"]

Entry = tuple[Any, int]
"""A stored value and its timestamp."""

Put = Callable[[Any, Any, int], None]
"""``put(key, value, timestamp)``: :meth:`KeyValueStore.put` (``value`` None deletes)."""


class KeyValueBackend(Protocol):
    """Where entries live. Keys and values are objects; a backend that stores bytes serializes."""

    def get(self, key: Any) -> Entry | None:
        """The entry of ``key``, or None."""

    def put(self, key: Any, entry: Entry | None) -> None:
        """Set (or with None, delete) an entry; may be cached until :meth:`commit`."""

    def commit(self) -> None:
        """Make every put so far durable in the backend."""

    def items(self, low: Any = None, high: Any = None) -> Iterator[tuple[Any, Entry]]:
        """Entries with ``low <= key <= high`` (None: unbounded), in key order."""

    def __len__(self) -> int:
        """How many keys (approximate for RocksDB)."""

    def open(self, context: StoreContext) -> None:
        """Open files (persistent backends)."""

    def close(self) -> None:
        """Close files."""

    def wipe(self) -> None:
        """Delete everything."""


def logged_put(backend: KeyValueBackend, changed: dict[Any, int]) -> Put:
    """``put(key, value, timestamp)`` into ``backend`` that also notes ``key → timestamp`` in
    ``changed`` (the keys to log at the next flush): the backend's own ``logged_put`` when it has
    one (the same in one call: this runs once per store update)."""
    own = getattr(backend, "logged_put", None)
    if own is not None:
        return own(changed)  # type: ignore[no-any-return]
    backend_put = backend.put

    def put(key: Any, value: Any, timestamp: int) -> None:
        backend_put(key, None if value is None else (value, timestamp))
        changed[key] = timestamp

    return put


class MemoryBackend:
    """A dict; range queries sort the keys (Python order) each time."""

    def __init__(self) -> None:
        self.data: dict[Any, Entry] = {}

    def get(self, key: Any) -> Entry | None:
        return self.data.get(key)

    def put(self, key: Any, entry: Entry | None) -> None:
        if entry is None:
            self.data.pop(key, None)
        else:
            self.data[key] = entry

    def logged_put(self, changed: dict[Any, int]) -> Put:
        """See :func:`logged_put` (``data`` is never replaced, only cleared)."""
        data = self.data
        drop = data.pop

        def put(key: Any, value: Any, timestamp: int) -> None:
            if value is None:
                drop(key, None)
            else:
                data[key] = (value, timestamp)
            changed[key] = timestamp

        return put

    def commit(self) -> None:
        pass

    def items(self, low: Any = None, high: Any = None) -> Iterator[tuple[Any, Entry]]:
        data = self.data
        for key in sorted(list(data)):
            if (low is None or key >= low) and (high is None or key <= high):
                entry = data.get(key)
                if entry is not None:
                    yield key, entry

    def __len__(self) -> int:
        return len(self.data)

    def open(self, context: StoreContext) -> None:
        pass

    def close(self) -> None:
        pass

    def wipe(self) -> None:
        self.data.clear()


class KeyValueStore(StateStore):
    """A key-value store; the API processors and interactive queries use."""

    def __init__(
        self, key_serde: Serde, value_serde: Serde, backend: KeyValueBackend | None = None
    ) -> None:
        self.name = ""
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.backend: KeyValueBackend = backend if backend is not None else MemoryBackend()
        self._dirty: dict[Any, int] = {}
        """Keys changed since the last flush → timestamp (cleared, never replaced: ``_put``
        holds it)."""
        self._put = logged_put(self.backend, self._dirty)
        self.persistent = bool(getattr(self.backend, "persistent", False))

    def init(self, context: StoreContext) -> None:
        super().init(context)
        self.backend.open(context)

    # -- data API ---------------------------------------------------------------------------
    def get(self, key: Any) -> Any:
        """The value of ``key``, or None."""
        entry = self.backend.get(key)
        return None if entry is None else entry[0]

    def get_with_timestamp(self, key: Any) -> Entry | None:
        """``(value, timestamp)`` of ``key``, or None."""
        return self.backend.get(key)

    def put(self, key: Any, value: Any, timestamp: int = 0) -> None:
        """Set ``key`` (``value=None`` deletes it)."""
        self._put(key, value, timestamp)

    def accessors(self) -> tuple[Callable[[Any], Entry | None], Put]:
        """``(get_with_timestamp, put)`` for an operator's per-record path: the same as those
        methods, called without the store's own frame in between (the backend's ``get``, and the
        put that :meth:`put` runs); a subclass that overrides either gets its methods.

        >>> from sluice.serde import STRING, INT64
        >>> store = KeyValueStore(STRING, INT64)
        >>> get, put = store.accessors()
        >>> put("a", 1, 10); get("a"), store.get_with_timestamp("a")
        ((1, 10), (1, 10))
        """
        cls = type(self)
        if (
            cls.get_with_timestamp is not KeyValueStore.get_with_timestamp
            or cls.put is not KeyValueStore.put
        ):
            return self.get_with_timestamp, self.put
        backend = self.backend
        if type(backend) is MemoryBackend:
            return backend.data.get, self._put  # the dict's own get (never replaced)
        return backend.get, self._put

    def delete(self, key: Any, timestamp: int = 0) -> Any:
        """Remove ``key``; returns the value it had."""
        old = self.get(key)
        self.put(key, None, timestamp)
        return old

    def range(self, low: Any = None, high: Any = None) -> Iterator[tuple[Any, Any]]:
        """``(key, value)`` with ``low <= key <= high`` in key order (None: unbounded)."""
        for key, entry in self.backend.items(low, high):
            yield key, entry[0]

    def all(self) -> Iterator[tuple[Any, Any]]:
        """Every ``(key, value)`` in key order."""
        return self.range()

    def __len__(self) -> int:
        return len(self.backend)

    # -- runtime API ------------------------------------------------------------------------
    def flush(self) -> None:
        dirty = dict(self._dirty)
        self._dirty.clear()  # not replaced: the put of accessors() holds it
        if self.logged and self.context is not None and self.context.changelog_topic is not None:
            serialize_key = self.key_serde.serialize
            serialize_value = self.value_serde.serialize
            get = self.backend.get
            for key, timestamp in dirty.items():
                entry = get(key)
                if entry is None:
                    self._log(serialize_key(key), None, timestamp)
                else:
                    self._log(serialize_key(key), serialize_value(entry[0]), entry[1])
        self.backend.commit()

    def restore(self, key: bytes, value: bytes | None, timestamp: int) -> None:
        entry = None if value is None else (self.value_serde.deserialize(value), timestamp)
        self.backend.put(self.key_serde.deserialize(key), entry)

    def restore_batch(self, records: list[tuple[bytes, bytes | None, int]]) -> None:
        put_raw = getattr(self.backend, "put_raw", None)
        if put_raw is not None:
            put_raw(records)  # a bytes backend: no need to decode what it would encode again
            return
        deserialize_key = self.key_serde.deserialize
        deserialize_value = self.value_serde.deserialize
        if isinstance(self.backend, MemoryBackend):
            data = self.backend.data
            for key, value, timestamp in records:
                if value is None:
                    data.pop(deserialize_key(key), None)
                else:
                    data[deserialize_key(key)] = (deserialize_value(value), timestamp)
            return
        put = self.backend.put
        for key, value, timestamp in records:
            entry = None if value is None else (deserialize_value(value), timestamp)
            put(deserialize_key(key), entry)

    def flush_restored(self) -> None:
        self.backend.commit()

    def close(self) -> None:
        self.backend.commit()
        self.backend.close()

    def wipe(self) -> None:
        self._dirty.clear()
        self.backend.wipe()
