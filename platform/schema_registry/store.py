"""The registry's state in memory, built by applying the ``_schemas`` records in order.

Every registry instance holds one :class:`Store` and feeds it each record its reader consumes
(:meth:`Store.apply`), so every instance that has read the topic to the same offset has the same
state; a restart rebuilds it from the topic. Reads (the REST API's GETs) are served from here.

Thread-safety: one lock guards everything; the reader thread applies while request threads
read. Queries return immutable values (:class:`~sluice.schema_registry.records.SchemaValue`).

>>> from sluice.schema_registry.records import SchemaKey, SchemaValue
>>> store = Store()
>>> store.apply(SchemaKey("s", 1), SchemaValue("s", 1, 1, "AVRO", '"int"', ()))
>>> store.versions("s"), store.max_id, store.id_of(("AVRO", '"int"', ()))
([1], 1, 1)
"""

from __future__ import annotations

import threading

from sluice.schema_registry.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    Key,
    ModeKey,
    ModeValue,
    NoopKey,
    Reference,
    SchemaKey,
    SchemaValue,
    Value,
)

__all__ = ["Identity", "Store"]

Identity = tuple[str, str, tuple[Reference, ...]]
"""A schema's type, canonical text and references: equal identities share one id."""


class Store:
    """Subjects, versions, ids, configs and modes; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._subjects: dict[str, dict[int, SchemaValue]] = {}
        self._ids: dict[int, set[tuple[str, int]]] = {}
        """id → the (subject, version) pairs holding it."""
        self._identities: dict[Identity, int] = {}
        self._by_id: dict[int, SchemaValue] = {}
        self._configs: dict[str | None, ConfigValue] = {}
        self._modes: dict[str | None, str] = {}
        self.max_id = 0
        """The highest id ever read (ids are never given out twice)."""

    # -- applying records ------------------------------------------------------------------

    def apply(self, key: Key, value: Value | None) -> None:
        """Apply one record of the topic (``value`` None: a tombstone)."""
        with self._lock:
            if isinstance(key, SchemaKey):
                if value is None:
                    self._remove(key.subject, key.version)
                elif isinstance(value, SchemaValue):
                    self._put(value)
            elif isinstance(key, ConfigKey):
                if isinstance(value, ConfigValue):
                    self._configs[key.subject] = value
                else:
                    self._configs.pop(key.subject, None)
            elif isinstance(key, ModeKey):
                if isinstance(value, ModeValue):
                    self._modes[key.subject] = value.mode
                else:
                    self._modes.pop(key.subject, None)
            elif isinstance(key, DeleteSubjectKey) and isinstance(value, DeleteSubjectValue):
                versions = self._subjects.get(value.subject, {})
                for number, stored in list(versions.items()):
                    if number <= value.version and not stored.deleted:
                        self._put(_deleted(stored))
            elif isinstance(key, ClearSubjectKey) and isinstance(value, ClearSubjectValue):
                for number, stored in list(self._subjects.get(value.subject, {}).items()):
                    if stored.deleted:
                        self._remove(value.subject, number)
            elif isinstance(key, NoopKey):
                pass

    def _put(self, value: SchemaValue) -> None:
        previous = self._subjects.get(value.subject, {}).get(value.version)
        if previous is not None and previous.id != value.id:
            self._remove(value.subject, value.version)
        self._subjects.setdefault(value.subject, {})[value.version] = value
        self._ids.setdefault(value.id, set()).add((value.subject, value.version))
        self._identities.setdefault(value.identity, value.id)
        self._by_id.setdefault(value.id, value)
        self.max_id = max(self.max_id, value.id)

    def _remove(self, subject: str, version: int) -> None:
        versions = self._subjects.get(subject)
        if versions is None or version not in versions:
            return
        removed = versions.pop(version)
        if not versions:
            del self._subjects[subject]
        holders = self._ids.get(removed.id, set())
        holders.discard((subject, version))
        if not holders:
            self._ids.pop(removed.id, None)
            gone = self._by_id.pop(removed.id, None)
            if gone is not None and self._identities.get(gone.identity) == removed.id:
                del self._identities[gone.identity]

    # -- queries ---------------------------------------------------------------------------

    def subjects(self, deleted: bool = False) -> list[str]:
        """The subjects with a version (soft-deleted ones too with ``deleted``), sorted."""
        with self._lock:
            return sorted(
                name
                for name, versions in self._subjects.items()
                if deleted or any(not v.deleted for v in versions.values())
            )

    def has_subject(self, subject: str) -> bool:
        """Whether any version of ``subject`` is stored, soft-deleted or not."""
        with self._lock:
            return subject in self._subjects

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        """The version numbers of ``subject`` (with the soft-deleted ones if asked), ascending."""
        with self._lock:
            versions = self._subjects.get(subject, {})
            return sorted(n for n, v in versions.items() if deleted or not v.deleted)

    def schemas(self, subject: str, deleted: bool = False) -> list[SchemaValue]:
        """The versions of ``subject``, oldest first."""
        with self._lock:
            versions = self._subjects.get(subject, {})
            return [versions[n] for n in sorted(versions) if deleted or not versions[n].deleted]

    def version(self, subject: str, version: int) -> SchemaValue | None:
        """One version, soft-deleted or not."""
        with self._lock:
            return self._subjects.get(subject, {}).get(version)

    def latest(self, subject: str, deleted: bool = False) -> SchemaValue | None:
        """The highest version of ``subject`` (among the soft-deleted too with ``deleted``)."""
        found = self.schemas(subject, deleted)
        return found[-1] if found else None

    def next_version(self, subject: str) -> int:
        """The number a new version of ``subject`` gets: one above every stored version."""
        with self._lock:
            return max(self._subjects.get(subject, {}), default=0) + 1

    def by_id(self, schema_id: int) -> SchemaValue | None:
        """A version holding ``schema_id`` (its text, type and references are the id's)."""
        with self._lock:
            return self._by_id.get(schema_id)

    def id_of(self, identity: Identity) -> int | None:
        """The id of a schema already stored (in any subject), if any."""
        with self._lock:
            return self._identities.get(identity)

    def holders(self, schema_id: int, deleted: bool = False) -> list[SchemaValue]:
        """The versions holding ``schema_id``, by subject then version."""
        with self._lock:
            pairs = sorted(self._ids.get(schema_id, ()))
            found = [self._subjects[s][v] for s, v in pairs]
            return [v for v in found if deleted or not v.deleted]

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """The ids of the live versions whose references name ``subject`` at ``version``."""
        with self._lock:
            ids = {
                stored.id
                for versions in self._subjects.values()
                for stored in versions.values()
                if not stored.deleted
                and any(r.subject == subject and r.version == version for r in stored.references)
            }
            return sorted(ids)

    def config(self, subject: str | None) -> ConfigValue | None:
        """The compatibility settings of ``subject`` (None: the global ones), if set."""
        with self._lock:
            return self._configs.get(subject)

    def mode(self, subject: str | None) -> str | None:
        """The mode of ``subject`` (None: the global one), if set."""
        with self._lock:
            return self._modes.get(subject)


def _deleted(value: SchemaValue) -> SchemaValue:
    return SchemaValue(
        value.subject,
        value.version,
        value.id,
        value.schema_type,
        value.schema,
        value.references,
        deleted=True,
    )
