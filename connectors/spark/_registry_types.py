"""Spark types of registry schemas, as Spark's ``from_avro`` / ``from_protobuf`` map them.

Pure functions of a schema, used by the ``sluice`` source at planning time (the column type of a
``valueFormat`` / ``keyFormat``) and by ``spark-sink`` (``value.subject``: the table's columns).
Each returns ``(type, nullable)``; a schema Spark cannot type (a recursive record or message, a
decimal wider than 38 digits) is a ``ValueError`` naming where.

**Avro** (Spark's ``SchemaConverters.toSqlType``): record → struct (a field is nullable when its
type is a union with ``null``), ``int`` → int, ``long`` → bigint, ``float``, ``double``,
``boolean``, ``string`` (and ``uuid``) → string, ``bytes`` / ``fixed`` → binary, ``enum`` →
string, array → array, map → map<string, …>; logical types ``decimal(p, s)`` → decimal(p, s),
``date`` → date, ``timestamp-millis`` / ``-micros`` → timestamp, ``local-timestamp-*`` →
timestamp_ntz, ``time-millis`` → int and ``time-micros`` → bigint (the stored number). A union
``[null, T]`` is a nullable ``T``; ``[int, long]`` is bigint and ``[float, double]`` double;
any other union is a struct ``member0 … memberN`` (one nullable field per non-null branch, the
one the value took set), as Spark does.

>>> t, nullable = avro_type({"type": "record", "name": "Order", "fields": [
...     {"name": "id", "type": "long"},
...     {"name": "price", "type": {"type": "bytes", "logicalType": "decimal",
...                                "precision": 9, "scale": 2}},
...     {"name": "note", "type": ["null", "string"]},
...     {"name": "tag", "type": ["int", "string"]}]})
>>> t.simpleString(), nullable
('struct<id:bigint,price:decimal(9,2),note:string,tag:struct<member0:int,member1:string>>', False)
>>> [f.nullable for f in t.fields]
[False, False, True, False]

**Protobuf** (Spark's ``from_protobuf`` with ``upcast.unsigned.ints``): message → struct, every
field nullable; ``int32`` / ``sint32`` / ``sfixed32`` → int, ``uint32`` / ``fixed32`` and the
64-bit signed kinds → bigint, ``uint64`` / ``fixed64`` → decimal(20,0), ``float``, ``double``,
``bool`` → boolean, ``string``, ``bytes`` → binary, enum → string, ``repeated`` → array,
``map<K, V>`` → map, ``google.protobuf.Timestamp`` → timestamp; other messages (wrappers,
``Duration``) are structs of their fields.

**JSON Schema** (no Spark function reads it; the mapping follows ``from_json``'s types): an
``object`` with ``properties`` → struct of them in order (all nullable: a JSON field may be
absent), an ``object`` with only ``additionalProperties`` → map<string, …>, ``array`` → array of
``items``, ``integer`` → bigint, ``number`` → double, ``boolean``, ``string`` → string, except
``format: date`` → date and ``format: date-time`` → timestamp (RFC 3339's ``full-date`` and
``date-time``, which name one day and one instant exactly; a value that does not parse fails
the record). Connect's annotations written by Confluent's ``JsonSchemaConverter`` are honoured
(``connect.type`` int8/int16/int32/float32, ``title`` ``org.apache.kafka.connect.data.Date`` /
``Timestamp``). Local ``$ref`` s (``#/definitions/X``, ``#/$defs/X``) are followed; a type list
or ``oneOf`` / ``anyOf`` of ``null`` and one schema is that schema, nullable; anything else
(several types, ``allOf``, no ``type``) is a string holding the value's JSON text, as
``from_json`` reads a JSON value into a string column.

>>> json_schema_type({"type": "object", "properties": {
...     "id": {"type": "integer"}, "at": {"type": "string", "format": "date-time"},
...     "tags": {"type": "array", "items": {"type": "string"}},
...     "extra": {"oneOf": [{"type": "null"}, {"type": "number"}]}}})[0].simpleString()
'struct<id:bigint,at:timestamp,tags:array<string>,extra:double>'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

__all__ = [
    "avro_named_types",
    "avro_type",
    "is_avro_null",
    "is_multi_union",
    "json_schema_type",
    "protobuf_type",
]

_AVRO_PRIMITIVES: dict[str, DataType] = {
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}
_AVRO_NAMED = ("record", "error", "enum", "fixed")
_MAX_DECIMAL = 38


# -- Avro --------------------------------------------------------------------------------------


def avro_named_types(schema: Any, known: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every named type defined in *schema* (parsed JSON) by full name, added to *known*: the
    named types of a referenced schema, for :func:`avro_type` of the schema referencing it.

    >>> sorted(avro_named_types({"type": "record", "name": "A", "namespace": "n",
    ...     "fields": [{"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["X"]}}]}))
    ['n.A', 'n.E']
    """
    found = {} if known is None else known
    _AvroTyper(found, collect=True).walk(schema, None)
    return found


