"""The records of the ``_schemas`` topic, in Confluent Schema Registry's format.

The topic is compacted and has one partition; its keys and values are JSON, as Confluent's
``SchemaRegistryKey``/``SchemaRegistryValue`` classes serialize them, so a Confluent registry
(or Karapace) pointed at the same topic reads what Sluice wrote, and the other way round::

    key                                                              value
    {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}         {"subject":"s","version":1,
                                                                      "id":7,"schemaType":"PROTOBUF",
                                                                      "references":[...],
                                                                      "schema":"...","deleted":false}
    {"keytype":"CONFIG","subject":null,"magic":0}  (null: global)    {"compatibilityLevel":"FULL"}
    {"keytype":"MODE","subject":"s","magic":0}                       {"mode":"READONLY"}
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0}             {"subject":"s","version":3}
    {"keytype":"CLEAR_SUBJECT","subject":"s","magic":0}              {"subject":"s"}
    {"keytype":"NOOP","magic":0}                                     (none)

``schemaType`` is left out for AVRO and ``references`` when empty, as Confluent writes them.
A tombstone (no value) deletes its key: a SCHEMA tombstone is a permanent delete, a CONFIG or MODE
tombstone removes that setting. ``DELETE_SUBJECT`` soft-deletes every version up to its
``version``; ``CLEAR_SUBJECT`` permanently removes the subject's soft-deleted versions. Keys are
written byte-for-byte the same for the same entry (compaction keeps the last record of each key).

>>> key = SchemaKey("orders-value", 1)
>>> encode_key(key)
b'{"keytype":"SCHEMA","subject":"orders-value","version":1,"magic":1}'
>>> decode_key(encode_key(key)) == key
True
>>> value = SchemaValue("orders-value", 1, 7, "AVRO", '"string"', ())
>>> encode_value(value)
b'{"subject":"orders-value","version":1,"id":7,"schema":"\\\\"string\\\\"","deleted":false}'
>>> decode_value(key, encode_value(value)) == value
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ClearSubjectKey",
    "ClearSubjectValue",
    "ConfigKey",
    "ConfigValue",
    "DeleteSubjectKey",
    "DeleteSubjectValue",
    "Key",
    "ModeKey",
    "ModeValue",
    "NoopKey",
    "Reference",
    "SchemaKey",
    "SchemaValue",
    "Value",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema reference: ``name`` (as the format knows it) → ``subject`` at ``version``."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True, slots=True)
class SchemaKey:
    """One version of a subject."""

    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """The compatibility settings of a subject (None: the global ones)."""

    subject: str | None


@dataclass(frozen=True, slots=True)
class ModeKey:
    """The mode of a subject (None: the global one)."""

    subject: str | None


@dataclass(frozen=True, slots=True)
class DeleteSubjectKey:
    subject: str


@dataclass(frozen=True, slots=True)
class ClearSubjectKey:
    subject: str


@dataclass(frozen=True, slots=True)
class NoopKey:
    pass


Key = SchemaKey | ConfigKey | ModeKey | DeleteSubjectKey | ClearSubjectKey | NoopKey


@dataclass(frozen=True, slots=True)
class SchemaValue:
    """A registered schema version: where it is, its global id and its text."""

    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: tuple[Reference, ...]
    deleted: bool = False

    @property
    def identity(self) -> tuple[str, str, tuple[Reference, ...]]:
        """What makes two registrations the same schema (and so the same id)."""
        return (self.schema_type, self.schema, self.references)


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """Confluent's ``ConfigValue``: the compatibility level, and whether to normalize."""

    compatibility_level: str | None
    normalize: bool | None = None


@dataclass(frozen=True, slots=True)
class ModeValue:
    mode: str


@dataclass(frozen=True, slots=True)
class DeleteSubjectValue:
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class ClearSubjectValue:
    subject: str


Value = SchemaValue | ConfigValue | ModeValue | DeleteSubjectValue | ClearSubjectValue


