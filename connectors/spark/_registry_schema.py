"""The reader schema of a registry-encoded key or value column: the ``keyFormat`` /
``valueFormat`` of the ``sluice`` source, and the columns of ``spark-sink``'s ``value.subject``.

At planning time (``load()``, on the driver) :func:`resolve` asks the schema registry for the
*reader* schema: the latest version of the subject (``<topic>-value`` by Confluent's
``TopicNameStrategy``, or ``valueSubject``), a pinned ``valueSchemaVersion``, or a
``valueSchemaId``, with the schemas it references (transitively); its Spark type
(:mod:`._registry_types`) is the column's type. The records themselves are decoded in the
executors (:mod:`._registry_decode`), each with its writer's schema projected onto this one.

>>> from pyspark.sql.types import LongType
>>> Resolved("value", "json-schema", '{"type": "integer"}', (), "", LongType(), False).column
StructField('value', LongType(), True)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pyspark.sql.types import DataType, StructField, StructType

from sluice.connectors.spark._registry_types import (
    avro_named_types,
    avro_type,
    json_schema_type,
    protobuf_type,
)
from sluice.schemas.protobuf_messages import descriptor_pool_of, message_named
from sluice.schemas.serdes import RegistryError, registry_client
from sluice.serde import SerdeError

__all__ = [
    "FORMATS",
    "FieldFormat",
    "Resolved",
    "fetch_references",
    "resolve",
    "subject_columns",
]

#: The formats by option value, with Confluent's ``schemaType``.
FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}


@dataclass(frozen=True)
class FieldFormat:
    """What the options say about the key's or the value's format (checked, picklable)."""

    field: str  # "key" or "value"
    format: str  # a key of FORMATS
    subject: str | None  # None: <topic>-<field> (TopicNameStrategy)
    version: int | None  # None: the latest (unless schema_id)
    schema_id: int | None
    message: str | None  # Protobuf: the reader's message (default: the first)


@dataclass(frozen=True)
class Resolved:
    """The reader schema of a key or value column, as planning found it (picklable)."""

    field: str
    format: str
    schema: str  # the reader schema's text
    references: tuple[tuple[str, str], ...]  # resolved references (name, text), transitively
    message: str  # Protobuf: the reader's message, full name ("" otherwise)
    spark_type: DataType
    nullable: bool

    @property
    def column(self) -> StructField:
        """The column of the source's schema (nullable: a tombstone has no value)."""
        return StructField(self.field, self.spark_type, True)


def resolve(wanted: FieldFormat, topics: tuple[str, ...], url: str, auth: str | None) -> Resolved:
    """The reader schema of *wanted*, from the registry at *url*; ``ValueError`` says why not."""
    option = "keySubject" if wanted.field == "key" else "valueSubject"
    subject = wanted.subject
    if subject is None and wanted.schema_id is None:
        if len(topics) != 1:
            raise ValueError(
                f"option '{option}' must be set: the {wanted.field}s' subject is "
                f"<topic>-{wanted.field} only when one topic is subscribed by name"
            )
        subject = f"{topics[0]}-{wanted.field}"
    client = registry_client(url, auth)
    try:
        schema, where = _reader_schema(client, wanted, subject, url)
        if schema.schema_type != FORMATS[wanted.format]:
            raise ValueError(
                f"{where} is a {schema.schema_type} schema, not {wanted.format} "
                f"(option '{wanted.field}Format')"
            )
        references = tuple(sorted(fetch_references(client, schema, url).items()))
    finally:
        client.close()
    try:
        spark_type, nullable, message = _spark_type(
            wanted.format, schema.schema_str, dict(references), wanted.message
        )
    except (ValueError, SerdeError) as error:
        raise ValueError(f"{where} has no Spark type: {error}") from None
    return Resolved(
        wanted.field,
        wanted.format,
        schema.schema_str,
        references,
        message,
        spark_type,
        nullable,
    )


def _reader_schema(client: Any, wanted: FieldFormat, subject: str | None, url: str) -> Any:
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    if wanted.schema_id is not None:
        where = f"schema id {wanted.schema_id}"
    elif wanted.version is not None:
        where = f"version {wanted.version} of subject {subject!r}"
    else:
        where = f"the latest version of subject {subject!r}"
    try:
        if wanted.schema_id is not None:
            return client.get_schema(wanted.schema_id), where
        if wanted.version is not None:
            return client.get_version(subject, wanted.version).schema, where
        return client.get_latest_version(subject).schema, where
    except SchemaRegistryError as error:
        raise ValueError(
            f"schema registry {url}: {where}: {error.error_message} (error {error.error_code})"
        ) from None
    except Exception as error:
        raise ValueError(f"schema registry {url} is unreachable: {error}") from None


def fetch_references(client: Any, schema: Any, url: str) -> dict[str, str]:
    """Every schema *schema* references, by reference name, transitively."""
    found: dict[str, str] = {}
    pending = list(schema.references or [])
    while pending:
        reference = pending.pop()
        if reference.name in found:
            continue
        try:
            registered = client.get_version(reference.subject, reference.version)
        except Exception as error:
            raise RegistryError(
                f"schema registry {url}: reference {reference.name!r} (subject "
                f"{reference.subject!r} version {reference.version}): {error}"
            ) from None
        found[reference.name] = registered.schema.schema_str
        pending.extend(registered.schema.references or [])
    return found


def subject_columns(url: str, auth: str | None, subject: str, version: int | None) -> StructType:
    """The columns a value of *subject* (its *version*, or the latest) becomes: the Spark type
    of its schema, which must be a struct (an Avro record, a Protobuf message, a JSON Schema
    object with properties); ``ValueError`` says why not."""
    fmt = next(iter(FORMATS))  # checked below, by the schema's own type
    client = registry_client(url, auth)
    try:
        wanted = FieldFormat("value", fmt, subject, version, None, None)
        schema, where = _reader_schema(client, wanted, subject, url)
        references = fetch_references(client, schema, url)
    finally:
        client.close()
    by_type = {schema_type: name for name, schema_type in FORMATS.items()}
    if schema.schema_type not in by_type:
        raise ValueError(f"{where} is a {schema.schema_type} schema, which has no Spark type")
    try:
        kind, _, _ = _spark_type(by_type[schema.schema_type], schema.schema_str, references, None)
    except (ValueError, SerdeError) as error:
        raise ValueError(f"{where} has no Spark type: {error}") from None
    if not isinstance(kind, StructType) or not kind.fields:
        raise ValueError(f"{where} is not a record of fields but {kind.simpleString()}")
    return kind


def _spark_type(
    fmt: str, text: str, references: dict[str, str], message: str | None
) -> tuple[DataType, bool, str]:
    if fmt == "avro":
        named: dict[str, Any] = {}
        for body in references.values():
            avro_named_types(json.loads(body), named)
        kind, nullable = avro_type(json.loads(text), named)
        return kind, nullable, ""
    if fmt == "json-schema":
        kind, nullable = json_schema_type(json.loads(text))
        return kind, nullable, ""
    pool, names = descriptor_pool_of(text, references)
    full = message_named(names, message)
    kind, nullable = protobuf_type(pool.FindMessageTypeByName(full))
    return kind, nullable, full
