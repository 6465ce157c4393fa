"""The ``AVRO`` format: Avro schemas as Confluent Schema Registry (Java Avro 1.11) treats them.

Parsing goes through fastavro (:func:`fastavro.schema.parse_schema`, whose parsed form the
serializers use), then through the rules Java's ``Schema.Parser`` adds and fastavro lacks
(valid names, unique fields and symbols, unions without nested unions or duplicates, a field
default valid for the first branch of its union), so that a schema Confluent refuses is refused
here with a message in the same words.

Three texts of a schema:

- :attr:`AvroSchema.canonical` is Java's ``Schema.toString()``, what Confluent stores and
  returns: compact JSON, each attribute in Java's order (``type``, ``name``, ``namespace``,
  ``doc``, ``fields``, custom properties, ``aliases``), a named type written in full the first
  time and by name afterwards (a referenced type always by name);
- :meth:`AvroSchema.normalized` is Confluent's ``AvroSchema.normalize()``: names fully
  qualified, ``name`` before ``type``, custom properties sorted, docs, aliases (sorted) and
  defaults kept, every field with its ``order``;
- the text the client sent is not kept.

Compatibility is Avro's schema resolution, checked as Java's ``SchemaCompatibility`` does
(:meth:`AvroFormat.read_errors`, through :mod:`sluice.schemas.formats.avro_compatibility`): the
same incompatibility types, locations (``/fields/1/type``) and messages (``reader type: INT not
compatible with writer type: STRING``), under Confluent's descriptions.

>>> order = FORMAT.parse('{"type": "record", "name": "Order", "namespace": "shop",'
...                      ' "fields": [{"name": "id", "type": "long"}]}', {})
>>> order.canonical
'{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"}]}'
>>> order.record_names()
['shop.Order']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from fastavro.schema import parse_schema

from sluice.schemas.formats.avro_compatibility import AvroIncompatibility, resolution_errors
from sluice.schemas.formats.base import Incompatibility, InvalidSchemaError, ParsedSchema

__all__ = ["FORMAT", "AvroFormat", "AvroIncompatibility", "AvroSchema"]

_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_NAMED = ("record", "error", "enum", "fixed")
_ORDERS = ("ascending", "descending", "ignore")
# Attributes Java's parser reads itself; anything else on a schema or field is a custom property.
_SCHEMA_RESERVED = frozenset(
    {"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"}
)
_ENUM_RESERVED = _SCHEMA_RESERVED | {"default"}
_FIELD_RESERVED = frozenset({"default", "doc", "name", "order", "type", "aliases"})
_INT_RANGE = (-(2**31), 2**31 - 1)
# Deeper schemas are refused: comparing and writing them recurse, and no real schema comes close.
_MAX_DEPTH = 100
_LONG_RANGE = (-(2**63), 2**63 - 1)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# The model: what Java's Schema objects hold, built from the JSON by _Parser; each type follows
# the protocol of its type_name in sluice.schemas.formats.avro_compatibility.


@dataclass(eq=False)
class _Primitive:
    type: str
    props: dict[str, Any]

    @property
    def type_name(self) -> str:
        return self.type.upper()


@dataclass(eq=False)
class _Array:
    items: _Node
    props: dict[str, Any]

    @property
    def type_name(self) -> str:
        return "ARRAY"


@dataclass(eq=False)
class _Map:
    values: _Node
    props: dict[str, Any]

    @property
    def type_name(self) -> str:
        return "MAP"


@dataclass(eq=False)
class _Union:
    branches: list[_Node]

    @property
    def type_name(self) -> str:
        return "UNION"


@dataclass(eq=False)
class _Field:
    name: str
    type: _Node
    doc: str | None
    has_default: bool
    default: Any
    order: str
    aliases: list[str]
    props: dict[str, Any]


@dataclass(eq=False)
class _Named:
    """A record (or error), enum or fixed; the same object wherever its name is used."""

    kind: str  # "record", "error", "enum", "fixed"
    name: str
    space: str | None
    doc: str | None
    aliases: list[str]  # full names
    props: dict[str, Any]
    fields: list[_Field] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    enum_default: str | None = None
    size: int = 0

    @property
    def type_name(self) -> str:
        return "RECORD" if self.kind == "error" else self.kind.upper()

    @property
    def full_name(self) -> str:
        return self.name if self.space is None else f"{self.space}.{self.name}"

    def qualified(self, default_space: str | None) -> str:
        """Java's ``Name.getQualified``: the short name within its own namespace."""
        return self.name if self.space is None or self.space == default_space else self.full_name