def avro_type(schema: Any, named: Mapping[str, Any] | None = None) -> tuple[DataType, bool]:
    """The Spark type of the Avro *schema* (parsed JSON), and whether it is nullable; *named*:
    named types it uses from its references (:func:`avro_named_types`).

    >>> avro_type({"type": "long", "logicalType": "timestamp-millis"})
    (TimestampType(), False)
    >>> avro_type(["null", "int", "long"])
    (LongType(), True)
    >>> avro_type({"type": "record", "name": "N", "fields": [{"name": "next", "type": "N"}]})
    Traceback (most recent call last):
    ...
    ValueError: Avro record N is recursive: Spark types cannot be
    """
    return _AvroTyper(dict(named or {}), collect=False).walk(schema, None)


def is_multi_union(branches: list[Any]) -> bool:
    """Whether an Avro union becomes a struct of ``member`` fields (see the module docstring).

    >>> is_multi_union(["null", "string"]), is_multi_union(["int", "long"])
    (False, False)
    >>> is_multi_union(["int", "string"])
    True
    """
    kinds = [_branch_kind(b) for b in branches if not is_avro_null(b)]
    if len(kinds) <= 1:
        return False
    return sorted(kinds) not in (["int", "long"], ["double", "float"])


def is_avro_null(branch: Any) -> bool:
    """Whether a union branch is ``null``."""
    return branch == "null" or (isinstance(branch, dict) and branch.get("type") == "null")


def _branch_kind(branch: Any) -> str:
    if isinstance(branch, str):
        return branch
    if isinstance(branch, dict) and isinstance(branch.get("type"), str):
        if branch.get("logicalType"):
            return f"{branch['type']}:{branch['logicalType']}"
        return str(branch["type"])
    return "complex"


class _AvroTyper:
    def __init__(self, known: dict[str, Any], *, collect: bool) -> None:
        self.known = known
        self.collect = collect
        self.open: list[str] = []  # records being typed (recursion)

    def walk(self, schema: Any, space: str | None) -> tuple[DataType, bool]:
        if isinstance(schema, list):
            return self.union(schema, space)
        if isinstance(schema, str):
            if schema == "null":
                return StringType(), True  # only inside unions in practice
            if schema in _AVRO_PRIMITIVES:
                return _AVRO_PRIMITIVES[schema], False
            return self.reference(schema, space)
        if not isinstance(schema, dict):
            raise ValueError(f"not an Avro schema: {schema!r}")
        kind = schema.get("type")
        if isinstance(kind, dict | list):
            return self.walk(kind, space)
        logical = self.logical(schema)
        if logical is not None:
            return logical, False
        if kind in _AVRO_NAMED:
            return self.named(schema, str(kind), space)
        if kind == "array":
            items, nullable = self.walk(schema.get("items"), space)
            return ArrayType(items, nullable), False
        if kind == "map":
            values, nullable = self.walk(schema.get("values"), space)
            return MapType(StringType(), values, nullable), False
        return self.walk(kind, space)

    def logical(self, schema: Mapping[str, Any]) -> DataType | None:
        kind, logical = schema.get("type"), schema.get("logicalType")
        if logical == "decimal" and kind in ("bytes", "fixed"):
            precision, scale = int(schema.get("precision", 0)), int(schema.get("scale", 0))
            if not 0 < precision <= _MAX_DECIMAL or not 0 <= scale <= precision:
                raise ValueError(
                    f"Avro decimal({precision}, {scale}) has no Spark type (precision 1..38)"
                )
            return DecimalType(precision, scale)
        table = {
            ("int", "date"): DateType(),
            ("long", "timestamp-millis"): TimestampType(),
            ("long", "timestamp-micros"): TimestampType(),
            ("long", "local-timestamp-millis"): TimestampNTZType(),
            ("long", "local-timestamp-micros"): TimestampNTZType(),
        }
        return table.get((str(kind), str(logical)))

    def reference(self, name: str, space: str | None) -> tuple[DataType, bool]:
        full = name if "." in name or not space else f"{space}.{name}"
        for candidate in (full, name):
            if candidate in self.open:
                raise ValueError(f"Avro record {candidate} is recursive: Spark types cannot be")
            if candidate in self.known:
                definition = self.known[candidate]
                return self.named(definition, str(definition.get("type")), _space(candidate))
        raise ValueError(f"Avro type {name!r} is not defined (a missing reference?)")

    def named(
        self, schema: Mapping[str, Any], kind: str, space: str | None
    ) -> tuple[DataType, bool]:
        name = str(schema.get("name", ""))
        namespace = schema.get("namespace", space) if "." not in name else _space(name)
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        self.known.setdefault(full, schema)
        if kind == "enum":
            return StringType(), False
        if kind == "fixed":
            return BinaryType(), False
        if full in self.open:
            raise ValueError(f"Avro record {full} is recursive: Spark types cannot be")
        self.open.append(full)
        try:
            fields = []
            for field in schema.get("fields", []):
                kind_, nullable = self.walk(field.get("type"), namespace or None)
                fields.append(StructField(str(field.get("name")), kind_, nullable))
        finally:
            self.open.pop()
        return StructType(fields), False

    def union(self, branches: list[Any], space: str | None) -> tuple[DataType, bool]:
        has_null = any(is_avro_null(b) for b in branches)
        others = [b for b in branches if not is_avro_null(b)]
        typed = [self.walk(b, space)[0] for b in others]
        if not typed:
            return StringType(), True
        if len(typed) == 1:
            return typed[0], True
        if not is_multi_union(branches):
            wide = LongType() if any(isinstance(t, LongType) for t in typed) else DoubleType()
            return wide, has_null
        members = [StructField(f"member{i}", t, True) for i, t in enumerate(typed)]
        return StructType(members), has_null