def _dumps(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def encode_key(key: Key) -> bytes:
    """The key's bytes, Confluent's field order."""
    if isinstance(key, SchemaKey):
        fields: dict[str, Any] = {
            "keytype": "SCHEMA",
            "subject": key.subject,
            "version": key.version,
            "magic": 1,
        }
    elif isinstance(key, ConfigKey):
        fields = {"keytype": "CONFIG", "subject": key.subject, "magic": 0}
    elif isinstance(key, ModeKey):
        fields = {"keytype": "MODE", "subject": key.subject, "magic": 0}
    elif isinstance(key, DeleteSubjectKey):
        fields = {"keytype": "DELETE_SUBJECT", "subject": key.subject, "magic": 0}
    elif isinstance(key, ClearSubjectKey):
        fields = {"keytype": "CLEAR_SUBJECT", "subject": key.subject, "magic": 0}
    else:
        fields = {"keytype": "NOOP", "magic": 0}
    return _dumps(fields)


def encode_value(value: Value | None) -> bytes | None:
    """The value's bytes (None: a tombstone)."""
    if value is None:
        return None
    if isinstance(value, SchemaValue):
        fields: dict[str, Any] = {
            "subject": value.subject,
            "version": value.version,
            "id": value.id,
        }
        if value.schema_type != "AVRO":
            fields["schemaType"] = value.schema_type
        if value.references:
            fields["references"] = [r.to_json() for r in value.references]
        fields["schema"] = value.schema
        fields["deleted"] = value.deleted
    elif isinstance(value, ConfigValue):
        fields = {}
        if value.compatibility_level is not None:
            fields["compatibilityLevel"] = value.compatibility_level
        if value.normalize is not None:
            fields["normalize"] = value.normalize
    elif isinstance(value, ModeValue):
        fields = {"mode": value.mode}
    elif isinstance(value, DeleteSubjectValue):
        fields = {"subject": value.subject, "version": value.version}
    else:
        fields = {"subject": value.subject}
    return _dumps(fields)


def _object(raw: bytes, what: str) -> dict[str, Any]:
    decoded = json.loads(raw)
    if not isinstance(decoded, dict):
        raise ValueError(f"{what} is not a JSON object")
    return decoded


def _subject(fields: dict[str, Any], nullable: bool = False) -> Any:
    subject = fields.get("subject")
    if subject is None and nullable:
        return None
    if not isinstance(subject, str):
        raise ValueError(f"bad subject {subject!r}")
    return subject


def decode_key(raw: bytes) -> Key | None:
    """The key of a record (None: a key type this registry does not use, such as Confluent's
    ``CONTEXT`` keys); ValueError if it is not a registry key at all."""
    fields = _object(raw, "key")
    keytype = fields.get("keytype")
    if keytype == "SCHEMA":
        version = fields.get("version")
        if not isinstance(version, int):
            raise ValueError(f"bad version {version!r}")
        return SchemaKey(_subject(fields), version)
    if keytype == "CONFIG":
        return ConfigKey(_subject(fields, nullable=True))
    if keytype == "MODE":
        return ModeKey(_subject(fields, nullable=True))
    if keytype == "DELETE_SUBJECT":
        return DeleteSubjectKey(_subject(fields))
    if keytype == "CLEAR_SUBJECT":
        return ClearSubjectKey(_subject(fields))
    if keytype == "NOOP":
        return NoopKey()
    if isinstance(keytype, str):
        return None
    raise ValueError(f"no keytype in {fields!r}")


def _references(raw: Any) -> tuple[Reference, ...]:
    if not raw:
        return ()
    return tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in raw)


def decode_value(key: Key, raw: bytes | None) -> Value | None:
    """The value of a record with ``key`` (None: a tombstone, or a key without a value)."""
    if raw is None or isinstance(key, NoopKey):
        return None
    fields = _object(raw, "value")
    if isinstance(key, SchemaKey):
        return SchemaValue(
            subject=_subject(fields),
            version=int(fields["version"]),
            id=int(fields["id"]),
            schema_type=str(fields.get("schemaType") or "AVRO"),
            schema=str(fields["schema"]),
            references=_references(fields.get("references")),
            deleted=bool(fields.get("deleted", False)),
        )
    if isinstance(key, ConfigKey):
        level = fields.get("compatibilityLevel")
        normalize = fields.get("normalize")
        return ConfigValue(
            None if level is None else str(level), None if normalize is None else bool(normalize)
        )
    if isinstance(key, ModeKey):
        return ModeValue(str(fields["mode"]))
    if isinstance(key, DeleteSubjectKey):
        return DeleteSubjectValue(_subject(fields), int(fields["version"]))
    return ClearSubjectValue(_subject(fields))