_Node = _Primitive | _Array | _Map | _Union | _Named


def _split_name(name: str, space: str | None) -> tuple[str, str | None]:
    """Java's ``Schema.Name(name, space)``: a dotted name carries its own namespace."""
    if "." in name:
        space, _, name = name.rpartition(".")
    _validate_name(name)
    return name, space or None


def _validate_name(name: str) -> str:
    """Java's ``Schema.validateName``."""
    if not name:
        raise InvalidSchemaError("Empty name")
    if not (name[0].isalpha() or name[0] == "_"):
        raise InvalidSchemaError(f"Illegal initial character: {name}")
    if not all(c.isalnum() or c == "_" for c in name[1:]):
        raise InvalidSchemaError(f"Illegal character in: {name}")
    return name


def _text(node: Mapping[str, Any], key: str, message: str) -> str:
    value = node.get(key)
    if not isinstance(value, str):
        raise InvalidSchemaError(f"{message}: {_dumps(node)}")
    return value


def _optional_text(node: Mapping[str, Any], key: str) -> str | None:
    value = node.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidSchemaError(f"{key} must be a string: {_dumps(node)}")
    return value


def _text_list(node: Mapping[str, Any], key: str) -> list[str]:
    value = node.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidSchemaError(f"{key} not an array of strings: {_dumps(node)}")
    return list(dict.fromkeys(value))


