"""The registry's operations and rules, as Confluent's ``KafkaSchemaRegistry`` applies them.

:class:`SchemaRegistry` answers reads from its :class:`~sluice.schema_registry.store.Store` and
turns each write into records appended to its :class:`~sluice.schema_registry.log.RecordLog`,
one write at a time (the caller makes sure this instance is the leader: a follower forwards
writes, :mod:`sluice.schema_registry.api`). The rules:

- **ids are global**: a schema — its type, canonical text and references — has one id in every
  subject; a new schema gets the highest id ever read + 1, once the log is read to its end.
- registering a schema a subject already has (a live version with the same identity) returns its
  id and adds no version; otherwise the new version is one above the subject's highest, soft-deleted
  ones included, after the compatibility check against the subject's live versions under the
  subject's level (else the global one, else ``BACKWARD``);
- references (``name`` → ``subject``/``version``) are resolved transitively to schema texts for
  the format; a version that a live schema references cannot be deleted (42206);
- soft deletes hide versions (``deleted=true`` shows them); a permanent delete needs a soft one
  first; ``READONLY`` mode refuses writes to schemas, ``IMPORT`` mode lets a client give the id
  and version.

>>> from sluice.schema_registry.log import MemoryLog
>>> from sluice.schema_registry.store import Store
>>> registry = SchemaRegistry(MemoryLog(Store()))
>>> registry.register("s", {"schema": '"string"'})
{'id': 1}
>>> registry.register("t", {"schema": '"string"'}), registry.versions("t")
({'id': 1}, [1])
"""

from __future__ import annotations

import threading
from typing import Any

from sluice.schema_registry import errors
from sluice.schema_registry.bodies import SchemaRequest, compatibility_level, mode
from sluice.schema_registry.log import Record, RecordLog
from sluice.schema_registry.records import (
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    Reference,
    SchemaKey,
    SchemaValue,
)
from sluice.schema_registry.store import Identity, Store
from sluice.schemas.compatibility import CompatibilityLevel, check
from sluice.schemas.formats import SCHEMA_TYPES, ParsedSchema, SchemaFormat, format_named

__all__ = ["DEFAULT_COMPATIBILITY", "LATEST", "SchemaRegistry", "parse_version"]

DEFAULT_COMPATIBILITY = "BACKWARD"
"""The global compatibility level until one is set (Confluent's default)."""

LATEST = -1
"""The version number that means "the latest" (``latest`` or ``-1`` in a path)."""

_MAX_VERSION = 2**31 - 1
_MAX_REFERENCE_DEPTH = 100


def parse_version(text: str) -> int:
    """A path's version: a number in [1, 2^31-1], or ``latest``/``-1`` (:data:`LATEST`).

    >>> parse_version("3"), parse_version("latest"), parse_version("-1")
    (3, -1, -1)
    >>> parse_version("0")
    Traceback (most recent call last):
    ...
    sluice.schema_registry.errors.RegistryError: The specified version '0' is not a valid \
version id. Allowed values are between [1, 2^31-1] and the string "latest"
    """
    if text.strip().lower() == "latest":
        return LATEST
    try:
        number = int(text)
    except ValueError:
        raise errors.invalid_version(text) from None
    if number == LATEST or 1 <= number <= _MAX_VERSION:
        return number
    raise errors.invalid_version(text)


def schema_json(value: SchemaValue, schema: str | None = None) -> dict[str, Any]:
    """``schemaType`` (left out for AVRO, as Confluent does), ``references`` (when any) and
    ``schema`` of a stored version."""
    body: dict[str, Any] = {}
    if value.schema_type != "AVRO":
        body["schemaType"] = value.schema_type
    if value.references:
        body["references"] = [r.to_json() for r in value.references]
    body["schema"] = value.schema if schema is None else schema
    return body


def _version_json(value: SchemaValue, schema: str | None = None) -> dict[str, Any]:
    return {
        "subject": value.subject,
        "version": value.version,
        "id": value.id,
        **schema_json(value, schema),
    }


def _with_deleted(value: SchemaValue, deleted: bool) -> SchemaValue:
    return SchemaValue(
        value.subject,
        value.version,
        value.id,
        value.schema_type,
        value.schema,
        value.references,
        deleted,
    )