def _space(full_name: str) -> str | None:
    return full_name.rsplit(".", 1)[0] if "." in full_name else None


# -- Protobuf ----------------------------------------------------------------------------------

_TIMESTAMP = "google.protobuf.Timestamp"


def protobuf_type(message: Any) -> tuple[DataType, bool]:
    """The Spark type of a Protobuf message (a ``google.protobuf`` ``Descriptor``).

    >>> from sluice.schemas.serdes import message_class
    >>> cls = message_class('''syntax = "proto3"; import "google/protobuf/timestamp.proto";
    ...     message O { int64 id = 1; repeated string tags = 2; map<string, int32> n = 3;
    ...                 google.protobuf.Timestamp at = 4; enum K { A = 0; } K kind = 5; }''')
    >>> protobuf_type(cls.DESCRIPTOR)[0].simpleString()
    'struct<id:bigint,tags:array<string>,n:map<string,int>,at:timestamp,kind:string>'
    """
    return _message_type(message, []), True


def _message_type(message: Any, open_: list[str]) -> DataType:
    if message.full_name == _TIMESTAMP:
        return TimestampType()
    if message.full_name in open_:
        raise ValueError(
            f"Protobuf message {message.full_name} is recursive: Spark types cannot be"
        )
    open_.append(message.full_name)
    try:
        return StructType(
            [StructField(f.name, _field_type(f, open_), True) for f in message.fields]
        )
    finally:
        open_.pop()


def _field_type(field: Any, open_: list[str]) -> DataType:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        entry = field.message_type.fields_by_name
        key = _scalar_type(entry["key"], open_)
        return MapType(key, _scalar_type(entry["value"], open_), True)
    kind = _scalar_type(field, open_)
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:  # pragma: no cover - protobuf before 5.x
        repeated = field.label == field.LABEL_REPEATED
    return ArrayType(kind, True) if repeated else kind


def _scalar_type(field: Any, open_: list[str]) -> DataType:
    if field.message_type is not None:
        return _message_type(field.message_type, open_)
    if field.enum_type is not None:
        return StringType()
    found = _PROTO_SCALARS.get(field.type)
    if found is None:  # pragma: no cover - groups (proto2) only
        raise ValueError(f"Protobuf field {field.full_name} has a type Spark cannot read")
    return found


