"""Connect schemas and values ↔ Avro, the way Confluent's ``AvroData`` maps them.

The rules (Confluent's ``io.confluent.connect.avro.AvroData``):

- ``int8`` / ``int16`` → Avro ``int`` with ``"connect.type": "int8"`` / ``"int16"``; ``int32`` →
  ``int``; ``int64`` → ``long``; ``float32`` → ``float``; ``float64`` → ``double``; ``boolean``,
  ``string``, ``bytes`` → the same;
- ``Decimal`` → ``bytes`` with ``"logicalType": "decimal"``, ``scale`` and ``precision`` (the
  ``connect.decimal.precision`` parameter, 64 when absent); ``Date`` → ``int`` + ``date``;
  ``Time`` → ``int`` + ``time-millis``; ``Timestamp`` → ``long`` + ``timestamp-millis``;
- ``array`` → ``array``; ``map`` with non-optional string keys → ``map``; any other map → an
  ``array`` of ``io.confluent.connect.avro.MapEntry`` records (``key``, ``value``);
- ``struct`` → ``record`` named by the schema's name (``io.confluent.connect.avro.ConnectDefault``
  when it has none); a struct reused in one schema is defined once and referred to by name;
- an optional schema → a union with ``null``: ``["null", T]`` with field default ``null``, or
  ``[T, "null"]`` when the schema has a default (the field's default);
- with ``connect.meta.data`` (the default) the Connect details ride as properties of the type:
  ``connect.name``, ``connect.version``, ``connect.doc``, ``connect.parameters``,
  ``connect.default``; parameters whose key starts with ``avro`` become properties themselves;
- with ``enhanced.avro.schema.support``, a string with the ``io.confluent.connect.avro.Enum``
  parameter becomes an Avro ``enum`` (read back as a string with those parameters either way).

The reverse (:meth:`AvroData.to_connect_schema`) reads any of this back, ``connect.*`` properties
first; a union of ``null`` and one type is an optional schema. A union of several types is, as
in Confluent's ``AvroData``, a struct named ``io.confluent.connect.avro.Union`` (optional when
the union holds ``null``) with one optional field a branch, named by the branch's type
(``int``, ``string``, ``array``…) or, for a record, enum or fixed, its name (its full name with
``enhanced.avro.schema.support``); such a struct is written as the union, its first non-null
field the branch. Read back, the branch is told by the Python type of what fastavro read
(fastavro gives no branch index): ``bool``, ``int`` in the field's range, ``float``, ``str``
(an enum's symbols), ``bytes``, ``Decimal`` and the date and time types, ``list``, and a ``dict``
is the first record whose field names are its keys, else a map — so records with the same
field names in one union are told apart as the first of them. Recursive records are refused
with :class:`~sluice.connect.ConverterError`.

Values: a Connect value becomes what fastavro writes (a struct a dict, a logical value its raw
form: unscaled bytes, days, milliseconds); fastavro's readings become Connect values again
(``Decimal``, ``date``, ``time``, aware UTC ``datetime``).

>>> from sluice.connect.api.data import Field, Schema, Struct
>>> from sluice.connect.api.logical import decimal_schema
>>> price = Schema.struct([Field("amount", decimal_schema(2))], name="shop.Price")
>>> data = AvroData()
>>> data.from_connect_schema(price)["fields"][0]["type"]["logicalType"]
'decimal'
>>> data.to_connect_schema(data.from_connect_schema(price)) == price
True
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import (
    DATE,
    DECIMAL,
    LOGICAL_NAMES,
    TIME,
    TIMESTAMP,
    logical_to_raw,
    raw_to_logical,
)

__all__ = ["AvroData"]

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME = "ConnectDefault"
DEFAULT_SCHEMA_FULL_NAME = f"{NAMESPACE}.{DEFAULT_SCHEMA_NAME}"
MAP_ENTRY_TYPE_NAME = "MapEntry"
AVRO_TYPE_ENUM = f"{NAMESPACE}.Enum"
AVRO_TYPE_UNION = f"{NAMESPACE}.Union"
CONNECT_NAME_PROP = "connect.name"
CONNECT_DOC_PROP = "connect.doc"
CONNECT_RECORD_DOC_PROP = "connect.record.doc"
CONNECT_ENUM_DOC_PROP = "connect.enum.doc"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_DEFAULT_VALUE_PROP = "connect.default"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_TYPE_PROP = "connect.type"
DECIMAL_PRECISION_PROP = "connect.decimal.precision"
DECIMAL_PRECISION_DEFAULT = 64

_AVRO_OF = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float32": "float",
    "float64": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
_CONNECT_OF = {
    "int": "int32",
    "long": "int64",
    "float": "float32",
    "double": "float64",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
_LOGICAL_TYPE = {
    DECIMAL: "decimal",
    DATE: "date",
    TIME: "time-millis",
    TIMESTAMP: "timestamp-millis",
}
_PRIMITIVE_NAMES = frozenset(["null", *_CONNECT_OF])


def _split_name(name: str) -> tuple[str | None, str]:
    namespace, dot, simple = name.rpartition(".")
    return (namespace if dot else None), simple


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


class _Writing:
    """The state of one Connect → Avro conversion: the named types defined so far."""

    def __init__(self) -> None:
        self.defined: dict[str, Any] = {}
        self.fields: dict[str, tuple[Field, ...]] = {}
        self.namespace: str | None = None
        self.default_names = 0
        self.map_entries = 0


class AvroData:
    """Confluent's ``AvroData`` (see the module docstring); schemas are cached (LRU-less: the
    caches are cleared when they reach ``cache_size``)."""

    def __init__(
        self,
        *,
        connect_meta_data: bool = True,
        enhanced_schema_support: bool = False,
        cache_size: int = 1000,
    ) -> None:
        self.connect_meta_data = connect_meta_data
        self.enhanced_schema_support = enhanced_schema_support
        self.cache_size = cache_size
        self._to_avro: dict[int, tuple[Schema, Any]] = {}

    # -- Connect schema → Avro schema

    def from_connect_schema(self, schema: Schema) -> Any:
        """The Avro schema (its JSON form: dict, list or str) of a Connect schema."""
        cached = self._to_avro.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        avro = self._avro_of(schema, _Writing(), in_union=False)
        if len(self._to_avro) >= self.cache_size:
            self._to_avro.clear()
        self._to_avro[id(schema)] = (schema, avro)
        return avro

    def _avro_of(self, schema: Schema, state: _Writing, *, in_union: bool) -> Any:
        if schema.type == "struct" and schema.name == AVRO_TYPE_UNION:
            members = [
                self._avro_of(dataclasses.replace(f.schema, optional=False), state, in_union=True)
                for f in schema.fields
            ]
            return ["null", *members] if schema.optional else members
        base = self._base_of(schema, state)
        if schema.optional and not in_union:
            return ["null", base] if schema.default is None else [base, "null"]
        return base

    def _base_of(self, schema: Schema, state: _Writing) -> Any:
        params = dict(schema.parameters)
        props: dict[str, Any] = {}
        if schema.type == "struct":
            base = self._record_of(schema, params, state)
            if isinstance(base, str):
                return base  # defined before in this schema: referred to by name
        elif schema.type == "array":
            assert schema.value_schema is not None
            base = {
                "type": "array",
                "items": self._avro_of(schema.value_schema, state, in_union=False),
            }
        elif schema.type == "map":
            base = self._map_of(schema, state)
        elif schema.type == "string" and self.enhanced_schema_support and AVRO_TYPE_ENUM in params:
            prefix = AVRO_TYPE_ENUM + "."
            base = {
                "type": "enum",
                "name": params[AVRO_TYPE_ENUM],
                "symbols": [v for k, v in params.items() if k.startswith(prefix)],
            }
            if params.get(CONNECT_ENUM_DOC_PROP):
                base["doc"] = params[CONNECT_ENUM_DOC_PROP]
            if base["name"] in state.defined:
                return base["name"]
            state.defined[base["name"]] = base
        else:
            base = {"type": _AVRO_OF[schema.type]}
            if schema.type in ("int8", "int16"):
                props[CONNECT_TYPE_PROP] = schema.type
            if schema.name == DECIMAL:
                if schema.type != "bytes" or "scale" not in params:
                    raise ConverterError("Invalid Decimal schema: scale parameter not found.")
                base["scale"] = int(params["scale"])
                base["precision"] = int(
                    params.get(DECIMAL_PRECISION_PROP, DECIMAL_PRECISION_DEFAULT)
                )
        if self.connect_meta_data:
            if schema.doc is not None:
                base[CONNECT_DOC_PROP] = schema.doc
            if schema.version is not None:
                base[CONNECT_VERSION_PROP] = schema.version
            if schema.parameters:
                base[CONNECT_PARAMETERS_PROP] = params
            if schema.default is not None:
                base[CONNECT_DEFAULT_VALUE_PROP] = self._json_default(schema, schema.default)
            if schema.name is not None:
                base[CONNECT_NAME_PROP] = schema.name
            base.update(props)
        if schema.name in _LOGICAL_TYPE:
            base["logicalType"] = _LOGICAL_TYPE[schema.name]
        for key, value in params.items():
            if key.startswith("avro"):
                base[key] = value
        if len(base) == 1 and isinstance(base.get("type"), str):
            return base["type"]  # a plain primitive: its name alone
        return base

    def _record_of(self, schema: Schema, params: dict[str, str], state: _Writing) -> Any:
        if schema.name is not None:
            full = schema.name
        else:
            state.default_names += 1
            count = state.default_names
            full = DEFAULT_SCHEMA_FULL_NAME + ("" if count == 1 else str(count))
        if full in state.defined:
            if state.fields.get(full) != schema.fields:
                raise ConverterError(f"Two different structs are named {full} in one schema")
            return full
        namespace, name = _split_name(full)
        record: dict[str, Any] = {"type": "record", "name": name}
        if namespace or state.namespace:
            record["namespace"] = namespace or ""  # "": none, not the enclosing record's
        if params.get(CONNECT_RECORD_DOC_PROP):
            record["doc"] = params[CONNECT_RECORD_DOC_PROP]
        state.defined[full] = record
        state.fields[full] = schema.fields
        enclosing, state.namespace = state.namespace, namespace
        try:
            record["fields"] = [self._field_of(f.name, f.schema, state) for f in schema.fields]
        finally:
            state.namespace = enclosing
        return record

    def _field_of(self, name: str, schema: Schema, state: _Writing) -> dict[str, Any]:
        field: dict[str, Any] = {"name": name}
        if schema.doc is not None:
            field["doc"] = schema.doc
        field["type"] = self._avro_of(schema, state, in_union=False)
        if schema.type == "struct" and schema.name == AVRO_TYPE_UNION:
            if schema.optional:
                field["default"] = None  # null is the union's first branch
            elif isinstance(schema.default, Struct) and schema.fields:
                first = schema.fields[0]  # Avro's default is a value of the first branch
                value = schema.default.values.get(first.name)
                if value is not None:
                    field["default"] = self._json_default(first.schema, value)
        elif schema.default is not None:
            field["default"] = self._json_default(schema, schema.default)
        elif schema.optional:
            field["default"] = None
        return field

    def _map_of(self, schema: Schema, state: _Writing) -> dict[str, Any]:
        key, value = schema.key_schema, schema.value_schema
        assert key is not None and value is not None
        if key.type == "string" and not key.optional:
            return {"type": "map", "values": self._avro_of(value, state, in_union=False)}
        state.map_entries += 1
        name = MAP_ENTRY_TYPE_NAME + ("" if state.map_entries == 1 else str(state.map_entries))
        entry = {
            "type": "record",
            "name": name,
            "namespace": NAMESPACE,
            "fields": [self._field_of("key", key, state), self._field_of("value", value, state)],
        }
        state.defined[f"{NAMESPACE}.{name}"] = entry
        state.fields[f"{NAMESPACE}.{name}"] = ()
        return {"type": "array", "items": entry}

    def _json_default(self, schema: Schema, value: Any) -> Any:
        """A Connect default as Avro's JSON default (bytes as ISO-8859-1 text)."""
        if value is None:
            return None
        if schema.name in LOGICAL_NAMES:
            value = _raw(schema, value)
        if schema.type == "bytes":
            return bytes(value).decode("latin-1")
        if schema.type == "array":
            assert schema.value_schema is not None
            return [self._json_default(schema.value_schema, item) for item in value]
        if schema.type == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if key.type == "string" and not key.optional:
                return {k: self._json_default(item, v) for k, v in value.items()}
            return [
                {"key": self._json_default(key, k), "value": self._json_default(item, v)}
                for k, v in value.items()
            ]
        if schema.type == "struct":
            values = value.values if isinstance(value, Struct) else value
            return {f.name: self._json_default(f.schema, values.get(f.name)) for f in schema.fields}
        return value

    # -- Connect value → Avro datum

    def from_connect_data(self, schema: Schema, value: Any) -> Any:
        """The datum fastavro writes for ``value`` of ``schema`` (logical values in raw form)."""
        if value is None:
            if schema.default is not None:
                return self.from_connect_data(schema, schema.default)
            if not schema.optional:
                raise ConverterError(
                    f"Found null value for non-optional schema {_describe(schema)}"
                )
            return None
        kind = schema.type
        if schema.name in LOGICAL_NAMES:
            return _raw(schema, value)
        if kind == "struct":
            values: Mapping[str, Any]
            if isinstance(value, Struct):
                values = value.values
            elif isinstance(value, Mapping):
                values = value
            else:
                raise ConverterError(
                    f"Expected a Struct for {_describe(schema)}, got {type(value).__name__}"
                )
            if schema.name == AVRO_TYPE_UNION:
                return self._union_datum(schema, values)
            out = {}
            for f in schema.fields:
                try:
                    out[f.name] = self.from_connect_data(f.schema, values.get(f.name))
                except ConverterError as error:
                    raise ConverterError(f"{f.name}: {error}") from error
            return out
        if kind == "array":
            assert schema.value_schema is not None
            items = schema.value_schema
            return [self.from_connect_data(items, v) for v in value]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if key.type == "string" and not key.optional:
                return {k: self.from_connect_data(item, v) for k, v in value.items()}
            return [
                {"key": self.from_connect_data(key, k), "value": self.from_connect_data(item, v)}
                for k, v in value.items()
            ]
        if kind == "bytes" and isinstance(value, bytearray | memoryview):
            return bytes(value)
        return value

    def _union_datum(self, schema: Schema, values: Mapping[str, Any]) -> Any:
        """The union branch of the first field set, in fastavro's tuple notation (the branch's
        type or full name, and its datum), so that the branch is the field's."""
        for f in schema.fields:
            member = values.get(f.name)
            if member is not None:
                try:
                    return (self._branch_name(f.schema), self.from_connect_data(f.schema, member))
                except ConverterError as error:
                    raise ConverterError(f"{f.name}: {error}") from error
        if schema.optional:
            return None
        raise ConverterError(f"No field of the non-optional union {AVRO_TYPE_UNION} is set")

    def _branch_name(self, schema: Schema) -> str:
        """The name fastavro knows a union branch by: a named type's full name, else its type."""
        params = dict(schema.parameters)
        if schema.type == "struct":
            return schema.name or DEFAULT_SCHEMA_FULL_NAME
        if schema.type == "string" and self.enhanced_schema_support and AVRO_TYPE_ENUM in params:
            return params[AVRO_TYPE_ENUM]
        if schema.type == "map":
            key = schema.key_schema
            return (
                "map" if key is not None and key.type == "string" and not key.optional else "array"
            )
        return _AVRO_OF.get(schema.type, schema.type)

    # -- Avro schema → Connect schema

    def to_connect_schema(self, avro: Any) -> Schema:
        """The Connect schema of an Avro schema (its JSON form), as Confluent builds it."""
        return _Reading(self.enhanced_schema_support).schema(avro, None, optional=False)

    # -- Avro datum → Connect value

    def to_connect_data(self, schema: Schema, datum: Any) -> Any:
        """The Connect value of what fastavro read for ``schema``."""
        if datum is None:
            return None
        if schema.name in LOGICAL_NAMES:
            if isinstance(datum, int | bytes) and not isinstance(datum, bool):
                return raw_to_logical(schema, datum)
            return datum  # fastavro read the logical type already
        kind = schema.type
        if kind == "struct" and schema.name == AVRO_TYPE_UNION:
            for f in schema.fields:
                if _holds(f.schema, datum):
                    return Struct(schema, {f.name: self.to_connect_data(f.schema, datum)})
            raise ConverterError(
                f"No branch of {AVRO_TYPE_UNION} ({', '.join(f.name for f in schema.fields)}) "
                f"holds a {type(datum).__name__}"
            )
        if kind == "struct":
            return Struct(
                schema,
                {f.name: self.to_connect_data(f.schema, datum.get(f.name)) for f in schema.fields},
            )
        if kind == "array":
            assert schema.value_schema is not None
            return [self.to_connect_data(schema.value_schema, v) for v in datum]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if isinstance(datum, list):  # MapEntry records
                return {
                    _hashable(self.to_connect_data(key, e["key"])): self.to_connect_data(
                        item, e["value"]
                    )
                    for e in datum
                }
            return {k: self.to_connect_data(item, v) for k, v in datum.items()}
        return datum


