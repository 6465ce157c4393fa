"""Compatibility levels, and the check a registry runs before it accepts a new schema version.

The levels are Confluent's (``CompatibilityLevel``), and :func:`check` answers as Confluent's
``CompatibilityChecker`` does, message for message, so that a client sees the same 409 body:

=======================  =============================================================
``NONE``                 no check
``BACKWARD``             the new schema reads data written with the latest one
``FORWARD``              the latest schema reads data written with the new one
``FULL``                 both
``*_TRANSITIVE``         the same against every earlier version, newest first
=======================  =============================================================

A format answers one question, "what stops *reader* reading *writer*'s data"
(:meth:`~sluice.schemas.formats.base.SchemaFormat.read_errors`); its descriptions name the two
schemas "reader" and "writer", and this module turns them into Confluent's "new" and "old".

>>> from sluice.schemas.formats import format_named
>>> avro = format_named("AVRO")
>>> v1 = avro.parse('{"type": "record", "name": "R", "fields": []}', {})
>>> v2 = avro.parse('{"type": "record", "name": "R", "fields": [{"name": "f", "type": "int"}]}',
...                 {})
>>> for line in check(avro, v2, [v1], CompatibilityLevel.BACKWARD, versions=[1]):
...     print(line)
{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'f' at path '/fields/0' \
in the new schema has no default value and is missing in the old schema', additionalInfo:'f'}
{oldSchemaVersion: 1}
{oldSchema: '{"type":"record","name":"R","fields":[]}'}
{validateFields: 'false', compatibility: 'BACKWARD'}
>>> check(avro, v2, [v1], CompatibilityLevel.FORWARD)
[]
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from enum import Enum

from sluice.errors import SluiceError
from sluice.schemas.formats.base import ParsedSchema, SchemaFormat

__all__ = ["CompatibilityLevel", "InvalidCompatibilityLevelError", "check"]

#: Confluent's ``SchemaValidatorBuilder.MAX_SCHEMA_SIZE_FOR_LOGGING``.
MAX_SCHEMA_SIZE_FOR_LOGGING = 10 * 1024


class InvalidCompatibilityLevelError(SluiceError):
    """Not a compatibility level's name (Confluent's 42203)."""


class CompatibilityLevel(Enum):
    """Confluent's compatibility levels; the value is the name the REST API uses."""

    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @classmethod
    def parse(cls, name: str) -> CompatibilityLevel:
        """The level called *name*, in any case (Confluent's ``CompatibilityLevel.forName``).

        >>> CompatibilityLevel.parse("full_transitive")
        <CompatibilityLevel.FULL_TRANSITIVE: 'FULL_TRANSITIVE'>
        >>> CompatibilityLevel.parse("sideways")
        Traceback (most recent call last):
        ...
        sluice.schemas.compatibility.InvalidCompatibilityLevelError: Invalid compatibility \
level. Valid values are none, backward, forward, full, backward_transitive, forward_transitive, \
and full_transitive
        """
        try:
            return cls(name.strip().upper())
        except (ValueError, AttributeError):
            raise InvalidCompatibilityLevelError(
                "Invalid compatibility level. Valid values are none, backward, forward, full, "
                "backward_transitive, forward_transitive, and full_transitive"
            ) from None

    @property
    def transitive(self) -> bool:
        """Whether every earlier version is checked, not only the latest.

        >>> [(level.value, level.backward, level.forward, level.transitive)
        ...  for level in (CompatibilityLevel.FULL_TRANSITIVE, CompatibilityLevel.FORWARD)]
        [('FULL_TRANSITIVE', True, True, True), ('FORWARD', False, True, False)]
        """
        return self.name.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        """Whether the new schema must read the old schemas' data."""
        return self.name.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        """Whether the old schemas must read the new schema's data."""
        return self.name.startswith(("FORWARD", "FULL"))


