"""Avro schema compatibility: a port of Java Avro's ``SchemaCompatibility``.

:func:`resolution_errors` walks a reader's schema against a writer's as Java's
``ReaderWriterCompatibilityChecker`` does (Avro's schema resolution) and answers every
incompatibility with Java's type (``TYPE_MISMATCH``, ``READER_FIELD_MISSING_DEFAULT_VALUE``…), its
location (``/fields/1/type``) and Avro's message (``reader type: INT not compatible with writer
type: STRING``), under Confluent's descriptions (``io.confluent.kafka.schemaregistry.avro``'s
``Difference``).

This module compares schemas already parsed only: it neither parses nor writes schema text, nor
decides which pairs of versions a compatibility level compares (the ``AVRO`` format,
:mod:`sluice.schemas.formats.avro`, parses the schemas and passes their parsed types here, which
follow :class:`AvroType` and the protocols beside it; :mod:`sluice.schemas.compatibility` applies
the level).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeGuard

from sluice.schemas.formats.base import Incompatibility

__all__ = [
    "ArrayType",
    "AvroField",
    "AvroIncompatibility",
    "AvroType",
    "MapType",
    "NamedType",
    "UnionType",
    "resolution_errors",
]


def resolution_errors(reader: AvroType, writer: AvroType) -> list[AvroIncompatibility]:
    """Why *reader* cannot read what *writer* wrote, as Java's ``SchemaCompatibility`` says; the
    same type object may appear in several places (a named type, recursion included).

    A ``RecursionError`` escapes for schemas nested deeper than the stack.

    >>> @dataclass
    ... class Primitive:
    ...     type_name: str
    >>> resolution_errors(Primitive("LONG"), Primitive("INT"))
    []
    >>> [e.additional_info for e in resolution_errors(Primitive("INT"), Primitive("STRING"))]
    ['reader type: INT not compatible with writer type: STRING']
    """
    return list(_Checker().check("", reader, writer, []).errors)


# ---------------------------------------------------------------------------------------------
# What the check reads of a parsed schema: what Java's Schema objects expose.


class AvroType(Protocol):
    """A parsed Avro schema; :attr:`type_name` says which protocol below it also follows."""

    @property
    def type_name(self) -> str:
        """Java's ``Schema.Type`` name: ``INT``, ``RECORD`` (an error too), ``UNION``…"""
        ...


class ArrayType(AvroType, Protocol):
    """An ``ARRAY``."""

    @property
    def items(self) -> AvroType:
        """The items' type."""
        ...


class MapType(AvroType, Protocol):
    """A ``MAP``."""

    @property
    def values(self) -> AvroType:
        """The values' type."""
        ...


class UnionType(AvroType, Protocol):
    """A ``UNION``."""

    @property
    def branches(self) -> Sequence[AvroType]:
        """The branches, in order."""
        ...


class AvroField(Protocol):
    """A record's field."""

    @property
    def name(self) -> str:
        """The field's name."""
        ...

    @property
    def type(self) -> AvroType:
        """The field's type."""
        ...

    @property
    def has_default(self) -> bool:
        """Whether the field has a default value."""
        ...

    @property
    def aliases(self) -> Sequence[str]:
        """The field's aliases."""
        ...


class NamedType(AvroType, Protocol):
    """A ``RECORD``, ``ENUM`` or ``FIXED``: what its :attr:`type_name` does not use is empty."""

    @property
    def name(self) -> str:
        """The short name."""
        ...

    @property
    def full_name(self) -> str:
        """The name with its namespace."""
        ...

    @property
    def aliases(self) -> Sequence[str]:
        """The aliases, full names."""
        ...

    @property
    def fields(self) -> Sequence[AvroField]:
        """A record's fields."""
        ...

    @property
    def symbols(self) -> Sequence[str]:
        """An enum's symbols."""
        ...

    @property
    def enum_default(self) -> str | None:
        """An enum's default symbol."""
        ...

    @property
    def size(self) -> int:
        """A fixed's size."""
        ...


_NAMED_TYPES = ("RECORD", "ENUM", "FIXED")


def _is_array(node: AvroType) -> TypeGuard[ArrayType]:
    return node.type_name == "ARRAY"


def _is_map(node: AvroType) -> TypeGuard[MapType]:
    return node.type_name == "MAP"


def _is_union(node: AvroType) -> TypeGuard[UnionType]:
    return node.type_name == "UNION"


def _is_named(node: AvroType) -> TypeGuard[NamedType]:
    return node.type_name in _NAMED_TYPES


# ---------------------------------------------------------------------------------------------
# Java's SchemaCompatibility.ReaderWriterCompatibilityChecker, under Confluent's descriptions
# (io.confluent.kafka.schemaregistry.avro.Difference).


@dataclass(frozen=True, slots=True)
class AvroIncompatibility(Incompatibility):
    """An Avro incompatibility; ``additional_info`` is Avro's own message."""

    additional_info: str

    def __str__(self) -> str:
        return (
            f"{{errorType:'{self.kind}', description:'{self.description}', "
            f"additionalInfo:'{self.additional_info}'}}"
        )


_DESCRIPTIONS = {
    "FIXED_SIZE_MISMATCH": "The size of FIXED type field at path '{path}' in the reader schema "
    "does not match with the writer schema",
    "TYPE_MISMATCH": "The type (path '{path}') of a field in the reader schema does not match "
    "with the writer schema",
    "NAME_MISMATCH": "The name of the schema has changed (path '{path}')",
    "MISSING_ENUM_SYMBOLS": "The reader schema is missing enum symbols '{info}' at path '{path}' "
    "in the writer schema",
    "MISSING_UNION_BRANCH": "The reader schema is missing a type inside a union field at path "
    "'{path}' in the writer schema",
    "READER_FIELD_MISSING_DEFAULT_VALUE": "The field '{info}' at path '{path}' in the reader "
    "schema has no default value and is missing in the writer schema",
}


