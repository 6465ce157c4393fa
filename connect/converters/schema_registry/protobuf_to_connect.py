"""Protobuf → Connect, Confluent's ``ProtobufData`` rules in that direction (listed in
:mod:`.protobuf_data`): a message type becomes a struct named by its full name, every field
optional (proto3), each real ``oneof`` an optional union struct field; a message read with the
class of its writer's schema becomes the Connect struct (an unset scalar its default, an unset
message field null).

>>> from sluice.connect.converters.schema_registry.protobuf_descriptors import new_pool
>>> date = new_pool().FindMessageTypeByName("google.type.Date")
>>> [(f.name, f.schema.type) for f in ProtobufToConnect(generalized_sum_type_support=False)
...     .schema(date).fields]
[('year', 'int32'), ('month', 'int32'), ('day', 'int32')]
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import DATE, DECIMAL, TIME, TIMESTAMP, millis_to_datetime
from sluice.connect.converters.schema_registry.protobuf_enums import enum_schema, enum_symbol
from sluice.connect.converters.schema_registry.protobuf_names import (
    CONNECT_PRECISION_PROP,
    CONNECT_TYPE_PROP,
    DATE_TYPE,
    DECIMAL_TYPE,
    GENERALIZED_TYPE_UNION,
    PROTOBUF_TYPE_TAG,
    PROTOBUF_TYPE_UNION_PREFIX,
    TIME_TYPE,
    TIMESTAMP_TYPE,
    confluent_meta,
    is_message,
    is_union,
)

__all__ = ["ProtobufToConnect"]

_CONNECT_OF = {
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_SINT32: "int32",
    FieldDescriptor.TYPE_SFIXED32: "int32",
    FieldDescriptor.TYPE_UINT32: "int64",
    FieldDescriptor.TYPE_FIXED32: "int64",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_SINT64: "int64",
    FieldDescriptor.TYPE_SFIXED64: "int64",
    FieldDescriptor.TYPE_UINT64: "int64",
    FieldDescriptor.TYPE_FIXED64: "int64",
    FieldDescriptor.TYPE_FLOAT: "float32",
    FieldDescriptor.TYPE_DOUBLE: "float64",
    FieldDescriptor.TYPE_BOOL: "boolean",
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
}


class ProtobufToConnect:
    """Message types and messages → Connect (with ``generalized_sum_type_support``, oneofs and
    enums take the generalized names)."""

    def __init__(self, *, generalized_sum_type_support: bool) -> None:
        self.generalized_sum_type_support = generalized_sum_type_support

    # -- message descriptor → Connect schema

    def schema(self, descriptor: Descriptor) -> Schema:
        """The Connect schema of a message type: a struct named by its full name, every field
        optional (proto3)."""
        return self._struct(descriptor, optional=False, seen=set())

    def _struct(self, descriptor: Descriptor, *, optional: bool, seen: set[str]) -> Schema:
        if descriptor.full_name in seen:
            raise ConverterError(f"Recursive message {descriptor.full_name} has no Connect form")
        seen = seen | {descriptor.full_name}
        oneofs = _real_oneofs(descriptor)
        fields = [Field(_union_field_name(o), self._union(o, seen)) for o in oneofs]
        members = {fd.full_name for o in oneofs for fd in o.fields}
        fields += [
            Field(fd.name, self._field_schema(fd, seen))
            for fd in descriptor.fields
            if fd.full_name not in members
        ]
        return Schema("struct", optional=optional, name=descriptor.full_name, fields=tuple(fields))

    def _union(self, oneof: OneofDescriptor, seen: set[str]) -> Schema:
        params: tuple[tuple[str, str], ...] = ()
        if self.generalized_sum_type_support:
            name = oneof.name
            params = ((GENERALIZED_TYPE_UNION, name),)
        else:
            name = PROTOBUF_TYPE_UNION_PREFIX + oneof.full_name
        fields = tuple(
            Field(
                fd.name,
                dataclasses.replace(
                    schema := self._field_schema(fd, seen),
                    parameters=(*schema.parameters, (PROTOBUF_TYPE_TAG, str(fd.number))),
                ),
            )
            for fd in oneof.fields
        )
        return Schema("struct", optional=True, name=name, parameters=params, fields=fields)

    def _field_schema(self, fd: FieldDescriptor, seen: set[str]) -> Schema:
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            entry = fd.message_type
            key = self._single(entry.fields_by_name["key"], seen)
            value = self._single(entry.fields_by_name["value"], seen)
            return Schema("map", optional=True, key_schema=key, value_schema=value)
        single = self._single(fd, seen)
        if fd.is_repeated:
            return Schema("array", optional=True, value_schema=single)
        return single

    def _single(self, fd: FieldDescriptor, seen: set[str]) -> Schema:
        params = dict(_field_params(fd))
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            full = fd.message_type.full_name
            if full == DECIMAL_TYPE:
                parameters = [("scale", params.get("scale", "0"))]
                if "precision" in params:
                    parameters.append((CONNECT_PRECISION_PROP, params["precision"]))
                return Schema(
                    "bytes", optional=True, name=DECIMAL, version=1, parameters=tuple(parameters)
                )
            if full == DATE_TYPE:
                return Schema("int32", optional=True, name=DATE, version=1)
            if full == TIME_TYPE:
                return Schema("int32", optional=True, name=TIME, version=1)
            if full == TIMESTAMP_TYPE:
                return Schema("int64", optional=True, name=TIMESTAMP, version=1)
            return self._struct(fd.message_type, optional=True, seen=seen)
        if fd.type == FieldDescriptor.TYPE_ENUM:
            return enum_schema(fd.enum_type, self.generalized_sum_type_support)
        kind = _CONNECT_OF.get(fd.type)
        if kind is None:
            raise ConverterError(f"{fd.full_name}: unsupported protobuf type {fd.type}")
        if kind == "int32" and params.get(CONNECT_TYPE_PROP) in ("int8", "int16"):
            kind = params[CONNECT_TYPE_PROP]
        return Schema(kind, optional=True)

    # -- message → Connect value

    def data(self, schema: Schema, message: Message) -> Struct:
        """The Connect struct of a message read with the class of its writer's schema."""
        values: dict[str, Any] = {}
        for f in schema.fields:
            fs = f.schema
            if fs.type == "struct" and is_union(fs):
                values[f.name] = self._union_value(fs, message, f.name)
                continue
            raw = getattr(message, f.name)
            if fs.type == "array":
                assert fs.value_schema is not None
                values[f.name] = [self._value(fs.value_schema, item) for item in raw]
            elif fs.type == "map":
                assert fs.value_schema is not None
                values[f.name] = {k: self._value(fs.value_schema, v) for k, v in raw.items()}
            elif is_message(fs) and not message.HasField(f.name):
                values[f.name] = None
            else:
                values[f.name] = self._value(fs, raw)
        return Struct(schema, values)

    def _union_value(self, schema: Schema, message: Message, field_name: str) -> Struct | None:
        """The union struct of a oneof (``<oneof>_<index>``): its member set, or null."""
        oneof = field_name.rpartition("_")[0]
        member = message.WhichOneof(oneof)
        if member is None:
            return None
        found = schema.field(member)
        if found is None:
            raise ConverterError(f"oneof {oneof} member {member} is not in the union {schema.name}")
        return Struct(schema, {member: self._value(found.schema, getattr(message, member))})

    def _value(self, schema: Schema, raw: Any) -> Any:
        if schema.type == "string" and isinstance(raw, int):
            return enum_symbol(schema, raw)
        if schema.name == DECIMAL:
            from confluent_kafka.schema_registry.common.protobuf import protobuf_to_decimal

            return protobuf_to_decimal(raw)
        if schema.name == DATE:
            return dt.date(raw.year, raw.month, raw.day)
        if schema.name == TIME:
            return dt.time(raw.hours, raw.minutes, raw.seconds, raw.nanos // 1_000_000 * 1000)
        if schema.name == TIMESTAMP:
            return millis_to_datetime(raw.seconds * 1000 + raw.nanos // 1_000_000)
        if schema.type == "struct":
            return self.data(schema, raw)
        if schema.type == "bytes":
            return bytes(raw)
        return raw


def _real_oneofs(descriptor: Descriptor) -> list[OneofDescriptor]:
    """The oneofs of a message but the synthetic ones of proto3 ``optional`` fields."""
    return [
        o
        for o in descriptor.oneofs
        if not (len(o.fields) == 1 and o.name == "_" + o.fields[0].name)
    ]


def _union_field_name(oneof: OneofDescriptor) -> str:
    return f"{oneof.name}_{oneof.index}"


def _field_params(fd: FieldDescriptor) -> dict[str, str]:
    options = fd.GetOptions()
    meta = confluent_meta()
    if not options.HasExtension(meta.field_meta):
        return {}
    return dict(options.Extensions[meta.field_meta].params)
