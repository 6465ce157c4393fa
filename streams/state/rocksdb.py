"""A key-value backend in RocksDB (through rocksdict), with a read and write cache in front.

On disk: one RocksDB database per store and task, ``<state_dir>/<task>/<store>/``; keys are the
key serde's bytes (so ranges follow byte order), values an 8-byte big-endian timestamp then the
value serde's bytes. Puts wait in the write cache until :meth:`commit` writes them in one
``WriteBatch`` (at every commit of the task, before the changelog offsets are checkpointed);
recent reads stay in a bounded read cache.

After a crash the database may hold writes newer than the last checkpoint; the runtime wipes a
store that has no checkpoint to trust and restores it from the changelog. Without a directory
(the test driver) the database lives in a temporary directory removed on close.

>>> from sluice.serde import STRING, INT64
>>> from sluice.streams.state.base import StoreContext
>>> backend = RocksDBBackend(STRING, INT64)
>>> backend.open(StoreContext(None, 0, print))
>>> backend.put("b", (2, 20)); backend.put("a", (1, 10)); backend.commit()
>>> backend.get("a"), list(backend.items("a", "b"))
((1, 10), [('a', (1, 10)), ('b', (2, 20))])
>>> backend.close()
"""

from __future__ import annotations

import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from rocksdict import Options, Rdict, WriteBatch

from sluice.serde import Serde
from sluice.streams.state.base import StoreContext
from sluice.streams.state.keyvalue import Entry, Put

__all__ = ["RocksDBBackend"]

_TIMESTAMP = struct.Struct(">q")
_READ_CACHE = 100_000
_MISSING: Any = object()


class RocksDBBackend:
    """See the module docstring."""

    persistent = True

    def __init__(self, key_serde: Serde, value_serde: Serde) -> None:
        self.key_serde = key_serde
        self.value_serde = value_serde
        self._dirty: dict[Any, Entry | None] = {}
        self._clean: dict[Any, Entry | None] = {}
        self._db: Rdict | None = None
        self._path: Path | None = None
        self._temporary: str | None = None

    def open(self, context: StoreContext) -> None:
        if context.directory is None:
            self._temporary = tempfile.mkdtemp(prefix="sluice-rocksdb-")
            self._path = Path(self._temporary)
        else:
            self._path = context.directory
            self._path.mkdir(parents=True, exist_ok=True)
        self._db = self._open()

    def _open(self) -> Rdict:
        assert self._path is not None
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        return Rdict(str(self._path), options)

    def _decode(self, raw: bytes) -> Entry:
        return self.value_serde.deserialize(raw[8:]), _TIMESTAMP.unpack_from(raw)[0]

    def get(self, key: Any) -> Entry | None:
        # one dict look-up per cache (an entry may be None: a deleted key)
        entry = self._dirty.get(key, _MISSING)
        if entry is _MISSING:
            entry = self._clean.get(key, _MISSING)
            if entry is _MISSING:
                return self._read(key)
        return entry  # type: ignore[no-any-return]

    def _read(self, key: Any) -> Entry | None:
        assert self._db is not None
        raw = self._db.get(self.key_serde.serialize(key))
        entry = None if raw is None else self._decode(raw)
        clean = self._clean
        if len(clean) >= _READ_CACHE:
            clean.clear()
        clean[key] = entry
        return entry

    def put(self, key: Any, entry: Entry | None) -> None:
        self._dirty[key] = entry
        self._clean.pop(key, None)

    def logged_put(self, changed: dict[Any, int]) -> Put:
        """:meth:`put` of ``(value, timestamp)`` that also notes ``key → timestamp`` in
        ``changed``, in one call (the store's put: see ``keyvalue.logged_put``); the caches are
        cleared, never replaced."""
        dirty = self._dirty
        forget = self._clean.pop

        def put(key: Any, value: Any, timestamp: int) -> None:
            dirty[key] = None if value is None else (value, timestamp)
            forget(key, None)
            changed[key] = timestamp

        return put

    def commit(self) -> None:
        if not self._dirty or self._db is None:
            return
        batch = WriteBatch(raw_mode=True)
        serialize_key = self.key_serde.serialize
        serialize_value = self.value_serde.serialize
        for key, entry in self._dirty.items():
            if entry is None:
                batch.delete(serialize_key(key))
            else:
                batch.put(serialize_key(key), _TIMESTAMP.pack(entry[1]) + serialize_value(entry[0]))
        self._db.write(batch)
        if len(self._clean) + len(self._dirty) > _READ_CACHE:
            self._clean.clear()
        self._clean.update(self._dirty)
        self._dirty.clear()  # not replaced: logged_put holds it

    def put_raw(self, records: list[tuple[bytes, bytes | None, int]]) -> None:
        """Write changelog records as they are (restoration): bytes in, bytes stored."""
        self.commit()
        self._clean.clear()
        assert self._db is not None
        batch = WriteBatch(raw_mode=True)
        pack = _TIMESTAMP.pack
        for key, value, timestamp in records:
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, pack(timestamp) + value)
        self._db.write(batch)

    def items(self, low: Any = None, high: Any = None) -> Iterator[tuple[Any, Entry]]:
        self.commit()
        assert self._db is not None
        low_bytes = None if low is None else self.key_serde.serialize(low)
        high_bytes = None if high is None else self.key_serde.serialize(high)
        iterator = self._db.items() if low_bytes is None else self._db.items(from_key=low_bytes)
        for found_key, found_value in iterator:
            raw_key, raw_value = cast(bytes, found_key), cast(bytes, found_value)
            if high_bytes is not None and raw_key > high_bytes:
                break
            yield self.key_serde.deserialize(raw_key), self._decode(raw_value)

    def __len__(self) -> int:
        # RocksDB's "estimate-num-keys" counts overwrites and deletes twice; count the keys.
        self.commit()
        assert self._db is not None
        count = 0
        iterator = self._db.iter()
        iterator.seek_to_first()
        while iterator.valid():
            count += 1
            iterator.next()
        return count

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def wipe(self) -> None:
        self._dirty.clear()
        self._clean.clear()
        if self._db is not None:
            self._db.close()
            Rdict.destroy(str(self._path))
            self._db = self._open()