@dataclass(frozen=True)
class _Result:
    compatible: bool
    errors: tuple[AvroIncompatibility, ...] = ()

    def merged(self, other: _Result) -> _Result:
        return _Result(self.compatible and other.compatible, self.errors + other.errors)


_COMPATIBLE = _Result(True)
_IN_PROGRESS = _Result(True)


def _incompatible(kind: str, info: str, location: list[str]) -> _Result:
    path = "/" + "/".join(t.replace("~", "~0").replace("/", "~1") for t in location[1:])
    description = _DESCRIPTIONS[kind].format(path=path, info=info)
    return _Result(False, (AvroIncompatibility(kind, path, description, info),))


_PROMOTIONS = {
    "long": {"int"},
    "float": {"int", "long"},
    "double": {"int", "long", "float"},
    "bytes": {"string"},
    "string": {"bytes"},
}


class _Checker:
    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], _Result] = {}

    def check(self, token: str, reader: AvroType, writer: AvroType, location: list[str]) -> _Result:
        return self.compare(reader, writer, [*location, token])

    def compare(self, reader: AvroType, writer: AvroType, location: list[str]) -> _Result:
        pair = (id(reader), id(writer))
        found = self.memo.get(pair)
        if found is not None:
            return _COMPATIBLE if found is _IN_PROGRESS else found
        self.memo[pair] = _IN_PROGRESS
        result = self._calculate(reader, writer, location)
        self.memo[pair] = result
        return result

    def _calculate(self, reader: AvroType, writer: AvroType, location: list[str]) -> _Result:
        rtype, wtype = reader.type_name, writer.type_name
        if rtype == wtype:
            return self._same_type(reader, writer, location)
        if _is_union(writer):  # the reader must read every branch the writer may use
            result = _COMPATIBLE
            for i, branch in enumerate(writer.branches):
                result = result.merged(self.check(str(i), reader, branch, location))
            return result
        if _is_union(reader):
            for branch in reader.branches:
                if self.compare(branch, writer, location).compatible:
                    return _COMPATIBLE
            return _incompatible(
                "MISSING_UNION_BRANCH", f"reader union lacking writer type: {wtype}", location
            )
        if wtype.lower() in _PROMOTIONS.get(rtype.lower(), ()):  # a primitive's promotions
            return _COMPATIBLE
        return _incompatible(
            "TYPE_MISMATCH",
            f"reader type: {rtype} not compatible with writer type: {wtype}",
            location,
        )

    def _same_type(self, reader: AvroType, writer: AvroType, location: list[str]) -> _Result:
        if _is_array(reader) and _is_array(writer):
            return self.check("items", reader.items, writer.items, location)
        if _is_map(reader) and _is_map(writer):
            return self.check("values", reader.values, writer.values, location)
        if _is_union(reader) and _is_union(writer):
            result = _COMPATIBLE
            for i, branch in enumerate(writer.branches):
                if not self.compare(reader, branch, [*location, str(i)]).compatible:
                    message = f"reader union lacking writer type: {branch.type_name}"
                    result = result.merged(
                        _incompatible("MISSING_UNION_BRANCH", message, [*location, str(i)])
                    )
            return result
        if _is_named(reader) and _is_named(writer):
            result = _names(reader, writer, location)
            if reader.type_name == "FIXED":
                if reader.size != writer.size:
                    message = f"expected: {writer.size}, found: {reader.size}"
                    result = result.merged(
                        _incompatible("FIXED_SIZE_MISMATCH", message, [*location, "size"])
                    )
                return result
            if reader.type_name == "ENUM":
                return result.merged(_symbols(reader, writer, location))
            return result.merged(self._fields(reader, writer, location))
        return _COMPATIBLE  # the same primitive type

    def _fields(self, reader: NamedType, writer: NamedType, location: list[str]) -> _Result:
        result = _COMPATIBLE
        by_name = {f.name: f for f in writer.fields}
        for i, rfield in enumerate(reader.fields):
            here = [*location, "fields", str(i)]
            wfield = by_name.get(rfield.name) or next(
                (by_name[a] for a in rfield.aliases if a in by_name), None
            )
            if wfield is not None:
                result = result.merged(self.check("type", rfield.type, wfield.type, here))
            elif not rfield.has_default:
                if (
                    _is_named(rfield.type)
                    and rfield.type.type_name == "ENUM"
                    and rfield.type.enum_default is not None
                ):
                    result = result.merged(self.check("type", rfield.type, writer, here))
                else:
                    result = result.merged(
                        _incompatible("READER_FIELD_MISSING_DEFAULT_VALUE", rfield.name, here)
                    )
        return result


def _names(reader: NamedType, writer: NamedType, location: list[str]) -> _Result:
    if reader.name == writer.name or writer.full_name in reader.aliases:
        return _COMPATIBLE
    return _incompatible("NAME_MISMATCH", f"expected: {writer.full_name}", [*location, "name"])


def _symbols(reader: NamedType, writer: NamedType, location: list[str]) -> _Result:
    missing = sorted(set(writer.symbols) - set(reader.symbols))
    if not missing or (reader.enum_default is not None and reader.enum_default in reader.symbols):
        return _COMPATIBLE
    return _incompatible(
        "MISSING_ENUM_SYMBOLS", "[" + ", ".join(missing) + "]", [*location, "symbols"]
    )
