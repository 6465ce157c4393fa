"""Helpers of the AVRO format tests: a schema parsed from JSON or text, a record schema, the
read errors of a reader/writer pair."""

from __future__ import annotations

import json
from typing import Any

from sluice.schemas.formats.avro import FORMAT, AvroSchema

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]


def avro(schema: Any, references: dict[str, str] | None = None) -> AvroSchema:
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return FORMAT.parse(text, references or {})


def record(name: str, *fields: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields), **extra}


def errors(reader: Any, writer: Any) -> list[tuple[str, str]]:
    return [(e.kind, e.path) for e in FORMAT.read_errors(avro(reader), avro(writer))]