def _proto_scalars() -> dict[int, DataType]:
    from google.protobuf.descriptor import FieldDescriptor as F

    return {
        F.TYPE_INT32: IntegerType(),
        F.TYPE_SINT32: IntegerType(),
        F.TYPE_SFIXED32: IntegerType(),
        F.TYPE_UINT32: LongType(),
        F.TYPE_FIXED32: LongType(),
        F.TYPE_INT64: LongType(),
        F.TYPE_SINT64: LongType(),
        F.TYPE_SFIXED64: LongType(),
        F.TYPE_UINT64: DecimalType(20, 0),
        F.TYPE_FIXED64: DecimalType(20, 0),
        F.TYPE_FLOAT: FloatType(),
        F.TYPE_DOUBLE: DoubleType(),
        F.TYPE_BOOL: BooleanType(),
        F.TYPE_STRING: StringType(),
        F.TYPE_BYTES: BinaryType(),
    }


_PROTO_SCALARS = _proto_scalars()


# -- JSON Schema -------------------------------------------------------------------------------

_JSON_PRIMITIVES: dict[str, DataType] = {
    "integer": LongType(),
    "number": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
}
_CONNECT_TYPES: dict[str, DataType] = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "float32": FloatType(),
}
_CONNECT_LOGICAL: dict[str, DataType] = {
    "org.apache.kafka.connect.data.Date": DateType(),
    "org.apache.kafka.connect.data.Timestamp": TimestampType(),
}


def json_schema_type(schema: Any) -> tuple[DataType, bool]:
    """The Spark type of a JSON Schema (parsed JSON), and whether it is nullable.

    >>> json_schema_type({"type": ["string", "null"], "format": "date"})
    (DateType(), True)
    >>> json_schema_type({"type": "object", "additionalProperties": {"type": "integer"}})[0]
    MapType(StringType(), LongType(), True)
    >>> t = json_schema_type({"type": ["string", "integer"]})[0]
    >>> t, t == StringType()
    (StringType(), True)
    """
    return _JsonTyper(schema).walk(schema, [])


class _JsonTyper:
    def __init__(self, root: Any) -> None:
        self.root = root

    def walk(self, schema: Any, refs: list[str]) -> tuple[DataType, bool]:
        if not isinstance(schema, dict):
            return StringType(), True  # true / false schemas: anything
        ref = schema.get("$ref")
        if isinstance(ref, str):
            if ref in refs:
                raise ValueError(f"JSON Schema {ref} is recursive: Spark types cannot be")
            return self.walk(self.resolve(ref), [*refs, ref])
        for key in ("oneOf", "anyOf"):
            options = schema.get(key)
            if isinstance(options, list):
                real = [o for o in options if not _is_json_null(o)]
                if len(real) == 1:
                    return self.walk(real[0], refs)[0], True
                return StringType(), True
        kind = schema.get("type")
        nullable = True
        if isinstance(kind, list):
            real_kinds = [k for k in kind if k != "null"]
            if len(real_kinds) != 1:
                return StringType(), True
            kind = real_kinds[0]
        connect = _CONNECT_LOGICAL.get(str(schema.get("title")))
        if connect is not None and kind in ("integer", "number"):
            return connect, nullable
        if kind == "object":
            properties = schema.get("properties")
            if isinstance(properties, dict) and properties:
                fields = []
                for name, sub in properties.items():
                    fields.append(StructField(str(name), self.walk(sub, refs)[0], True))
                return StructType(fields), nullable
            extra = schema.get("additionalProperties")
            values = self.walk(extra, refs)[0] if isinstance(extra, dict) else StringType()
            return MapType(StringType(), values, True), nullable
        if kind == "array":
            items = schema.get("items")
            element = self.walk(items, refs)[0] if isinstance(items, dict) else StringType()
            return ArrayType(element, True), nullable
        if kind == "string":
            fmt = schema.get("format")
            if fmt == "date":
                return DateType(), nullable
            if fmt == "date-time":
                return TimestampType(), nullable
        if kind in ("integer", "number"):
            connect_type = _CONNECT_TYPES.get(str(schema.get("connect.type")))
            if connect_type is not None:
                return connect_type, nullable
        if isinstance(kind, str) and kind in _JSON_PRIMITIVES:
            return _JSON_PRIMITIVES[kind], nullable
        return StringType(), True

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise ValueError(
                f"JSON Schema $ref {ref!r} is not local to the schema: the Spark source follows "
                "only #/... pointers"
            )
        node = self.root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise ValueError(f"JSON Schema $ref {ref!r} points nowhere")
        return node


def _is_json_null(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"