_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_LOGICAL_CLASS: dict[str, type] = {
    DECIMAL: Decimal,
    DATE: dt.date,
    TIME: dt.time,
    TIMESTAMP: dt.datetime,
}


def _holds(schema: Schema, datum: Any) -> bool:
    """Whether *datum* (as fastavro read it) is a value of the union branch *schema*."""
    if schema.name in _LOGICAL_CLASS:
        wanted = _LOGICAL_CLASS[schema.name]
        if schema.name == DATE and isinstance(datum, dt.datetime):
            return False
        return isinstance(datum, wanted)
    kind = schema.type
    if isinstance(datum, bool):
        return kind == "boolean"
    if isinstance(datum, int):
        bits = _INT_BITS.get(kind)
        return bits is not None and -(1 << (bits - 1)) <= datum < 1 << (bits - 1)
    if isinstance(datum, float):
        return kind in ("float32", "float64")
    if isinstance(datum, str):
        if kind != "string":
            return False
        params = dict(schema.parameters)
        if AVRO_TYPE_ENUM in params:
            return params.get(f"{AVRO_TYPE_ENUM}.{datum}") == datum
        return True
    if isinstance(datum, bytes | bytearray):
        return kind == "bytes"
    if isinstance(datum, list):
        if kind == "array":
            return True
        key = schema.key_schema
        return kind == "map" and not (key is not None and key.type == "string" and not key.optional)
    if isinstance(datum, dict):
        if kind == "struct" and schema.name != AVRO_TYPE_UNION:
            return set(datum) == {f.name for f in schema.fields}
        key = schema.key_schema
        return kind == "map" and key is not None and key.type == "string" and not key.optional
    return False


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    return value