class _Parser:
    """Java's ``Schema.parse(JsonNode, Names)`` over already-decoded JSON."""

    def __init__(self, known: Mapping[str, _Named]) -> None:
        self.names: dict[str, _Named] = dict(known)
        self.defined: list[_Named] = []
        self.depth = 0

    def parse(self, node: Any, space: str | None) -> _Node:
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                raise InvalidSchemaError(f"Schema nested deeper than {_MAX_DEPTH} levels")
            return self._parse(node, space)
        finally:
            self.depth -= 1

    def _parse(self, node: Any, space: str | None) -> _Node:
        if isinstance(node, str):
            return self._lookup(node, space)
        if isinstance(node, list):
            return self._union(node, space)
        if not isinstance(node, dict):
            raise InvalidSchemaError(f"Not a schema: {_dumps(node)}")
        kind = node.get("type")
        if not isinstance(kind, str):
            raise InvalidSchemaError(f"No type: {_dumps(node)}")
        if kind in _PRIMITIVES:
            return _Primitive(kind, _props(node, {"type"}))
        if kind in _NAMED:
            return self._named(node, kind, space)
        if kind == "array":
            if "items" not in node:
                raise InvalidSchemaError(f"Array has no items type: {_dumps(node)}")
            return _Array(self.parse(node["items"], space), _props(node, {"type", "items"}))
        if kind == "map":
            if "values" not in node:
                raise InvalidSchemaError(f"Map has no values type: {_dumps(node)}")
            return _Map(self.parse(node["values"], space), _props(node, {"type", "values"}))
        return self._lookup(kind, space)

    def _lookup(self, name: str, space: str | None) -> _Node:
        if name in _PRIMITIVES:
            return _Primitive(name, {})
        qualified = name if "." in name or not space else f"{space}.{name}"
        found = self.names.get(qualified) or self.names.get(name)
        if found is None:
            raise InvalidSchemaError(f'Undefined name: "{name}"')
        return found

    def _union(self, branches: list[Any], space: str | None) -> _Union:
        parsed: list[_Node] = []
        seen: set[str] = set()
        for branch in branches:
            node = self.parse(branch, space)
            if isinstance(node, _Union):
                raise InvalidSchemaError(f"Nested union: {_dumps(branches)}")
            key = node.full_name if isinstance(node, _Named) else node.type_name.lower()
            if key in seen:
                raise InvalidSchemaError(f"Duplicate in union:{key}")
            seen.add(key)
            parsed.append(node)
        return _Union(parsed)

    def _named(self, node: dict[str, Any], kind: str, space: str | None) -> _Named:
        own_space = _optional_text(node, "namespace")
        name, name_space = _split_name(
            _text(node, "name", "No name in schema"),
            own_space if own_space is not None else space,
        )
        aliases = [
            _qualify(alias, name_space)
            for alias in _text_list(node, "aliases")
            if _validate_name(alias.rpartition(".")[2])
        ]
        reserved = _ENUM_RESERVED if kind == "enum" else _SCHEMA_RESERVED
        named = _Named(kind, name, name_space, _optional_text(node, "doc"), aliases,
                       _props(node, reserved))  # fmt: skip
        if named.full_name in self.names:
            raise InvalidSchemaError(f"Can't redefine: {named.full_name}")
        self.names[named.full_name] = named
        self.defined.append(named)
        if kind == "enum":
            self._enum(named, node)
        elif kind == "fixed":
            size = node.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise InvalidSchemaError(f"Invalid or no size: {_dumps(node)}")
            named.size = size
        else:
            self._record(named, node)
        return named

    def _enum(self, named: _Named, node: dict[str, Any]) -> None:
        symbols = node.get("symbols")
        if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
            raise InvalidSchemaError(f"Enum has no symbols: {_dumps(node)}")
        for symbol in symbols:
            _validate_name(symbol)
        if len(set(symbols)) != len(symbols):
            duplicate = next(s for s in symbols if symbols.count(s) > 1)
            raise InvalidSchemaError(f"Duplicate enum symbol: {duplicate}")
        named.symbols = list(symbols)
        default = _optional_text(node, "default")
        if default is not None and default not in symbols:
            raise InvalidSchemaError(
                f"The Enum Default: {default} is not in the enum symbol set: [{', '.join(symbols)}]"
            )
        named.enum_default = default

    def _record(self, named: _Named, node: dict[str, Any]) -> None:
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise InvalidSchemaError(f"Record has no fields: {_dumps(node)}")
        seen: set[str] = set()
        for spec in fields:
            if not isinstance(spec, dict):
                raise InvalidSchemaError(f"Not a field: {_dumps(spec)}")
            name = _validate_name(_text(spec, "name", "No field name"))
            if "type" not in spec:
                raise InvalidSchemaError(f"No field type: {_dumps(spec)}")
            ftype = self.parse(spec["type"], named.space)
            order = spec.get("order", "ascending")
            order = order.lower() if isinstance(order, str) else order
            if order not in _ORDERS:
                raise InvalidSchemaError(f"Invalid order {_dumps(order)} of field {name}")
            if name in seen:
                raise InvalidSchemaError(
                    f"Duplicate field {name} in record {named.full_name}: {_dumps(spec)}"
                )
            seen.add(name)
            has_default = "default" in spec
            if has_default and not _valid_default(ftype, spec["default"]):
                raise InvalidSchemaError(
                    f"Invalid default for field {name}: {_dumps(spec['default'])} "
                    f"not a {_Writer(set()).text(ftype)}"
                )
            named.fields.append(
                _Field(
                    name,
                    ftype,
                    _optional_text(spec, "doc"),
                    has_default,
                    spec.get("default"),
                    order,
                    _text_list(spec, "aliases"),
                    _props(spec, _FIELD_RESERVED),
                )
            )


def _qualify(name: str, space: str | None) -> str:
    return name if "." in name or not space else f"{space}.{name}"


def _props(node: Mapping[str, Any], reserved: frozenset[str] | set[str]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in reserved}


def _valid_default(node: _Node, value: Any) -> bool:
    """Java's ``Schema.isValidDefault`` (Avro 1.12: a union's default may be of any branch)."""
    if isinstance(node, _Union):
        return any(_valid_default(branch, value) for branch in node.branches)
    if isinstance(node, _Array):
        return isinstance(value, list) and all(_valid_default(node.items, v) for v in value)
    if isinstance(node, _Map):
        return isinstance(value, dict) and all(
            _valid_default(node.values, v) for v in value.values()
        )
    if isinstance(node, _Named):
        if node.kind in ("enum", "fixed"):
            return isinstance(value, str)
        return isinstance(value, dict) and all(
            _valid_default(f.type, value[f.name]) if f.name in value else f.has_default
            for f in node.fields
        )
    kind = node.type
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind in ("int", "long"):
        low, high = _INT_RANGE if kind == "int" else _LONG_RANGE
        return isinstance(value, int) and low <= value <= high
    if kind in ("float", "double"):
        return isinstance(value, int | float)
    return isinstance(value, str)  # bytes, string


