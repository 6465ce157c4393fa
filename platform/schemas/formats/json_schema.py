"""The ``JSON`` format: JSON Schema as Confluent Schema Registry treats it.

A schema is checked against its draft's metaschema (``$schema`` picks draft 4, 6, 7, 2019-09
or 2020-12; draft 7 when it names none, as Confluent) by jsonschema, and every ``$ref`` must
resolve, inside the schema or to one of its references (by URL, through ``referencing``).

- :attr:`JsonSchema.canonical` is the compact JSON of the schema as given (Confluent's
  ``jsonNode.toString()``);
- :meth:`JsonSchema.normalized` sorts every object's keys;
- :meth:`JsonSchema.record_names` is the ``title``, if any.

Compatibility follows Confluent's ``SchemaDiff``
(:mod:`sluice.schemas.formats.json_schema_diff`): the schema is read as the everit library
Confluent uses reads it (an ``ObjectSchema``, ``StringSchema``, ``CombinedSchema`` for a list of
types or ``anyOf``/``oneOf``/``allOf``, ``EnumSchema``…), the old (*writer*) and new (*reader*)
schemas are compared, and every difference not in Confluent's ``COMPATIBLE_CHANGES`` is an
incompatibility, named by its ``Difference.Type`` (``TYPE_CHANGED``,
``PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL``, ``MAX_LENGTH_DECREASED``…) at a JSON path
(``#/properties/age``).

>>> person = FORMAT.parse('{"title": "Person", "type": "object",'
...                       ' "properties": {"age": {"type": "integer"}}}', {})
>>> person.canonical
'{"title":"Person","type":"object","properties":{"age":{"type":"integer"}}}'
>>> older = FORMAT.parse('{"type": "object", "properties": {"age": {"type": "number"}}}', {})
>>> [(e.kind, e.path) for e in FORMAT.read_errors(person, older)]
[('TYPE_NARROWED', '#/properties/age')]
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7

from sluice.schemas.formats.base import Incompatibility, InvalidSchemaError, ParsedSchema
from sluice.schemas.formats.json_schema_diff import (
    COMPATIBLE_CHANGES,
    JsonSchemaIncompatibility,
    schema_differences,
)

__all__ = ["FORMAT", "JsonSchema", "JsonSchemaFormat", "JsonSchemaIncompatibility"]


def _dumps(value: Any, *, sort_keys: bool = False) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)


# ---------------------------------------------------------------------------------------------
# The parsed schema and the format.


@dataclass(frozen=True, eq=False)
class JsonSchema:
    """A parsed JSON Schema; equal to another with the same canonical text and references.

    ``schema`` is the decoded document; ``registry`` resolves its ``$ref`` s (to itself and to
    its references), as :mod:`jsonschema` validators take it.
    """

    canonical: str
    references: Mapping[str, str]
    schema: Any
    registry: Registry[Any]
    base_uri: str

    @property
    def schema_type(self) -> str:
        """Always ``JSON``."""
        return "JSON"

    def normalized(self) -> JsonSchema:
        """The schema with every object's keys sorted.

        >>> a = FORMAT.parse('{"type": "string", "maxLength": 3}', {})
        >>> b = FORMAT.parse('{"maxLength": 3, "type": "string"}', {})
        >>> a == b, a.normalized() == b.normalized()
        (False, True)
        """
        return FORMAT.parse(_dumps(self.schema, sort_keys=True), self.references)

    def record_names(self) -> list[str]:
        """The schema's ``title``, if it has one (Confluent's ``JsonSchema.name()``).

        >>> FORMAT.parse('{"title": "Order"}', {}).record_names()
        ['Order']
        >>> FORMAT.parse('true', {}).record_names()
        []
        """
        title = self.schema.get("title") if isinstance(self.schema, dict) else None
        return [title] if isinstance(title, str) else []

    def validator(self) -> Any:
        """A :mod:`jsonschema` validator of this schema's draft, its references resolved.

        >>> money = FORMAT.parse('{"$ref": "money.json"}', {"money.json": '{"minimum": 0}'})
        >>> money.validator().is_valid(3), money.validator().is_valid(-3)
        (True, False)
        """
        cls = _validator_class(self.schema)
        return cls(self.schema, registry=self.registry)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, JsonSchema)
            and self.canonical == other.canonical
            and dict(self.references) == dict(other.references)
        )

    def __hash__(self) -> int:
        return hash(self.canonical)

    def __str__(self) -> str:
        return self.canonical


def _validator_class(schema: Any) -> Any:
    with warnings.catch_warnings():  # an unknown $schema: draft 7, as Confluent's default
        warnings.simplefilter("ignore", DeprecationWarning)
        return validator_for(schema, default=jsonschema.Draft7Validator)


def _decode(text: str, what: str) -> Any:
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise InvalidSchemaError(f"Invalid JSON{what}: {e}") from None
    if not isinstance(decoded, dict | bool):
        raise InvalidSchemaError(f"Invalid schema{what}: a JSON Schema is an object or a boolean")
    return decoded


def _check(schema: Any, what: str) -> None:
    try:
        _validator_class(schema).check_schema(schema)
    except SchemaError as e:
        where = "/".join(str(p) for p in e.path)
        raise InvalidSchemaError(
            f"Invalid schema{what}: {e.message}" + (f" at #/{where}" if where else "")
        ) from None
    except RecursionError:
        raise InvalidSchemaError(f"Invalid schema{what}: nested too deeply") from None


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            elif key not in ("enum", "const", "default", "examples"):
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


class JsonSchemaFormat:
    """Confluent's ``JSON`` schema type."""

    @property
    def name(self) -> str:
        """``JSON``."""
        return "JSON"

    def parse(self, text: str, references: Mapping[str, str]) -> JsonSchema:
        """Parse *text*; *references* map each ``$ref`` URL to its schema text.

        >>> FORMAT.parse('{"$ref": "money.json"}', {"money.json": '{"type": "number"}'}).canonical
        '{"$ref":"money.json"}'
        >>> FORMAT.parse('{"type": "strin"}', {})
        Traceback (most recent call last):
        ...
        sluice.schemas.formats.base.InvalidSchemaError: Invalid schema: 'strin' is not valid \
under any of the given schemas at #/type
        """
        schema = _decode(text, "")
        _check(schema, "")
        resources: list[tuple[str, Resource[Any]]] = []
        for name, ref_text in references.items():
            what = f" (reference {name})"
            contents = _decode(ref_text, what)
            _check(contents, what)
            resources.append((name, Resource.from_contents(contents, default_specification=DRAFT7)))
        main = Resource.from_contents(schema, default_specification=DRAFT7)
        base_uri = main.id() or ""
        registry: Registry[Any] = Registry().with_resources([*resources, (base_uri, main)])
        try:
            _resolve_all(schema, registry.resolver(base_uri=base_uri), set())
        except Unresolvable as e:
            raise InvalidSchemaError(f"Invalid schema: cannot resolve $ref {e}") from None
        except RecursionError:
            raise InvalidSchemaError("Invalid schema: nested too deeply") from None
        return JsonSchema(_dumps(schema), dict(references), schema, registry, base_uri)

    def read_errors(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        """Why *reader* cannot read what *writer* wrote: Confluent's incompatible differences
        from *writer* (the original) to *reader* (the update).

        >>> closed = FORMAT.parse('{"type": "object", "properties": {"a": {"type": "string"}},'
        ...                       ' "additionalProperties": false}', {})
        >>> fewer = FORMAT.parse('{"type": "object", "additionalProperties": false}', {})
        >>> [str(e) for e in FORMAT.read_errors(fewer, closed)]  # doctest: +NORMALIZE_WHITESPACE
        ['Found incompatible change: {errorType:"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        description:"The reader schema has a closed content model and is missing a property or
        item present at path \\'#/properties/a\\' in the writer schema"}']
        """
        if not isinstance(reader, JsonSchema) or not isinstance(writer, JsonSchema):
            raise InvalidSchemaError("both schemas must be JSON schemas")
        try:
            differences = schema_differences(
                writer.schema,
                writer.registry.resolver(base_uri=writer.base_uri),
                reader.schema,
                reader.registry.resolver(base_uri=reader.base_uri),
            )
        except RecursionError:
            raise InvalidSchemaError("schemas nested too deeply to compare") from None
        return [
            difference for difference in differences if difference.kind not in COMPATIBLE_CHANGES
        ]


def _resolve_all(node: Any, resolver: Any, seen: set[int]) -> None:
    """Resolve every ``$ref`` reachable from *node*; :class:`Unresolvable` if one does not."""
    if id(node) in seen:
        return
    seen.add(id(node))
    for ref in _refs(node):
        resolved = resolver.lookup(ref)
        _resolve_all(resolved.contents, resolved.resolver, seen)


#: The format, as :func:`sluice.schemas.formats.format_named` finds it.
FORMAT = JsonSchemaFormat()
