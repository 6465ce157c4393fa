"""The Avro converter's hot path: the Connect ↔ Avro value mapping compiled once per schema.

:class:`~sluice.connect.converters.schema_registry.avro_data.AvroData` maps a value generically
(``from_connect_data`` / ``to_connect_data``: the schema's type, its logical name, defaults,
field by field). A connector sends many values of one schema, so :func:`compile_to_avro` and
:func:`compile_to_connect` turn a struct schema into Python source doing the same for the common
case, as :mod:`sluice.connect.converters.json_compiled` does for the JSON converter:

- writing, a :class:`Struct` of that very schema object whose fields hold values (``None`` only
  where the field is optional without a default): primitives are taken as they are (the
  generic mapping does not change them either), ``Timestamp`` becomes milliseconds inline, other
  logical values and arrays and maps go through ``AvroData.from_connect_data`` of their field,
  nested structs through their own compiled mapping. Anything else raises, and the converter
  then maps the whole value generically, which gives its result or its error — so the datum is
  the generic mapping's, value for value, and so are the errors;
- reading, the datum fastavro's rules give (logical values already ``Decimal``, ``date``…):
  primitive fields are taken as they are, a logical field still in raw form (an ``int`` or
  ``bytes``) and arrays and maps go through ``AvroData.to_connect_data`` of their field.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from sluice.connect.api.data import Schema, Struct
from sluice.connect.api.logical import LOGICAL_NAMES, TIMESTAMP, datetime_to_millis
from sluice.connect.converters.schema_registry.avro_names import AVRO_TYPE_UNION

__all__ = ["compile_to_avro", "compile_to_connect"]

Mapping_ = Callable[[Any], Any]
Generic = Callable[[Schema, Any], Any]

_IDENTITY = frozenset(
    ["int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string"]
)


class _Slow(Exception):  # noqa: N818 - a signal, not an error
    """Not the common case: the generic mapping decides."""


_SLOW = _Slow()


def compile_to_avro(schema: Schema, generic: Generic) -> Mapping_:
    """``f(value) -> datum`` for values of *schema*; ``generic`` is
    ``AvroData.from_connect_data``. ``f`` raises on anything but the common case."""
    if schema.type != "struct" or schema.name == AVRO_TYPE_UNION:

        def whole(value: Any) -> Any:
            return generic(schema, value)

        return whole
    names: dict[str, Any] = {
        "Struct": Struct,
        "schema": schema,
        "generic": generic,
        "SLOW": _SLOW,
        "datetime": dt.datetime,
        "millis": datetime_to_millis,
    }
    lines = [
        "def to_avro(value):",
        "    if type(value) is not Struct or value.schema is not schema: raise SLOW",
        "    get = value.values.get",
    ]
    items = []
    for index, field in enumerate(schema.fields):
        child = field.schema
        v = f"v{index}"
        names[f"s{index}"] = child
        lines.append(f"    {v} = get({field.name!r})")
        none_ok = child.optional and child.default is None
        lines.append(f"    if {v} is None:")
        lines.append("        pass" if none_ok else "        raise SLOW")
        if child.name == TIMESTAMP:
            lines.append(f"    elif type({v}) is datetime: {v} = millis({v})")
            lines.append(f"    else: {v} = generic(s{index}, {v})")
        elif child.name in LOGICAL_NAMES:
            lines.append(f"    else: {v} = generic(s{index}, {v})")
        elif child.type in _IDENTITY:
            pass
        elif child.type == "struct" and child.name != AVRO_TYPE_UNION:
            names[f"m{index}"] = compile_to_avro(child, generic)
            lines.append(f"    else: {v} = m{index}({v})")
        elif child.type == "bytes":
            lines.append(f"    elif type({v}) is not bytes: {v} = generic(s{index}, {v})")
        else:  # arrays, maps, unions
            lines.append(f"    else: {v} = generic(s{index}, {v})")
        items.append(f"{field.name!r}: {v}")
    lines.append("    return {" + ", ".join(items) + "}")
    exec("\n".join(lines), names)  # our own source; names are repr()s
    mapping: Mapping_ = names["to_avro"]
    return mapping


def compile_to_connect(schema: Schema, generic: Generic) -> Mapping_:
    """``f(datum) -> value`` for datums of *schema* (as fastavro reads them); ``generic`` is
    ``AvroData.to_connect_data``."""
    if schema.type != "struct" or schema.name == AVRO_TYPE_UNION:

        def whole(datum: Any) -> Any:
            return generic(schema, datum)

        return whole
    names: dict[str, Any] = {"Struct": Struct, "schema": schema, "generic": generic}
    lines = [
        "def to_connect(datum):",
        "    if datum is None: return None",
        "    get = datum.get",
    ]
    items = []
    for index, field in enumerate(schema.fields):
        child = field.schema
        v = f"v{index}"
        names[f"s{index}"] = child
        lines.append(f"    {v} = get({field.name!r})")
        if child.name in LOGICAL_NAMES:
            lines.append(f"    if type({v}) is int or type({v}) is bytes:")
            lines.append(f"        {v} = generic(s{index}, {v})")
        elif child.type in _IDENTITY or child.type == "bytes":
            pass
        elif child.type == "struct" and child.name != AVRO_TYPE_UNION:
            names[f"m{index}"] = compile_to_connect(child, generic)
            lines.append(f"    {v} = m{index}({v})")
        else:
            lines.append(f"    if {v} is not None: {v} = generic(s{index}, {v})")
        items.append(f"{field.name!r}: {v}")
    lines.append("    return Struct(schema, {" + ", ".join(items) + "})")
    exec("\n".join(lines), names)  # our own source; names are repr()s
    mapping: Mapping_ = names["to_connect"]
    return mapping