# ---------------------------------------------------------------------------------------------
# The two texts: Java's Schema.toString() and Confluent's normalized form.


class _Writer:
    """Java's ``Schema.toJson``: named types in full once, then by (qualified) name."""

    def __init__(self, known: set[str]) -> None:
        self.written = set(known)
        self.space: str | None = None

    def text(self, node: _Node) -> str:
        return _dumps(self.json(node))

    def json(self, node: _Node) -> Any:
        if isinstance(node, _Primitive):
            return {"type": node.type, **node.props} if node.props else node.type
        if isinstance(node, _Array):
            return {"type": "array", "items": self.json(node.items), **node.props}
        if isinstance(node, _Map):
            return {"type": "map", "values": self.json(node.values), **node.props}
        if isinstance(node, _Union):
            return [self.json(b) for b in node.branches]
        if node.full_name in self.written:
            return node.qualified(self.space)
        self.written.add(node.full_name)
        out: dict[str, Any] = {"type": node.kind, "name": node.name}
        if node.space is not None:
            if node.space != self.space:
                out["namespace"] = node.space
        elif self.space is not None:
            out["namespace"] = ""
        if node.doc is not None:
            out["doc"] = node.doc
        if node.kind == "enum":
            out["symbols"] = node.symbols
            if node.enum_default is not None:
                out["default"] = node.enum_default
        elif node.kind == "fixed":
            out["size"] = node.size
        else:
            saved, self.space = self.space, node.space
            out["fields"] = [self._field(f) for f in node.fields]
            self.space = saved
        out.update(node.props)
        if node.aliases:
            out["aliases"] = [_short(alias, node.space) for alias in node.aliases]
        return out

    def _field(self, f: _Field) -> dict[str, Any]:
        out: dict[str, Any] = {"name": f.name, "type": self.json(f.type)}
        if f.doc is not None:
            out["doc"] = f.doc
        if f.has_default:
            out["default"] = f.default
        if f.order != "ascending":
            out["order"] = f.order
        if f.aliases:
            out["aliases"] = f.aliases
        out.update(f.props)
        return out


def _short(full_name: str, space: str | None) -> str:
    alias_space, _, name = full_name.rpartition(".")
    return name if (alias_space or None) == space or not alias_space else full_name


class _Normalizer:
    """Confluent's ``AvroSchemaUtils.toNormalizedString``: Avro's canonical form, props kept."""

    def __init__(self, known: set[str]) -> None:
        self.written = set(known)

    def text(self, node: _Node) -> str:
        return "".join(self._parts(node))

    def _parts(self, node: _Node) -> Iterator[str]:
        if isinstance(node, _Union):
            yield "["
            for i, branch in enumerate(node.branches):
                yield "," if i else ""
                yield from self._parts(branch)
            yield "]"
        elif isinstance(node, _Array):
            yield '{"type":"array","items":'
            yield from self._parts(node.items)
            yield _sorted_props(node.props) + "}"
        elif isinstance(node, _Map):
            yield '{"type":"map","values":'
            yield from self._parts(node.values)
            yield _sorted_props(node.props) + "}"
        elif isinstance(node, _Primitive):
            yield from self._primitive(node)
        elif node.full_name in self.written:
            yield _dumps(node.full_name)
        else:
            yield from self._named(node)

    def _primitive(self, node: _Primitive) -> Iterator[str]:
        if not node.props:
            yield f'"{node.type}"'
            return
        yield f'{{"type":"{node.type}"'
        props = dict(node.props)
        if _is_logical(node.type, props):
            yield _logical_props(props)
        yield _sorted_props(props) + "}"

    def _named(self, node: _Named) -> Iterator[str]:
        self.written.add(node.full_name)
        kind = "record" if node.kind == "error" else node.kind
        yield f'{{"name":{_dumps(node.full_name)},"type":"{kind}"'
        props = dict(node.props)
        if node.kind == "enum":
            yield f',"symbols":{_dumps(node.symbols)}'
        elif node.kind == "fixed":
            yield f',"size":{node.size}'
            if _is_logical("fixed", props, node.size):
                yield _logical_props(props)
        else:
            yield ',"fields":['
            for i, f in enumerate(node.fields):
                yield f'{"," if i else ""}{{"name":{_dumps(f.name)},"type":'
                yield from self._parts(f.type)
                yield f',"order":"{f.order.upper()}"'
                if f.doc is not None:
                    yield f',"doc":{_dumps(f.doc)}'
                if f.aliases:
                    yield f',"aliases":{_dumps(sorted(f.aliases))}'
                if f.has_default:
                    yield f',"default":{_dumps(f.default)}'
                yield _sorted_props(f.props) + "}"
            yield "]"
        if node.doc:
            yield f',"doc":{_dumps(node.doc)}'
        if node.aliases:
            yield f',"aliases":{_dumps(sorted(node.aliases))}'
        if node.kind == "enum" and node.enum_default is not None:
            yield f',"default":{_dumps(node.enum_default)}'
        yield _sorted_props(props) + "}"


