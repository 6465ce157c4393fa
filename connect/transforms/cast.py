"""``Cast``: change the type of fields, or of the whole key or value, as Kafka's ``Cast`` does.

``spec`` is either ``field:type,field:type`` (fields of a struct or dict) or a single ``type`` (the
whole key or value). Types: ``int8``, ``int16``, ``int32``, ``int64``, ``float32``, ``float64``,
``boolean``, ``string``; the input may also be ``bytes`` (cast to ``string`` as base64) or a
logical value (cast to ``string`` as ``2024-01-02``, ``12:00:00.000Z``,
``2024-01-02T12:00:00.000Z``).

Numbers narrow the way Java's casts do: an integer wraps around (``300`` → int8 ``44``), a float is
truncated toward zero; booleans become ``1``/``0``; strings are parsed (``"true"``, any case, is
true; anything else false). Floats stay Python floats: a ``float32`` value is not rounded to single
precision. A null key or value passes unchanged.

>>> from sluice.connect.api.data import ConnectRecord
>>> cast = CastValue()
>>> cast.configure({"spec": "id:int8,price:string,active:boolean"})
>>> record = ConnectRecord("t", 0, None, None, None, {"id": 300, "price": 2.5, "active": "TRUE"})
>>> cast.apply(record).value
{'id': 44, 'price': '2.5', 'active': True}
"""

from __future__ import annotations

import dataclasses
import math
import re
from decimal import Decimal
from typing import Any

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import TransformError
from sluice.connect.api.logical import LOGICAL_NAMES, java_string
from sluice.connect.api.transform import (
    REPLACE_NULL,
    ConfigKey,
    KeyOrValueTransformation,
    R,
    SchemaCache,
    Settings,
    copy_schema_basics,
    require_map,
    require_struct,
    struct_value,
    type_name,
)
from sluice.errors import ConfigError

__all__ = ["Cast", "CastKey", "CastValue"]

OUTPUT_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
INPUT_TYPES = (*OUTPUT_TYPES, "bytes")
_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


def _supported(types: tuple[str, ...]) -> str:
    return "[" + ", ".join(t.upper() for t in types) + "]"


def _infer(value: Any) -> str | None:
    """Kafka's ``ConnectSchema.schemaType``: None for values outside Connect's data API."""
    for kinds, name in (
        (bool, "boolean"),
        (int, "int64"),
        (float, "float64"),
        (str, "string"),
        (bytes | bytearray, "bytes"),
        (list, "array"),
        (dict, "map"),
        (Struct, "struct"),
    ):
        if isinstance(value, kinds):
            return name
    return None


def _wrap(number: int, bits: int) -> int:
    number &= (1 << bits) - 1
    return number - (1 << bits) if number >> (bits - 1) else number


def _to_int(value: Any, bits: int, text: str) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):  # Java: double → int (or long), saturating, then → byte/short
        wide = 64 if bits == 64 else 32
        low, high = -(1 << (wide - 1)), (1 << (wide - 1)) - 1
        number = (
            0 if math.isnan(value) else max(low, min(high, int(max(-1e300, min(1e300, value)))))
        )
        return _wrap(number, bits)
    if isinstance(value, int | Decimal):
        return _wrap(int(value), bits)
    if isinstance(value, str):
        if not _JAVA_INTEGER.fullmatch(value):
            raise TransformError(f"Value ({value}) was out of range for requested data type")
        number = int(value)
        if not -(1 << (bits - 1)) <= number < 1 << (bits - 1):
            raise TransformError(f"Value ({value}) was out of range for requested data type")
        return number
    raise TransformError(f"Unexpected type in Cast transformation: {text}")


def _to_float(value: Any, text: str) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float | Decimal):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip().rstrip("fFdD"))
        except ValueError:
            raise TransformError(
                f"Value ({value}) was out of range for requested data type"
            ) from None
    raise TransformError(f"Unexpected type in Cast transformation: {text}")


def _to_boolean(value: Any, text: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float | Decimal):
        return _to_int(value, 64, text) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise TransformError(f"Unexpected type in Cast transformation: {text}")