def check(
    fmt: SchemaFormat,
    new: ParsedSchema,
    previous: Sequence[ParsedSchema],
    level: CompatibilityLevel,
    *,
    versions: Sequence[int] | None = None,
    validate_fields: bool = False,
) -> list[str]:
    """Why *new* may not follow *previous* (oldest first) under *level*; empty if it may.

    The lines are Confluent's: each incompatibility, then ``{oldSchemaVersion: n}`` (when
    *versions*, parallel to *previous*, are given) and ``{oldSchema: '…'}`` for the schema it
    failed against, then ``{validateFields: 'false', compatibility: 'LEVEL'}``. Non-transitive
    levels compare with the latest version only; transitive ones with each version, newest
    first, stopping at the first that fails.

    >>> from sluice.schemas.formats import format_named
    >>> avro = format_named("AVRO")
    >>> ints = avro.parse('"int"', {})
    >>> longs = avro.parse('"long"', {})
    >>> check(avro, longs, [ints], CompatibilityLevel.BACKWARD)
    []
    >>> check(avro, longs, [ints], CompatibilityLevel.FULL)[0]  # doctest: +NORMALIZE_WHITESPACE
    "{errorType:'TYPE_MISMATCH', description:'The type (path '/') of a field in the old schema
    does not match with the new schema', additionalInfo:'reader type: INT not compatible with
    writer type: LONG'}"
    """
    if versions is not None and len(versions) != len(previous):
        raise ValueError("versions must be parallel to previous")
    if level is CompatibilityLevel.NONE or not previous:
        return []
    numbers: list[int | None] = list(versions) if versions is not None else [None] * len(previous)
    numbered = list(zip(numbers, previous, strict=True))
    numbered.reverse()  # newest first, as Confluent checks them
    if not level.transitive:
        numbered = numbered[:1]
    for version, old in numbered:
        messages: list[str] = []
        if level.forward:  # the old schema reads the new one's data
            messages += _messages(fmt, reader=old, writer=new, labels=("old", "new"))
            if messages and not level.backward:
                messages += _about(old, version)
        if level.backward:  # the new schema reads the old one's data
            backward = _messages(fmt, reader=new, writer=old, labels=("new", "old"))
            messages += backward + (_about(old, version) if backward else [])
        if messages:
            flag = "true" if validate_fields else "false"
            return [*messages, f"{{validateFields: '{flag}', compatibility: '{level.value}'}}"]
    return []


def _messages(
    fmt: SchemaFormat, *, reader: ParsedSchema, writer: ParsedSchema, labels: tuple[str, str]
) -> list[str]:
    if reader.schema_type != writer.schema_type:
        return ["Incompatible because of different schema type"]
    return [
        str(dataclasses.replace(found, description=_relabel(found.description, *labels)))
        for found in fmt.read_errors(reader, writer)
    ]


_ROLE = re.compile(r"\b(reader|writer)\b")


def _relabel(description: str, reader: str, writer: str) -> str:
    """Name the reader and writer schemas as Confluent does ("new", "old"); quoted paths and
    names are left alone.

    >>> _relabel("the reader schema lacks 'writer' of the writer schema", "new", "old")
    "the new schema lacks 'writer' of the old schema"
    """
    parts = description.split("'")
    for i in range(0, len(parts), 2):
        parts[i] = _ROLE.sub(lambda m: reader if m[1] == "reader" else writer, parts[i])
    return "'".join(parts)


def _about(old: ParsedSchema, version: int | None) -> list[str]:
    lines = [] if version is None else [f"{{oldSchemaVersion: {version}}}"]
    text = old.canonical
    if len(text) <= MAX_SCHEMA_SIZE_FOR_LOGGING:
        lines.append(f"{{oldSchema: '{text}'}}")
    else:
        lines.append(
            f"{{oldSchema: <truncated to {MAX_SCHEMA_SIZE_FOR_LOGGING} characters> "
            f"'{text[:MAX_SCHEMA_SIZE_FOR_LOGGING]}'}}"
        )
    return lines