# Java's logical types and the types they annotate; any other ``logicalType`` is a plain property.
_LOGICAL_TYPES = {
    "decimal": ("bytes", "fixed"),
    "big-decimal": ("bytes",),
    "uuid": ("string", "fixed"),
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "timestamp-nanos": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "local-timestamp-nanos": ("long",),
    "duration": ("fixed",),
}


def _is_logical(kind: str, props: Mapping[str, Any], size: int = 0) -> bool:
    """Whether Java reads a logical type here (an invalid one is ignored, kept as a property)."""
    name = props.get("logicalType")
    if not isinstance(name, str) or kind not in _LOGICAL_TYPES.get(name, ()):
        return False
    if name == "decimal":
        precision, scale = props.get("precision"), props.get("scale", 0)
        if not (
            _is_int(precision) and _is_int(scale) and 0 <= scale <= precision and precision > 0
        ):
            return False
        if kind == "fixed":  # Java: floor(log10(2^(8 * size - 1) - 1))
            return size > 0 and precision <= len(str(2 ** (8 * size - 1) - 1)) - 1
        return True
    if kind == "fixed":
        return size == (16 if name == "uuid" else 12)
    return True


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _logical_props(props: dict[str, Any]) -> str:
    """Confluent's ``setLogicalProps``: ``logicalType`` (and a decimal's precision and scale)
    first; they leave *props*."""
    logical = props.pop("logicalType")
    out = f',"logicalType":{_dumps(logical)}'
    if logical == "decimal":
        precision, scale = props.pop("precision", None), props.pop("scale", 0)
        out += f',"precision":{_dumps(precision)}'
        if scale:
            out += f',"scale":{_dumps(scale)}'
    return out


def _sorted_props(props: Mapping[str, Any]) -> str:
    return "".join(f",{_dumps(k)}:{_dumps(props[k])}" for k in sorted(props))


# ---------------------------------------------------------------------------------------------
# The parsed schema and the format.


@dataclass(frozen=True, eq=False)
class AvroSchema:
    """A parsed Avro schema; equal to another with the same canonical text and references.

    ``parsed`` is fastavro's parsed form (with the referenced named types), what
    :func:`fastavro.schemaless_writer` and :func:`fastavro.schemaless_reader` take.
    """

    canonical: str
    references: Mapping[str, str]
    parsed: Any
    _root: _Node
    _defined: tuple[_Named, ...]
    _referenced: frozenset[str]  # the named types the references define

    @property
    def schema_type(self) -> str:
        """Always ``AVRO``."""
        return "AVRO"

    def normalized(self) -> AvroSchema:
        """Confluent's normalized form: fully qualified names, attributes in a fixed order.

        >>> a = FORMAT.parse('{"namespace": "n", "name": "R", "type": "record", "fields": []}', {})
        >>> b = FORMAT.parse('{"type": "record", "name": "n.R", "fields": []}', {})
        >>> a.normalized().canonical == b.normalized().canonical
        True
        >>> a.normalized().canonical
        '{"type":"record","name":"R","namespace":"n","fields":[]}'
        """
        text = _Normalizer(set(self._referenced)).text(self._root)
        return FORMAT.parse(text, self.references)

    def record_names(self) -> list[str]:
        """Full names of the named types this schema defines, the top-level one first.

        >>> FORMAT.parse('"string"', {}).record_names()
        []
        """
        return [named.full_name for named in self._defined]

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, AvroSchema)
            and self.canonical == other.canonical
            and dict(self.references) == dict(other.references)
        )

    def __hash__(self) -> int:
        return hash(self.canonical)

    def __str__(self) -> str:
        return self.canonical