def cast_value(schema: Schema | None, value: Any, target: str) -> Any:
    """``value`` (of ``schema``, or schemaless) cast to the Connect type ``target``."""
    if value is None:
        return None
    inferred = _infer(value) if schema is None else schema.type
    if inferred is None:
        raise TransformError(
            f"Cast transformation was passed a value of type {type_name(value)} which is not "
            "supported by Connect's data API"
        )
    if inferred not in INPUT_TYPES:
        raise TransformError(
            f"Cast transformation does not support casting from {inferred.upper()}; supported "
            f"types are {_supported(INPUT_TYPES)}"
        )
    text = type_name(value)
    if target in _BITS:
        return _to_int(value, _BITS[target], text)
    if target in ("float32", "float64"):
        return _to_float(value, text)
    if target == "boolean":
        return _to_boolean(value, text)
    return java_string(value)


class Cast(KeyOrValueTransformation):
    """Cast fields or the entire key or value to a specific type (Kafka's ``Cast``)."""

    CONFIG = (
        ConfigKey(
            "spec",
            "list",
            "List of fields and the type to cast them to of the form field1:type,field2:type to "
            "cast fields of Maps or Structs. A single type to cast the entire value. Valid types "
            "are int8, int16, int32, int64, float32, float64, boolean, and string.",
        ),
        REPLACE_NULL,
    )
    PURPOSE = "cast types"

    def setup(self, settings: Settings) -> None:
        spec = settings.list("spec")
        if not spec:
            raise ConfigError("Must specify at least one field to cast.", key="spec")
        self.casts: dict[str, str] = {}
        self.whole: str | None = None
        for mapping in spec:
            parts = mapping.split(":")
            if len(parts) > 2:
                raise ConfigError(f"Invalid cast mapping: {mapping}", key="spec")
            target = parts[-1].strip().lower()
            if target not in INPUT_TYPES and target not in ("array", "map", "struct"):
                raise ConfigError(
                    f"Invalid type found in casting spec: {parts[-1].strip()}", key="spec"
                )
            if target not in OUTPUT_TYPES:
                raise ConfigError(
                    f"Cast transformation does not support casting to {target.upper()}; supported "
                    f"types are {_supported(OUTPUT_TYPES)}",
                    key="spec",
                )
            if len(parts) == 1:
                self.whole = target
            else:
                self.casts[parts[0].strip()] = target
        if self.whole is not None and len(spec) > 1:
            raise ConfigError(
                "Cast transformations that specify a type to cast the entire value to may only "
                "specify a single cast in their spec",
                key="spec",
            )
        self.replace_null_with_default = settings.boolean("replace.null.with.default")
        self._schemas = SchemaCache()

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        schema = self.operating_schema(record)
        if schema is None:
            if self.whole is not None:
                return self.updated(record, None, cast_value(None, value, self.whole))
            updated = dict(require_map(value, self.PURPOSE))
            for name, target in self.casts.items():
                updated[name] = cast_value(None, updated.get(name), target)
            return self.updated(record, None, updated)
        new_schema = self._schemas.get(schema) or self._schemas.put(
            schema, self._cast_schema(schema)
        )
        if self.whole is not None:
            return self.updated(record, new_schema, cast_value(schema, value, self.whole))
        struct = require_struct(value, self.PURPOSE)
        values = {}
        for f in struct.schema.fields:
            original = struct_value(struct, f, self.replace_null_with_default)
            cast = self.casts.get(f.name)
            values[f.name] = original if cast is None else cast_value(f.schema, original, cast)
        return self.updated(record, new_schema, Struct(new_schema, values))

    def _cast_schema(self, schema: Schema) -> Schema:
        if self.whole is not None:
            basics = Schema(self.whole) if schema.name in LOGICAL_NAMES else schema
            updated = copy_schema_basics(basics, type=self.whole)
            target = self.whole
        else:
            fields = []
            for f in schema.fields:
                cast = self.casts.get(f.name)
                if cast is not None:
                    default = cast_value(f.schema, f.schema.default, cast)
                    fields.append(
                        Field(f.name, Schema(cast, optional=f.schema.optional, default=default))
                    )
                else:
                    fields.append(f)
            updated = copy_schema_basics(schema, fields=fields)
            target = "struct"
        default = schema.default
        if default is not None and target != "struct":
            default = cast_value(schema, default, target)
        elif default is not None:
            default = None  # a struct default of the old schema does not fit the new one
        return dataclasses.replace(updated, optional=schema.optional, default=default)


class CastKey(Cast):
    """``Cast$Key``: cast the record key or its fields."""

    SIDE = "key"


class CastValue(Cast):
    """``Cast$Value``: cast the record value or its fields."""

    SIDE = "value"
