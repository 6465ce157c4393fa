"""Connect → Avro, Confluent's ``AvroData`` rules in that direction (listed in
:mod:`sluice.connect.converters.schema_registry.avro_data`): a Connect schema becomes an Avro
schema (its JSON form), a Connect value the datum fastavro writes for it (a struct a dict, a
logical value its raw form: unscaled bytes, days, milliseconds; a union struct fastavro's
``(branch name, datum)`` tuple).

>>> from sluice.connect.api.data import Schema
>>> writing = AvroFromConnect(connect_meta_data=True, enhanced_schema_support=False)
>>> writing.schema(Schema("int8", optional=True))
['null', {'type': 'int', 'connect.type': 'int8'}]
>>> writing.data(Schema("bytes"), bytearray(b"ab"))
b'ab'
"""

from __future__ import annotations

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
)
from sluice.connect.converters.schema_registry.avro_names import (
    AVRO_TYPE_ENUM,
    AVRO_TYPE_UNION,
    CONNECT_DEFAULT_VALUE_PROP,
    CONNECT_DOC_PROP,
    CONNECT_ENUM_DOC_PROP,
    CONNECT_NAME_PROP,
    CONNECT_PARAMETERS_PROP,
    CONNECT_RECORD_DOC_PROP,
    CONNECT_TYPE_PROP,
    CONNECT_VERSION_PROP,
    DECIMAL_PRECISION_DEFAULT,
    DECIMAL_PRECISION_PROP,
    DEFAULT_SCHEMA_FULL_NAME,
    MAP_ENTRY_TYPE_NAME,
    NAMESPACE,
    split_name,
)

__all__ = ["AvroFromConnect"]

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
_LOGICAL_TYPE = {
    DECIMAL: "decimal",
    DATE: "date",
    TIME: "time-millis",
    TIMESTAMP: "timestamp-millis",
}


class _Writing:
    """The state of one Connect → Avro conversion: the named types defined so far."""

    def __init__(self) -> None:
        self.defined: dict[str, Any] = {}
        self.fields: dict[str, tuple[Field, ...]] = {}
        self.namespace: str | None = None
        self.default_names = 0
        self.map_entries = 0


class AvroFromConnect:
    """Connect schemas and values → Avro; the Avro schemas are cached by Connect schema object
    (LRU-less: the cache is cleared when it reaches ``cache_size``)."""

    def __init__(
        self, *, connect_meta_data: bool, enhanced_schema_support: bool, cache_size: int = 1000
    ) -> None:
        self.connect_meta_data = connect_meta_data
        self.enhanced_schema_support = enhanced_schema_support
        self.cache_size = cache_size
        self._to_avro: dict[int, tuple[Schema, Any]] = {}

    # -- Connect schema → Avro schema

    def schema(self, schema: Schema) -> Any:
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
        namespace, name = split_name(full)
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

    def data(self, schema: Schema, value: Any) -> Any:
        """The datum fastavro writes for ``value`` of ``schema`` (logical values in raw form)."""
        if value is None:
            if schema.default is not None:
                return self.data(schema, schema.default)
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
                    out[f.name] = self.data(f.schema, values.get(f.name))
                except ConverterError as error:
                    raise ConverterError(f"{f.name}: {error}") from error
            return out
        if kind == "array":
            assert schema.value_schema is not None
            items = schema.value_schema
            return [self.data(items, v) for v in value]
        if kind == "map":
            key, item = schema.key_schema, schema.value_schema
            assert key is not None and item is not None
            if key.type == "string" and not key.optional:
                return {k: self.data(item, v) for k, v in value.items()}
            return [
                {"key": self.data(key, k), "value": self.data(item, v)} for k, v in value.items()
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
                    return (self._branch_name(f.schema), self.data(f.schema, member))
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