def _raw(schema: Schema, value: Any) -> Any:
    if isinstance(value, Decimal | dt.date | dt.time):  # dt.datetime is a dt.date
        try:
            return logical_to_raw(schema, value)
        except ValueError as error:
            raise ConverterError(str(error)) from error
    if schema.name == DECIMAL and isinstance(value, bytes | bytearray):
        return bytes(value)
    if schema.name != DECIMAL and isinstance(value, int) and not isinstance(value, bool):
        return value
    raise ConverterError(f"Invalid value for {schema.name}: {type(value).__name__}")


def _describe(schema: Schema) -> str:
    return f"{schema.type}" + (f" ({schema.name})" if schema.name else "")


class _Reading:
    """The state of one Avro → Connect conversion: named types seen so far, by full name."""

    def __init__(self, enhanced: bool = False) -> None:
        self.enhanced = enhanced
        self.named: dict[str, Any] = {}
        self.building: set[str] = set()

    def schema(
        self,
        avro: Any,
        namespace: str | None,
        *,
        optional: bool,
        field_default: Any = None,
        has_field_default: bool = False,
        field_doc: str | None = None,
    ) -> Schema:
        if isinstance(avro, str):
            if avro in _PRIMITIVE_NAMES:
                avro = {"type": avro}
            else:
                full = _full_name(avro, namespace)
                found = self.named.get(full) or self.named.get(avro)
                if found is None:
                    raise ConverterError(f"Avro schema refers to an unknown type {avro!r}")
                if found["_full"] in self.building:
                    raise ConverterError(f"Recursive Avro type {avro!r} has no Connect form")
                return self._from_node(
                    found, namespace, optional, field_default, has_field_default, field_doc
                )
        if isinstance(avro, list):
            members = [
                m
                for m in avro
                if m != "null" and not (isinstance(m, dict) and m.get("type") == "null")
            ]
            if len(avro) == 2 and len(members) == 1:
                return self.schema(
                    members[0], namespace, optional=True, field_default=field_default,
                    has_field_default=has_field_default, field_doc=field_doc,
                )  # fmt: skip
            return self._union(avro, members, namespace, field_default, has_field_default)
        if not isinstance(avro, dict) or "type" not in avro:
            raise ConverterError(f"Invalid Avro schema: {avro!r}")
        if isinstance(avro["type"], dict | list):
            return self.schema(
                avro["type"], namespace, optional=optional, field_default=field_default,
                has_field_default=has_field_default, field_doc=field_doc,
            )  # fmt: skip
        return self._from_node(
            avro, namespace, optional, field_default, has_field_default, field_doc
        )

    def _from_node(
        self,
        node: dict[str, Any],
        namespace: str | None,
        optional: bool,
        field_default: Any,
        has_field_default: bool,
        field_doc: str | None,
    ) -> Schema:
        kind = node["type"]
        connect_type = node.get(CONNECT_TYPE_PROP)
        logical = node.get("logicalType")
        params: dict[str, str] = {}
        name: str | None = None
        version: int | None = None
        fields: tuple[Field, ...] = ()
        key_schema = value_schema = None
        full: str | None = None
        if kind in ("record", "enum", "fixed"):
            if "_full" in node:  # a reference to a type defined before
                full = node["_full"]
            else:
                own = node.get("namespace", namespace) if "." not in node["name"] else None
                full = _full_name(node["name"], own)
                if full in self.named:
                    raise ConverterError(f"Avro type {full} is defined twice")
                node = {**node, "_full": full}
                self.named[full] = node
            namespace = _split_name(full)[0]
        if kind in ("bytes", "fixed"):
            ctype = "bytes"
            if logical == "decimal":
                scale = node.get("scale", 0 if kind == "fixed" else None)
                if not isinstance(scale, int):
                    raise ConverterError("scale must be specified and must be a number.")
                name, version = DECIMAL, 1
                params["scale"] = str(scale)
                precision = node.get("precision")
                if precision is not None and not isinstance(precision, int):
                    raise ConverterError("precision property must be a JSON Integer.")
                if precision is not None and precision != DECIMAL_PRECISION_DEFAULT:
                    params[DECIMAL_PRECISION_PROP] = str(precision)
            elif kind == "fixed":
                params["connect.fixed.size"] = str(node["size"])
        elif kind == "int":
            if logical == "date":
                ctype, name, version = "int32", DATE, 1
            elif logical == "time-millis":
                ctype, name, version = "int32", TIME, 1
            elif connect_type in ("int8", "int16"):
                ctype = connect_type
            elif connect_type is not None:
                raise ConverterError(f"Connect type annotation for Avro int is {connect_type!r}")
            else:
                ctype = "int32"
        elif kind == "long":
            ctype = "int64"
            if logical == "timestamp-millis":
                name, version = TIMESTAMP, 1
        elif kind in _CONNECT_OF:
            ctype = _CONNECT_OF[kind]
        elif kind == "array":
            items = node["items"]
            entry = self._resolve(items, namespace)
            if (
                isinstance(entry, dict)
                and entry.get("type") == "record"
                and _full_name(entry["name"], entry.get("namespace", namespace)).startswith(
                    f"{NAMESPACE}.{MAP_ENTRY_TYPE_NAME}"
                )
            ):
                by_name = {f["name"]: f for f in entry.get("fields", [])}
                if set(by_name) != {"key", "value"}:
                    raise ConverterError(
                        "Found map encoded as array of key-value pairs, but array elements do "
                        "not match the expected format."
                    )
                ctype = "map"
                key_schema = self.schema(by_name["key"]["type"], NAMESPACE, optional=False)
                value_schema = self.schema(by_name["value"]["type"], NAMESPACE, optional=False)
            else:
                ctype = "array"
                value_schema = self.schema(items, namespace, optional=False)
        elif kind == "map":
            ctype = "map"
            key_schema = Schema("string")
            value_schema = self.schema(node["values"], namespace, optional=False)
        elif kind == "record":
            ctype = "struct"
            assert full is not None
            self.building.add(full)
            try:
                fields = tuple(
                    Field(
                        f["name"],
                        self.schema(
                            f["type"],
                            namespace,
                            optional=False,
                            field_default=f.get("default"),
                            has_field_default="default" in f,
                            field_doc=f.get("doc"),
                        ),
                    )
                    for f in node.get("fields", [])
                )
            finally:
                self.building.discard(full)
        elif kind == "enum":
            ctype = "string"
            assert full is not None
            if node.get("doc"):
                params[CONNECT_ENUM_DOC_PROP] = node["doc"]
            params[AVRO_TYPE_ENUM] = full
            for symbol in node.get("symbols", []):
                params[f"{AVRO_TYPE_ENUM}.{symbol}"] = symbol
        elif kind == "null":
            raise ConverterError("Standalone null schemas are not supported by this converter")
        else:
            raise ConverterError(f"Couldn't translate unsupported schema type {kind!r}.")

        doc = field_doc if field_doc is not None else node.get("doc") or node.get(CONNECT_DOC_PROP)
        if kind == "record" and node.get("doc"):
            params[CONNECT_RECORD_DOC_PROP] = node["doc"]
        raw_version = node.get(CONNECT_VERSION_PROP)
        if raw_version is not None:
            if not isinstance(raw_version, int) or isinstance(raw_version, bool):
                raise ConverterError(f"Invalid Connect version found: {raw_version!r}")
            if version is not None and version != raw_version:
                raise ConverterError(
                    f"Mismatched versions: {version} differs from version in source schema "
                    f"({raw_version})"
                )
            version = raw_version
        parameters = node.get(CONNECT_PARAMETERS_PROP)
        if parameters is not None:
            if not isinstance(parameters, dict):
                raise ConverterError(
                    f"Expected JSON object for schema parameters but found: {parameters!r}"
                )
            for key, value in parameters.items():
                if not isinstance(value, str):
                    raise ConverterError(
                        f"Expected schema parameter values to be strings but found: {value!r}"
                    )
                params[key] = value
        for key, value in node.items():
            if key.startswith("avro") and isinstance(value, str):
                params[key] = value
        connect_name = node.get(CONNECT_NAME_PROP)
        if connect_name is not None:
            if not isinstance(connect_name, str):
                raise ConverterError(f"Invalid schema name: {connect_name!r}")
            named: str | None = connect_name
        elif kind in ("record", "enum"):
            named = full
        else:
            named = None
        if named is not None and not named.startswith(DEFAULT_SCHEMA_FULL_NAME):
            if name is not None and named != name:
                raise ConverterError(
                    f"Mismatched names: {name} differs from name in source schema ({named})"
                )
            name = named
        schema = Schema(
            ctype,
            optional=optional,
            name=name,
            version=version,
            doc=doc,
            parameters=tuple(params.items()),
            fields=fields,
            key_schema=key_schema,
            value_schema=value_schema,
        )
        default = field_default if has_field_default else node.get(CONNECT_DEFAULT_VALUE_PROP)
        if default is not None:
            schema = Schema(
                ctype,
                optional=optional,
                name=name,
                version=version,
                doc=doc,
                default=_default_from_json(schema, default),
                parameters=schema.parameters,
                fields=fields,
                key_schema=key_schema,
                value_schema=value_schema,
            )
        return schema

    def _union(
        self,
        avro: list[Any],
        members: list[Any],
        namespace: str | None,
        field_default: Any,
        has_field_default: bool,
    ) -> Schema:
        """Confluent's ``io.confluent.connect.avro.Union`` struct of a union of several types."""
        fields: list[Field] = []
        for member in members:
            branch = self.schema(member, namespace, optional=True)
            node = self._resolve(member, namespace)
            kind = node if isinstance(node, str) else node.get("type")
            if isinstance(kind, dict | list):
                kind = kind.get("type") if isinstance(kind, dict) else "union"
            if kind in ("record", "enum", "fixed"):
                own = node.get("namespace", namespace) if "." not in node["name"] else None
                full = node.get("_full") or _full_name(node["name"], own)
                name = full if self.enhanced else _split_name(full)[1]
            else:
                name = str(kind)
            if any(f.name == name for f in fields):
                raise ConverterError(f"Avro union {avro!r} has two branches named {name!r}")
            fields.append(Field(name, branch))
        schema = Schema(
            "struct",
            optional=len(members) < len(avro),
            name=AVRO_TYPE_UNION,
            fields=tuple(fields),
        )
        if has_field_default and field_default is not None and fields:
            first = fields[0]  # a union's default is a value of its first branch
            default = Struct(schema, {first.name: _default_from_json(first.schema, field_default)})
            schema = dataclasses.replace(schema, default=default)
        return schema

    def _resolve(self, avro: Any, namespace: str | None) -> Any:
        if isinstance(avro, str) and avro not in _PRIMITIVE_NAMES:
            return self.named.get(_full_name(avro, namespace)) or self.named.get(avro)
        return avro


def _default_from_json(schema: Schema, node: Any) -> Any:
    """A Connect default from Avro's JSON form of it (bytes as ISO-8859-1 text)."""
    if node is None:
        return None
    kind = schema.type
    if kind == "bytes":
        raw = node.encode("latin-1") if isinstance(node, str) else base64.b64decode(node)
        return raw_to_logical(schema, raw) if schema.name == DECIMAL else raw
    if schema.name in LOGICAL_NAMES and isinstance(node, int):
        return raw_to_logical(schema, node)
    if kind in ("float32", "float64"):
        return float(node)
    if kind == "array":
        assert schema.value_schema is not None
        return [_default_from_json(schema.value_schema, item) for item in node]
    if kind == "map":
        key, item = schema.key_schema, schema.value_schema
        assert key is not None and item is not None
        if isinstance(node, list):
            return {
                _hashable(_default_from_json(key, e["key"])): _default_from_json(item, e["value"])
                for e in node
            }
        return {k: _default_from_json(item, v) for k, v in node.items()}
    if kind == "struct":
        return Struct(
            schema, {f.name: _default_from_json(f.schema, node.get(f.name)) for f in schema.fields}
        )
    return node
