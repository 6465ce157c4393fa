"""The JSON converter's hot path: an encoder compiled once per schema, and orjson to write it.

:class:`~sluice.connect.converters.json_converter.JsonConverter` walks a value generically
(``_to_json``: the schema's type, its logical name, range and type checks, field by field). A
connector that sends many values of one schema (a CDC table's Debezium envelope) pays that walk
for every record. :func:`compile_encoder` turns a schema into a function that does the same for
the common cases — a value whose Python type is exactly the schema's (``int`` in range, ``str``,
``bool``, finite ``float``, a :class:`Struct` of that very schema, ``None`` where the schema is
optional without a default) — and hands everything else (logical types, bytes, arrays, maps,
defaults, wrong types, out-of-range numbers, structs of an equal but other schema object) to the
generic walk. The output is therefore the generic walk's, value for value, and so are its errors.

:func:`dumps` writes such a payload as compact UTF-8 JSON with orjson when that gives the same
bytes as ``json.dumps(..., ensure_ascii=False, separators=(",", ":"), allow_nan=False)`` — always
for strings, integers, booleans and null; not for floats (Python writes ``1e-07``, orjson
``1e-7``), so a schema with a float anywhere in it keeps ``json.dumps``. Anything orjson refuses
(integers past 64 bits, a lone surrogate) goes through ``json.dumps`` too, which then gives the
result or the error it always gave.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import orjson

from sluice.connect.api.data import Schema, Struct
from sluice.connect.api.logical import LOGICAL_NAMES

__all__ = ["Encoder", "compile_encoder", "dumps", "has_float"]

Encoder = Callable[[Any], Any]
"""A value of one schema → what ``JsonConverter._to_json`` gives for it."""

Generic = Callable[[Schema | None, Any], Any]

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def has_float(schema: Schema | None) -> bool:
    """Whether a value of ``schema`` may hold a float (or a schemaless part, which may)."""
    if schema is None:
        return True
    if schema.type in ("float32", "float64"):
        return True
    if schema.type == "struct":
        return any(has_float(f.schema) for f in schema.fields)
    if schema.type == "array":
        return has_float(schema.value_schema)
    if schema.type == "map":
        return has_float(schema.key_schema) or has_float(schema.value_schema)
    return False


def dumps(payload: Any, floats: bool) -> bytes:
    """``payload`` as compact UTF-8 JSON, as ``json.dumps`` (see the module docstring)."""
    if not floats:
        try:
            return orjson.dumps(payload)
        except (orjson.JSONEncodeError, TypeError):
            pass
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode()


def compile_encoder(schema: Schema, generic: Generic, replace_null_with_default: bool) -> Encoder:
    """The encoder of values of ``schema``; ``generic`` is the converter's ``_to_json``."""
    none_ok = schema.optional and (schema.default is None or not replace_null_with_default)
    kind = schema.type

    def fallback(value: Any) -> Any:
        return generic(schema, value)

    if schema.name in LOGICAL_NAMES:
        return fallback
    if kind in _INT_BITS:
        bits = _INT_BITS[kind]
        low, high = -(1 << (bits - 1)), 1 << (bits - 1)

        def integer(value: Any) -> Any:
            if type(value) is int and low <= value < high:
                return value
            if value is None and none_ok:
                return None
            return generic(schema, value)

        return integer
    if kind in ("string", "boolean"):
        exact: type = str if kind == "string" else bool

        def same(value: Any) -> Any:
            if type(value) is exact:
                return value
            if value is None and none_ok:
                return None
            return generic(schema, value)

        return same
    if kind in ("float32", "float64"):

        def number(value: Any) -> Any:
            if type(value) is float and math.isfinite(value):
                return value
            if value is None and none_ok:
                return None
            return generic(schema, value)

        return number
    if kind == "struct":
        return _struct_encoder(schema, generic, replace_null_with_default, none_ok)
    return fallback  # bytes, arrays, maps: the generic walk


def _struct_encoder(
    schema: Schema, generic: Generic, replace_null_with_default: bool, none_ok: bool
) -> Encoder:
    """A struct's encoder, generated as Python source: each field's common case checked inline
    (no call), the rest handed to that field's own encoder, which falls back to ``generic``."""
    names: dict[str, Any] = {
        "Struct": Struct,
        "schema": schema,
        "generic": generic,
        "none_ok": none_ok,
        "isfinite": math.isfinite,
    }
    lines = [
        "def encode(value):",
        "    if type(value) is not Struct or value.schema is not schema:",
        "        if value is None and none_ok:",
        "            return None",
        "        return generic(schema, value)",
        "    get = value.values.get",
    ]
    items = []
    for index, field in enumerate(schema.fields):
        child = field.schema
        names[f"e{index}"] = compile_encoder(child, generic, replace_null_with_default)
        child_none_ok = child.optional and (child.default is None or not replace_null_with_default)
        v = f"v{index}"
        lines.append(f"    {v} = get({field.name!r})")
        if child.name in LOGICAL_NAMES:
            lines.append(f"    {v} = e{index}({v})")
        elif child.type in _INT_BITS:
            bits = _INT_BITS[child.type]
            low, high = -(1 << (bits - 1)), 1 << (bits - 1)
            lines.append(f"    if type({v}) is not int or not {low} <= {v} < {high}:")
            lines.append(f"        {v} = e{index}({v})")
        elif child.type in ("string", "boolean"):
            exact = "str" if child.type == "string" else "bool"
            lines.append(f"    if type({v}) is not {exact}:")
            lines.append(f"        {v} = e{index}({v})")
        elif child.type in ("float32", "float64"):
            lines.append(f"    if type({v}) is not float or not isfinite({v}):")
            lines.append(f"        {v} = e{index}({v})")
        elif child.type == "struct" and child_none_ok:
            lines.append(f"    if {v} is not None:")
            lines.append(f"        {v} = e{index}({v})")
        else:
            lines.append(f"    {v} = e{index}({v})")
        items.append(f"{field.name!r}: {v}")
    lines.append("    return {" + ", ".join(items) + "}")
    exec("\n".join(lines), names)  # our own source; names are repr()s
    encoder: Encoder = names["encode"]
    return encoder
