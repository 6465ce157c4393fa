"""Decoded registry values as the values of their Spark types: what the ``sluice`` source's
:class:`~._registry_decode.ColumnDecoder` makes of fastavro's values, parsed JSON and Protobuf
messages before they fit the column (the types are :mod:`._registry_types`' mapping).

>>> from pyspark.sql.types import StringType, StructField, StructType
>>> adapt = json_adapter(StructType([StructField("note", StringType())]))
>>> adapt({"note": {"a": 1}, "extra": 2})
{'note': '{"a": 1}'}
>>> avro_adapter({"type": "string", "logicalType": "uuid"}, {})(
...     uuid.UUID("12345678-1234-5678-1234-567812345678"))
'12345678-1234-5678-1234-567812345678'
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructType

from sluice.connectors.spark._registry_types import is_avro_null, is_multi_union
from sluice.serde import SerdeError

__all__ = ["avro_adapter", "identity", "json_adapter", "protobuf_value"]


def identity(value: Any) -> Any:
    """*value* as it is (a Protobuf value, made by :func:`protobuf_value`, needs nothing)."""
    return value


# -- Avro values -------------------------------------------------------------------------------

_EPOCH_DAY = dt.date(1970, 1, 1)


def avro_adapter(schema: Any, named: dict[str, Any]) -> Callable[[Any], Any]:
    """A function turning fastavro's value of *schema* (read with ``return_named_type``) into
    the value of its Spark type: named types unwrapped, multi-type unions as ``member`` structs,
    times as the stored number, UUIDs as text."""
    return _AvroAdapter(dict(named)).make(schema, None)


class _AvroAdapter:
    def __init__(self, known: dict[str, Any]) -> None:
        self.known = known

    def make(self, schema: Any, space: str | None) -> Callable[[Any], Any]:
        if isinstance(schema, list):
            return self.union(schema, space)
        if isinstance(schema, str):
            if schema == "bytes":
                return _bytes_default
            full = schema if "." in schema or not space else f"{space}.{schema}"
            for candidate in (full, schema):
                if candidate in self.known:
                    return self.lazy(candidate)
            return _plain
        kind = schema.get("type")
        if isinstance(kind, dict | list):
            return self.make(kind, space)
        logical = schema.get("logicalType")
        if logical in ("time-millis", "time-micros") and kind in ("int", "long"):
            scale = 1000 if logical == "time-millis" else 1_000_000
            return lambda v: _time_number(v, scale)
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return _decimal_default(int(schema.get("scale", 0)))
        if kind == "long" and isinstance(logical, str) and "timestamp-" in logical:
            return _timestamp_default(logical)
        if kind in ("bytes", "fixed"):
            return _bytes_default
        if kind in ("record", "error", "enum", "fixed"):
            name = str(schema.get("name"))
            namespace = schema.get("namespace", space) if "." not in name else None
            full = name if "." in name or not namespace else f"{namespace}.{name}"
            self.known.setdefault(full, schema)
            if kind in ("enum", "fixed"):
                return _plain
            return self.record(schema, full)
        if kind == "array":
            items = self.make(schema.get("items"), space)
            return lambda v: None if v is None else [items(i) for i in v]
        if kind == "map":
            values = self.make(schema.get("values"), space)
            return lambda v: None if v is None else {k: values(i) for k, i in v.items()}
        return _plain

    def lazy(self, full: str) -> Callable[[Any], Any]:
        """A named type by reference (made when first used: records may nest themselves)."""
        made: list[Callable[[Any], Any]] = []

        def adapt(value: Any) -> Any:
            if not made:
                definition = self.known[full]
                made.append(self.make(definition, full.rsplit(".", 1)[0] if "." in full else None))
            return made[0](value)

        return adapt

    def record(self, schema: Any, full: str) -> Callable[[Any], Any]:
        space = full.rsplit(".", 1)[0] if "." in full else None
        fields = [(str(f["name"]), self.make(f["type"], space)) for f in schema.get("fields", [])]

        def adapt(value: Any) -> Any:
            value = _unnamed(value)
            if not isinstance(value, dict):
                return value
            return {name: convert(value.get(name)) for name, convert in fields}

        return adapt

    def union(self, branches: list[Any], space: str | None) -> Callable[[Any], Any]:
        real = [b for b in branches if not is_avro_null(b)]
        adapters = [self.make(b, space) for b in real]
        if not is_multi_union(branches):
            single = adapters[0] if len(adapters) == 1 else _plain
            return lambda v: None if v is None else single(v)
        names = [self.branch_name(b, space) for b in real]

        def adapt(value: Any) -> Any:
            if value is None:
                return None
            index = self.branch_of(value, real, names)
            return {
                f"member{i}": adapters[i](value) if i == index else None for i in range(len(real))
            }

        return adapt

    def branch_name(self, branch: Any, space: str | None) -> str:
        if isinstance(branch, str):
            if branch in ("boolean", "int", "long", "float", "double", "bytes", "string"):
                return branch
            return branch if "." in branch or not space else f"{space}.{branch}"
        kind = branch.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            name = str(branch.get("name"))
            namespace = branch.get("namespace", space) if "." not in name else None
            return name if "." in name or not namespace else f"{namespace}.{name}"
        logical = branch.get("logicalType")
        return f"{kind}:{logical}" if logical else str(kind)

    def branch_of(self, value: Any, real: list[Any], names: list[str]) -> int:
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
            for i, name in enumerate(names):
                if name == value[0] or name.endswith("." + value[0]):
                    return i
        wanted = _python_kinds(value)
        for i, name in enumerate(names):
            if name in wanted:
                return i
        raise SerdeError(f"{value!r} matches no branch of the union {names}")


def _python_kinds(value: Any) -> tuple[str, ...]:
    """The Avro branch names a fastavro value of an unnamed type may come from."""
    if isinstance(value, bool):
        return ("boolean",)
    if isinstance(value, int):
        return ("int", "long")
    if isinstance(value, float):
        return ("float", "double")
    if isinstance(value, str):
        return ("string", "string:uuid")
    if isinstance(value, bytes):
        return ("bytes",)
    if isinstance(value, Decimal):
        return ("bytes:decimal",)
    if isinstance(value, dt.datetime):
        return (
            "long:timestamp-millis",
            "long:timestamp-micros",
            "long:local-timestamp-millis",
            "long:local-timestamp-micros",
        )
    if isinstance(value, dt.date):
        return ("int:date",)
    if isinstance(value, dt.time):
        return ("int:time-millis", "long:time-micros")
    if isinstance(value, uuid.UUID):
        return ("string:uuid",)
    if isinstance(value, list):
        return ("array",)
    if isinstance(value, dict):
        return ("map",)
    return ()


def _unnamed(value: Any) -> Any:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return value


def _plain(value: Any) -> Any:
    value = _unnamed(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


# fastavro gives a field's default as the schema's JSON has it (logical types not applied):
# bytes as a string of code points 0-255, timestamps as numbers.


def _bytes_default(value: Any) -> Any:
    value = _unnamed(value)
    return value.encode("latin-1") if isinstance(value, str) else value


def _decimal_default(scale: int) -> Callable[[Any], Any]:
    def adapt(value: Any) -> Any:
        value = _bytes_default(value)
        if isinstance(value, bytes):
            return Decimal(int.from_bytes(value, "big", signed=True)).scaleb(-scale)
        return value

    return adapt


def _timestamp_default(logical: str) -> Callable[[Any], Any]:
    per_second = 1000 if logical.endswith("millis") else 1_000_000
    local = logical.startswith("local-")

    def adapt(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            moment = dt.datetime(1970, 1, 1, tzinfo=None if local else dt.UTC)
            micros = value * (1_000_000 // per_second)
            return moment + dt.timedelta(microseconds=micros)
        return value

    return adapt


def _time_number(value: Any, scale: int) -> Any:
    if isinstance(value, dt.time):
        seconds = value.hour * 3600 + value.minute * 60 + value.second
        return seconds * scale + value.microsecond * scale // 1_000_000
    return value


# -- JSON values -------------------------------------------------------------------------------


def json_adapter(kind: DataType) -> Callable[[Any], Any]:
    """A function turning a parsed JSON value into the value of *kind*: string columns take
    the JSON text of a value that is not a string (as ``from_json`` does)."""
    if isinstance(kind, StructType):
        fields = [(f.name, json_adapter(f.dataType)) for f in kind.fields]

        def struct(value: Any) -> Any:
            if not isinstance(value, dict):
                return value
            return {name: convert(value.get(name)) for name, convert in fields}

        return struct
    if isinstance(kind, ArrayType):
        element = json_adapter(kind.elementType)
        return lambda v: [element(i) for i in v] if isinstance(v, list) else v
    if isinstance(kind, MapType):
        values = json_adapter(kind.valueType)
        return lambda v: {k: values(i) for k, i in v.items()} if isinstance(v, dict) else v
    if isinstance(kind, StringType):
        return lambda v: v if v is None or isinstance(v, str) else json.dumps(v)
    return identity


# -- Protobuf values ---------------------------------------------------------------------------


def protobuf_value(message: Any) -> Any:
    """A message as a dict by field name: enums by name, ``Timestamp`` as a UTC datetime,
    unset message fields (and unset fields with presence) as None, other unset fields as
    their defaults (Spark's ``emit.default.values=true``)."""
    if message.DESCRIPTOR.full_name == "google.protobuf.Timestamp":
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return moment + dt.timedelta(seconds=message.seconds, microseconds=message.nanos // 1000)
    result: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value_field = field.message_type.fields_by_name["value"]
            result[field.name] = {k: _protobuf_field(value_field, v) for k, v in value.items()}
        elif _repeated(field):
            result[field.name] = [_protobuf_field(field, item) for item in value]
        elif field.has_presence and not message.HasField(field.name):
            result[field.name] = None
        else:
            result[field.name] = _protobuf_field(field, value)
    return result


def _repeated(field: Any) -> bool:
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:  # pragma: no cover - protobuf before 5.x
        return bool(field.label == field.LABEL_REPEATED)
    return bool(repeated)


def _protobuf_field(field: Any, value: Any) -> Any:
    if field.message_type is not None:
        return protobuf_value(value)
    if field.enum_type is not None:
        number = field.enum_type.values_by_number.get(value)
        return number.name if number is not None else str(value)
    if isinstance(value, int) and field.type in (field.TYPE_UINT64, field.TYPE_FIXED64):
        return Decimal(value)
    return value
