"""Request bodies of the REST API, checked and typed.

A body that is JSON but not of the expected shape is refused with 422 (Confluent's
``error_code`` 422) naming the field; a schema body without a schema text is 42201 (Confluent's
"Empty schema"). Nothing here knows a schema format: the registry parses the text.

>>> SchemaRequest.parse({"schema": '"string"'})
SchemaRequest(schema='"string"', schema_type='AVRO', references=(), id=None, version=None)
>>> SchemaRequest.parse({"schema": "{}", "schemaType": "json",
...     "references": [{"name": "a.json", "subject": "a", "version": 1}]}).references
(Reference(name='a.json', subject='a', version=1),)
>>> compatibility_level({"compatibility": "full"})
('FULL', None)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sluice.schema_registry import errors
from sluice.schema_registry.records import Reference

__all__ = ["LEVELS", "MODES", "SchemaRequest", "compatibility_level", "mode"]

LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
"""Confluent's compatibility levels."""

MODES = ("READWRITE", "READONLY", "IMPORT")
"""Confluent's modes (``READONLY_OVERRIDE`` is Confluent Cloud's and not offered)."""

# fields of Confluent's RegisterSchemaRequest this registry does not act on but that clients
# send with their default values (null / empty): refused when they carry something
_UNSUPPORTED = ("metadata", "ruleSet")
_KNOWN = {"schema", "schemaType", "references", "id", "version", "subject", *_UNSUPPORTED}


def _object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.invalid_request(f"The request body must be a JSON object ({what})")
    return body


def _int(value: Any, field: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise errors.invalid_request(f"{field} must be an integer >= {minimum}, not {value!r}")
    return value


def _reference(item: Any, index: int) -> Reference:
    if not isinstance(item, dict):
        raise errors.invalid_request(f"references[{index}] must be a JSON object")
    name, subject, version = item.get("name"), item.get("subject"), item.get("version")
    if not isinstance(name, str) or not name:
        raise errors.invalid_request(f"references[{index}].name must be a non-empty string")
    if not isinstance(subject, str) or not subject:
        raise errors.invalid_request(f"references[{index}].subject must be a non-empty string")
    if isinstance(version, bool) or not isinstance(version, int) or (version < 1 and version != -1):
        raise errors.invalid_request(
            f"references[{index}].version must be a version number or -1 (latest)"
        )
    return Reference(name, subject, version)


@dataclass(frozen=True, slots=True)
class SchemaRequest:
    """A schema to register, look up or test: Confluent's ``RegisterSchemaRequest``."""

    schema: str
    schema_type: str
    references: tuple[Reference, ...]
    id: int | None = None
    version: int | None = None

    @classmethod
    def parse(cls, body: Any, *, strict: bool = False) -> SchemaRequest:
        """The request in ``body`` (decoded JSON), or a 422 :class:`RegistryError`. With
        ``strict`` an unknown field is refused (Confluent's answer, unless the client sent
        ``Confluent-Accept-Unknown-Properties: true``, as confluent-kafka's client does)."""
        fields = _object(body, 'expected {"schema": "...", "schemaType": ..., "references": [...]}')
        unknown = sorted(set(fields) - _KNOWN)
        if unknown and strict:
            raise errors.invalid_request(f"Unrecognized field(s): {', '.join(unknown)}")
        for name in _UNSUPPORTED:
            if fields.get(name):
                raise errors.invalid_request(f"{name} is not supported by this registry")
        schema = fields.get("schema")
        if schema is None or schema == "":
            raise errors.invalid_schema("Empty schema")
        if not isinstance(schema, str):
            raise errors.invalid_request(f"schema must be a string, not {type(schema).__name__}")
        schema_type = fields.get("schemaType")
        if schema_type is None:
            schema_type = "AVRO"
        if not isinstance(schema_type, str):
            raise errors.invalid_request("schemaType must be a string")
        raw_references = fields.get("references")
        if raw_references is None:
            raw_references = []
        if not isinstance(raw_references, list):
            raise errors.invalid_request("references must be a JSON array")
        references = tuple(_reference(item, i) for i, item in enumerate(raw_references))
        names = [r.name for r in references]
        if len(set(names)) != len(names):
            raise errors.invalid_request("references must have distinct names")
        schema_id = fields.get("id")
        version = fields.get("version")
        return cls(
            schema=schema,
            schema_type=schema_type.upper(),
            references=references,
            id=None if schema_id is None or schema_id == -1 else _int(schema_id, "id", 1),
            version=None if version is None or version == -1 else _int(version, "version", 1),
        )


def compatibility_level(body: Any) -> tuple[str, bool | None]:
    """The level and ``normalize`` flag of a ``PUT /config`` body (Confluent's
    ``ConfigUpdateRequest``: ``compatibility``, also read as ``compatibilityLevel``)."""
    fields = _object(body, 'expected {"compatibility": "..."}')
    unknown = sorted(set(fields) - {"compatibility", "compatibilityLevel", "normalize"})
    if unknown:
        raise errors.invalid_request(
            f"Unsupported config field(s): {', '.join(unknown)} (supported: compatibility, "
            "normalize)"
        )
    level = fields.get("compatibility", fields.get("compatibilityLevel"))
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise errors.invalid_compatibility(level)
    normalize = fields.get("normalize")
    if normalize is not None and not isinstance(normalize, bool):
        raise errors.invalid_request("normalize must be true or false")
    return level.upper(), normalize


def mode(body: Any) -> str:
    """The mode of a ``PUT /mode`` body (``{"mode": "READONLY"}``)."""
    fields = _object(body, 'expected {"mode": "..."}')
    value = fields.get("mode")
    if not isinstance(value, str) or value.upper() not in MODES:
        raise errors.invalid_mode(value)
    return value.upper()