class SchemaRegistry:
    """Reads and (on the leader) writes; see the module docstring."""

    def __init__(self, log: RecordLog) -> None:
        self._log = log
        self._store: Store = log.store
        self._write_lock = threading.Lock()

    @property
    def store(self) -> Store:
        return self._store

    def catch_up(self) -> None:
        """Return once this instance has applied every record written so far (by any)."""
        self._log.catch_up()

    # -- parsing ---------------------------------------------------------------------------

    def _format(self, schema_type: str) -> SchemaFormat:
        if schema_type not in SCHEMA_TYPES:
            raise errors.invalid_schema(
                f"Invalid schema type {schema_type}; known: {', '.join(SCHEMA_TYPES)}"
            )
        try:
            return format_named(schema_type)
        except Exception as error:  # the format's module failed to load
            raise errors.invalid_schema(f"Schema type {schema_type} unavailable: {error}") from None

    def _resolve(self, references: tuple[Reference, ...]) -> dict[str, str]:
        """Each reference's name → schema text, the references of references included."""
        resolved: dict[str, str] = {}

        def visit(refs: tuple[Reference, ...], depth: int) -> None:
            if depth > _MAX_REFERENCE_DEPTH:
                raise errors.invalid_schema("Schema references nest too deep (a cycle?)")
            for ref in refs:
                if ref.name in resolved:
                    continue
                target = self._resolve_reference(ref)
                visit(target.references, depth + 1)
                resolved[ref.name] = target.schema

        visit(references, 0)
        return resolved

    def _resolve_reference(self, ref: Reference) -> SchemaValue:
        if ref.version == LATEST:
            target = self._store.latest(ref.subject)
        else:
            target = self._store.version(ref.subject, ref.version)
        if target is None:
            raise errors.invalid_schema(
                f"Invalid schema reference {ref.name}: subject '{ref.subject}' version "
                f"{'latest' if ref.version == LATEST else ref.version} not found"
            )
        return target

    def _pin(self, references: tuple[Reference, ...]) -> tuple[Reference, ...]:
        """References with ``-1`` (latest) replaced by the version it is now."""
        return tuple(
            Reference(r.name, r.subject, self._resolve_reference(r).version)
            if r.version == LATEST
            else r
            for r in references
        )

    def _parse(
        self, text: str, schema_type: str, references: tuple[Reference, ...]
    ) -> tuple[SchemaFormat, ParsedSchema]:
        fmt = self._format(schema_type)
        resolved = self._resolve(references)
        try:
            return fmt, fmt.parse(text, resolved)
        except Exception as error:  # InvalidSchemaError, or a parser's own surprise
            raise errors.invalid_schema(f"Invalid schema: {error}") from None

    def _parse_stored(self, value: SchemaValue) -> tuple[SchemaFormat, ParsedSchema]:
        return self._parse(value.schema, value.schema_type, value.references)

    def _normalize(self, subject: str | None, asked: bool) -> bool:
        if asked:
            return True
        for scope in (subject, None):
            config = self._store.config(scope)
            if config is not None and config.normalize is not None:
                return config.normalize
        return False

    def _parsed_request(
        self, subject: str, body: Any, normalize: bool, strict: bool
    ) -> tuple[SchemaRequest, SchemaFormat, ParsedSchema, Identity]:
        request = SchemaRequest.parse(body, strict=strict)
        references = self._pin(request.references)
        fmt, parsed = self._parse(request.schema, request.schema_type, references)
        if self._normalize(subject, normalize):
            try:
                parsed = parsed.normalized()
            except Exception as error:
                raise errors.invalid_schema(f"Invalid schema: {error}") from None
        return request, fmt, parsed, (request.schema_type, parsed.canonical, references)

    def _same(self, stored: SchemaValue, identity: Identity, normalize: bool) -> bool:
        if stored.identity == identity:
            return True
        if not normalize or stored.schema_type != identity[0]:
            return False
        try:
            parsed = self._parse_stored(stored)[1].normalized()
        except errors.RegistryError:
            return False
        return (stored.schema_type, parsed.canonical, stored.references) == identity

    # -- subjects and versions -------------------------------------------------------------

    def subjects(
        self, prefix: str = "", deleted: bool = False, deleted_only: bool = False
    ) -> list[str]:
        """``GET /subjects``."""
        every = self._store.subjects(deleted=deleted or deleted_only)
        if deleted_only:
            live = set(self._store.subjects())
            every = [s for s in every if s not in live]
        return [s for s in every if s.startswith(prefix)]

    def versions(
        self, subject: str, deleted: bool = False, deleted_only: bool = False
    ) -> list[int]:
        """``GET /subjects/{subject}/versions``: 40401 when there is none to show."""
        found = self._store.versions(subject, deleted=deleted or deleted_only)
        if deleted_only:
            live = set(self._store.versions(subject))
            found = [v for v in found if v not in live]
        if not found and not (deleted_only and self._store.has_subject(subject)):
            raise errors.subject_not_found(subject)
        return found

    def _version(self, subject: str, version: int, deleted: bool) -> SchemaValue:
        if not self._store.versions(subject, deleted=deleted):
            raise errors.subject_not_found(subject)
        if version == LATEST:
            found = self._store.latest(subject, deleted=deleted)
        else:
            found = self._store.version(subject, version)
            if found is not None and found.deleted and not deleted:
                found = None
        if found is None:
            raise errors.version_not_found(version)
        return found

    def get_version(
        self, subject: str, version: str, deleted: bool = False, fmt: str | None = None
    ) -> dict[str, Any]:
        """``GET /subjects/{subject}/versions/{version}``."""
        found = self._version(subject, parse_version(version), deleted)
        return _version_json(found, self._formatted(found, fmt))

    def get_version_schema(self, subject: str, version: str, deleted: bool = False) -> str:
        """``GET /subjects/{subject}/versions/{version}/schema``: the text alone."""
        return self._version(subject, parse_version(version), deleted).schema

    def referenced_by(self, subject: str, version: str) -> list[int]:
        """``GET /subjects/{subject}/versions/{version}/referencedby``: ids of the schemas
        whose references name this version."""
        found = self._version(subject, parse_version(version), deleted=True)
        return self._store.referenced_by(found.subject, found.version)

    def lookup(
        self,
        subject: str,
        body: Any,
        *,
        normalize: bool = False,
        deleted: bool = False,
        strict: bool = False,
    ) -> dict[str, Any]:
        """``POST /subjects/{subject}``: the version of ``subject`` holding the schema."""
        if not self._store.versions(subject, deleted=deleted):
            raise errors.subject_not_found(subject)
        normalized = self._normalize(subject, normalize)
        _, _, _, identity = self._parsed_request(subject, body, normalized, strict)
        for stored in reversed(self._store.schemas(subject, deleted=deleted)):
            if self._same(stored, identity, normalized):
                return _version_json(stored)
        raise errors.schema_not_found()

    # -- schemas by id ---------------------------------------------------------------------

    def _by_id(self, schema_id: int) -> SchemaValue:
        found = self._store.by_id(schema_id)
        if found is None:
            raise errors.schema_not_found(schema_id)
        return found

    def _formatted(self, value: SchemaValue, fmt: str | None) -> str:
        if fmt is None or fmt in ("", "default"):
            return value.schema
        if fmt == "serialized":
            if value.schema_type != "PROTOBUF":
                return value.schema  # an Avro or JSON schema's text is its serialized form
            parsed = self._parse_stored(value)[1]
            serialized = getattr(parsed, "serialized", None)
            if serialized is None:
                raise errors.invalid_request("format=serialized is not available for PROTOBUF")
            return str(serialized())
        raise errors.invalid_request(
            f"Unsupported format {fmt!r} (supported: default, serialized for PROTOBUF)"
        )

    def get_schema(self, schema_id: int, fmt: str | None = None) -> dict[str, Any]:
        """``GET /schemas/ids/{id}``. (Confluent's ``?subject=`` names the context to look the
        id up in; with the one default context every subject sees every id.)"""
        found = self._by_id(schema_id)
        return schema_json(found, self._formatted(found, fmt))

    def get_schema_text(self, schema_id: int) -> str:
        """``GET /schemas/ids/{id}/schema``."""
        return self._by_id(schema_id).schema

    def schema_subjects(
        self, schema_id: int, subject: str | None = None, deleted: bool = False
    ) -> list[str]:
        """``GET /schemas/ids/{id}/subjects``."""
        self._by_id(schema_id)
        holders = self._store.holders(schema_id, deleted=deleted)
        return sorted({v.subject for v in holders if not subject or v.subject == subject})

    def schema_versions(
        self, schema_id: int, subject: str | None = None, deleted: bool = False
    ) -> list[dict[str, Any]]:
        """``GET /schemas/ids/{id}/versions``: ``[{"subject", "version"}]``."""
        self._by_id(schema_id)
        return [
            {"subject": v.subject, "version": v.version}
            for v in self._store.holders(schema_id, deleted=deleted)
            if not subject or v.subject == subject
        ]

    # -- config and mode (reads) -----------------------------------------------------------

    def level(self, subject: str | None) -> str:
        """The compatibility level that applies to ``subject``."""
        for scope in (subject, None) if subject is not None else (None,):
            config = self._store.config(scope)
            if config is not None and config.compatibility_level is not None:
                return config.compatibility_level
        return DEFAULT_COMPATIBILITY

    def get_config(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        """``GET /config[/{subject}]``: ``{"compatibilityLevel": ...}``."""
        config = self._store.config(subject)
        if subject is not None and config is None:
            if not default_to_global:
                raise errors.compatibility_not_configured(subject)
            config = self._store.config(None)
        body: dict[str, Any] = {
            "compatibilityLevel": (
                config.compatibility_level
                if config is not None and config.compatibility_level is not None
                else self.level(None)
            )
        }
        if config is not None and config.normalize is not None:
            body["normalize"] = config.normalize
        return body

    def current_mode(self, subject: str | None) -> str:
        """The mode that applies to ``subject`` (its own, else the global one)."""
        for scope in (subject, None) if subject is not None else (None,):
            found = self._store.mode(scope)
            if found is not None:
                return found
        return "READWRITE"

    def get_mode(self, subject: str | None, default_to_global: bool = False) -> dict[str, Any]:
        """``GET /mode[/{subject}]``."""
        if subject is not None and self._store.mode(subject) is None and not default_to_global:
            raise errors.mode_not_configured(subject)
        return {"mode": self.current_mode(subject)}

    # -- compatibility test ----------------------------------------------------------------

    def test_compatibility(
        self,
        subject: str,
        version: str | None,
        body: Any,
        *,
        normalize: bool = False,
        verbose: bool = False,
        strict: bool = False,
    ) -> dict[str, Any]:
        """``POST /compatibility/subjects/{subject}/versions[/{version}]``."""
        number = None if version is None else parse_version(version)
        _, fmt, parsed, _ = self._parsed_request(subject, body, normalize, strict)
        if number is None or number == LATEST:
            previous = self._store.schemas(subject)
        else:
            previous = [self._version(subject, number, deleted=False)]
        messages = self._check(subject, fmt, parsed, previous)
        answer: dict[str, Any] = {"is_compatible": not messages}
        if verbose:
            answer["messages"] = messages
        return answer

    def _check(
        self, subject: str, fmt: SchemaFormat, parsed: ParsedSchema, previous: list[SchemaValue]
    ) -> list[str]:
        level = CompatibilityLevel.parse(self.level(subject))
        if level is CompatibilityLevel.NONE or not previous:
            return []
        if not level.transitive:
            previous = previous[-1:]
        old = [self._parse_stored(v)[1] for v in previous]
        try:
            return check(fmt, parsed, old, level, versions=[v.version for v in previous])
        except Exception as error:  # a checker's surprise must not be a 500
            return [f"{{errorType:'CHECK_FAILED', description:'{error}'}}"]

    # -- writes (the leader only) ----------------------------------------------------------

    def _writable(self, subject: str) -> None:
        if self.current_mode(subject) == "READONLY":
            raise errors.not_permitted(f"Subject {subject} is in read-only mode")

    def _write(self, records: list[Record]) -> None:
        self._log.write(records)

    def register(
        self, subject: str, body: Any, *, normalize: bool = False, strict: bool = False
    ) -> dict[str, Any]:
        """``POST /subjects/{subject}/versions``: ``{"id": ...}``."""
        if not subject or any(ord(c) < 32 for c in subject):
            raise errors.invalid_subject(subject)
        with self._write_lock:
            self._log.catch_up()
            self._writable(subject)
            normalized = self._normalize(subject, normalize)
            request, fmt, parsed, identity = self._parsed_request(subject, body, normalized, strict)
            importing = self.current_mode(subject) == "IMPORT"
            if (request.id is not None or request.version is not None) and not importing:
                raise errors.not_permitted(
                    f"Subject {subject} is not in import mode: an id or version cannot be given"
                )
            live = self._store.schemas(subject)
            for stored in reversed(live):
                if self._same(stored, identity, normalized) and (
                    request.id is None or request.id == stored.id
                ):
                    return {"id": stored.id}
            if not importing:
                messages = self._check(subject, fmt, parsed, live)
                if messages:
                    raise errors.incompatible_schema(
                        "Schema being registered is incompatible with an earlier schema for "
                        f'subject "{subject}", details: [{", ".join(messages)}]'
                    )
            schema_id = self._allocate(identity, request.id)
            version = request.version or self._store.next_version(subject)
            if request.version is not None and self._store.version(subject, version) is not None:
                raise errors.not_permitted(
                    f"Overwrite new schema with version {version} is not permitted."
                )
            value = SchemaValue(subject, version, schema_id, *identity)
            self._write([(SchemaKey(subject, version), value)])
            return {"id": schema_id}

    def _allocate(self, identity: Identity, wanted: int | None) -> int:
        existing = self._store.id_of(identity)
        if wanted is None:
            return existing if existing is not None else self._store.max_id + 1
        holder = self._store.by_id(wanted)
        if holder is not None and holder.identity != identity:
            raise errors.id_does_not_match(
                f"Schema id {wanted} is already registered with a different schema"
            )
        return wanted

    def _refuse_if_referenced(self, value: SchemaValue) -> None:
        if self._store.referenced_by(value.subject, value.version):
            raise errors.reference_exists(
                "One or more references exist to the schema "
                f"{{magic=1,keytype=SCHEMA,subject={value.subject},version={value.version}}}."
            )

    def delete_version(self, subject: str, version: str, permanent: bool = False) -> int:
        """``DELETE /subjects/{subject}/versions/{version}[?permanent=true]``."""
        number = parse_version(version)
        with self._write_lock:
            self._log.catch_up()
            self._writable(subject)
            if not self._store.has_subject(subject):
                raise errors.subject_not_found(subject)
            if number == LATEST:
                found = self._store.latest(subject, deleted=permanent)
            else:
                found = self._store.version(subject, number)
            if found is None:
                raise errors.version_not_found(number)
            if permanent:
                if not found.deleted:
                    raise errors.version_not_soft_deleted(subject, found.version)
                self._refuse_if_referenced(found)
                self._write([(SchemaKey(subject, found.version), None)])
            else:
                if found.deleted:
                    raise errors.version_soft_deleted(subject, found.version)
                self._refuse_if_referenced(found)
                self._write([(SchemaKey(subject, found.version), _with_deleted(found, True))])
            return found.version

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """``DELETE /subjects/{subject}[?permanent=true]``: the versions deleted."""
        with self._write_lock:
            self._log.catch_up()
            self._writable(subject)
            every = self._store.schemas(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            live = [v for v in every if not v.deleted]
            for value in live:
                self._refuse_if_referenced(value)
            records: list[Record] = []
            if permanent:
                if live:
                    raise errors.subject_not_soft_deleted(subject)
                records = [(SchemaKey(subject, v.version), None) for v in every]
                if self._store.config(subject) is not None:
                    records.append((ConfigKey(subject), None))
                if self._store.mode(subject) is not None:
                    records.append((ModeKey(subject), None))
                self._write(records)
                return [v.version for v in every]
            if not live:
                raise errors.subject_soft_deleted(subject)
            records = [(SchemaKey(subject, v.version), _with_deleted(v, True)) for v in live]
            records.append(
                (DeleteSubjectKey(subject), DeleteSubjectValue(subject, live[-1].version))
            )
            self._write(records)
            return [v.version for v in live]

    def set_config(self, subject: str | None, body: Any) -> dict[str, Any]:
        """``PUT /config[/{subject}]``: ``{"compatibility": ...}``."""
        level, normalize = compatibility_level(body)
        with self._write_lock:
            self._log.catch_up()
            self._write([(ConfigKey(subject), ConfigValue(level, normalize))])
        answer: dict[str, Any] = {"compatibility": level}
        if normalize is not None:
            answer["normalize"] = normalize
        return answer

    def delete_config(self, subject: str | None) -> dict[str, Any]:
        """``DELETE /config[/{subject}]``: the settings removed (the global level returns to
        ``BACKWARD``)."""
        with self._write_lock:
            self._log.catch_up()
            previous = self._store.config(subject)
            if previous is None and subject is not None:
                raise errors.compatibility_not_configured(subject)
            answer = self.get_config(subject, default_to_global=True)
            if previous is not None:
                self._write([(ConfigKey(subject), None)])
            return answer

    def set_mode(self, subject: str | None, body: Any, force: bool = False) -> dict[str, Any]:
        """``PUT /mode[/{subject}]``: IMPORT needs an empty scope unless ``force``."""
        wanted = mode(body)
        with self._write_lock:
            self._log.catch_up()
            if wanted == "IMPORT" and not force:
                existing = (
                    self._store.subjects(deleted=True)
                    if subject is None
                    else ([subject] if self._store.has_subject(subject) else [])
                )
                if existing:
                    raise errors.not_permitted(
                        "Cannot import since found existing subjects (use force=true)"
                    )
            self._write([(ModeKey(subject), ModeValue(wanted))])
        return {"mode": wanted}

    def delete_mode(self, subject: str) -> dict[str, Any]:
        """``DELETE /mode/{subject}``: the mode removed."""
        with self._write_lock:
            self._log.catch_up()
            previous = self._store.mode(subject)
            if previous is None:
                raise errors.mode_not_configured(subject)
            self._write([(ModeKey(subject), None)])
            return {"mode": previous}
