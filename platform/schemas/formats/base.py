"""What every schema format gives the registry: parsing, a canonical form, compatibility.

A format (``AVRO``, ``JSON``, ``PROTOBUF``: Confluent's ``schemaType`` names) turns the text a
client registers into a :class:`ParsedSchema`, or raises :class:`InvalidSchemaError` saying why
(the registry answers 42201 with that message). Referenced schemas arrive already resolved:
``references`` maps each reference's *name* (Avro: the referenced type's full name; JSON Schema:
the ``$ref`` URL; Protobuf: the import path) to its schema text, transitively, so a format never
talks to the registry.

Compatibility is one question, asked in one direction: can a *reader* schema read data written
with a *writer* schema? :func:`sluice.schemas.compatibility.check` asks it for each level
(BACKWARD: the new schema reads the old; FORWARD: the old reads the new; FULL: both;
``_TRANSITIVE``: against every earlier version, not just the latest), as Confluent's
``CompatibilityChecker`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from sluice.errors import SluiceError

__all__ = ["Incompatibility", "InvalidSchemaError", "ParsedSchema", "SchemaFormat"]


class InvalidSchemaError(SluiceError):
    """A schema text does not parse, or breaks its format's rules (Confluent's 42201)."""


@dataclass(frozen=True, slots=True)
class Incompatibility:
    """One reason a reader cannot read a writer's data, as Confluent reports it.

    ``kind`` is Confluent's error type (``READER_FIELD_MISSING_DEFAULT_VALUE``,
    ``TYPE_MISMATCH``, ``FIELD_KIND_CHANGED``…), ``path`` where in the schema (``/fields/1``,
    ``#/properties/age``, ``#/Order/3``), ``description`` the sentence a user reads.
    """

    kind: str
    path: str
    description: str

    def __str__(self) -> str:
        return f"{{errorType:'{self.kind}', description:'{self.description}'}}"


class ParsedSchema(Protocol):
    """A parsed schema of one format."""

    @property
    def schema_type(self) -> str:
        """``AVRO``, ``JSON`` or ``PROTOBUF``."""

    @property
    def canonical(self) -> str:
        """The text stored and returned; two registrations with the same canonical text (and
        references) are the same schema and share one id."""

    def normalized(self) -> ParsedSchema:
        """The schema in its normal form (Confluent's ``?normalize=true``): semantically equal
        schemas normalize to the same canonical text."""

    def record_names(self) -> list[str]:
        """The full names of the records the schema defines, the first one the main record
        (RecordNameStrategy's subject; a JSON schema's ``title``)."""


class SchemaFormat(Protocol):
    """One schema format: parse, and compare two parsed schemas of it."""

    @property
    def name(self) -> str:
        """Confluent's ``schemaType``: ``AVRO``, ``JSON`` or ``PROTOBUF``."""

    def parse(self, text: str, references: Mapping[str, str]) -> ParsedSchema:
        """Parse *text* with its resolved *references*; :class:`InvalidSchemaError` if invalid."""

    def read_errors(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        """Why *reader* cannot read data written with *writer* (empty: it can)."""