class AvroFormat:
    """Confluent's ``AVRO`` schema type."""

    @property
    def name(self) -> str:
        """``AVRO``."""
        return "AVRO"

    def parse(self, text: str, references: Mapping[str, str]) -> AvroSchema:
        """Parse *text*, using the named types of *references* (full name → schema text).

        >>> FORMAT.parse('{"type": "record", "name": "A", "fields": [{"name": "b", "type": "B"}]}',
        ...              {"B": '{"type": "fixed", "name": "B", "size": 4}'}).canonical
        '{"type":"record","name":"A","fields":[{"name":"b","type":"B"}]}'
        >>> FORMAT.parse('{"type": "record", "name": "1A", "fields": []}', {})
        Traceback (most recent call last):
        ...
        sluice.schemas.formats.base.InvalidSchemaError: Illegal initial character: 1A
        """
        fastavro_names: dict[str, Any] = {}
        known: dict[str, _Named] = {}
        pending = list(references.items())
        while pending:  # a reference may use the others: each waits for those it names
            failures: list[tuple[str, InvalidSchemaError]] = []
            progressed = False
            for ref_name, ref_text in list(pending):
                try:
                    ref_parser = _Parser(known)
                    ref_root = _guarded(ref_parser.parse, _decode(ref_text))
                except InvalidSchemaError as e:
                    failures.append((ref_name, e))
                    continue
                pending.remove((ref_name, ref_text))
                progressed = True
                try:
                    _fastavro_parse(_Writer(set(known)).text(ref_root), fastavro_names)
                except InvalidSchemaError as e:
                    raise InvalidSchemaError(f"Invalid reference {ref_name}: {e}") from None
                known.update((n.full_name, n) for n in ref_parser.defined)
            if not progressed:  # every one left names a type nobody defines
                ref_name, error = failures[0]
                raise InvalidSchemaError(f"Invalid reference {ref_name}: {error}")
        parser = _Parser(known)
        root = _guarded(parser.parse, _decode(text))
        canonical = _Writer(set(known)).text(root)
        parsed = _fastavro_parse(canonical, fastavro_names)
        return AvroSchema(
            canonical, dict(references), parsed, root, tuple(parser.defined), frozenset(known)
        )

    def read_errors(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        """Why *reader* cannot read what *writer* wrote, as Avro's ``SchemaCompatibility`` says.

        >>> old = FORMAT.parse('{"type": "record", "name": "R", "fields": []}', {})
        >>> new = FORMAT.parse('{"type": "record", "name": "R",'
        ...                    ' "fields": [{"name": "f", "type": "int"}]}', {})
        >>> FORMAT.read_errors(new, old)  # doctest: +NORMALIZE_WHITESPACE
        [AvroIncompatibility(kind='READER_FIELD_MISSING_DEFAULT_VALUE', path='/fields/0',
            description="The field 'f' at path '/fields/0' in the reader schema has no default
            value and is missing in the writer schema", additional_info='f')]
        >>> FORMAT.read_errors(old, new)
        []
        """
        if not isinstance(reader, AvroSchema) or not isinstance(writer, AvroSchema):
            raise InvalidSchemaError("both schemas must be AVRO schemas")
        try:
            return list(resolution_errors(reader._root, writer._root))
        except RecursionError:
            raise InvalidSchemaError("schemas nested too deeply to compare") from None


def _decode(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise InvalidSchemaError(f"Invalid JSON: {e}") from None


def _guarded(parse: Callable[[Any, str | None], _Node], decoded: Any) -> _Node:
    try:
        return parse(decoded, None)
    except RecursionError:
        raise InvalidSchemaError("Schema nested too deeply") from None


def _fastavro_parse(text: str, named: dict[str, Any]) -> Any:
    try:
        return parse_schema(json.loads(text), named_schemas=named)
    except Exception as e:  # fastavro raises SchemaParseException, UnknownType, KeyError…
        raise InvalidSchemaError(str(e) or type(e).__name__) from None


#: The format, as :func:`sluice.schemas.formats.format_named` finds it.
FORMAT = AvroFormat()
