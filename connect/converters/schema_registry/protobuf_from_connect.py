"""Connect → Protobuf, Confluent's ``ProtobufData`` rules in that direction (listed in
:mod:`.protobuf_data`): a Connect struct schema becomes a proto3 file (a ``FileDescriptorProto``;
unions become ``oneof``s, fields numbered by their ``io.confluent.connect.protobuf.Tag`` or in
order), its first message's class is generated, and a Connect struct value fills a message of
that class.

>>> from sluice.connect.api.data import Field, Schema, Struct
>>> point = Schema.struct([Field("x", Schema("int32"))], name="geo.P")
>>> writing = ProtobufFromConnect(generalized_sum_type_support=False)
>>> cls = writing.message_class(writing.schema(point))
>>> writing.fill(cls(), point, Struct(point, {"x": 3})).x
3
"""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal
from typing import Any

from google.protobuf import descriptor_pb2, message_factory
from google.protobuf.message import Message

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import DATE, DECIMAL, TIME, TIMESTAMP, datetime_to_millis
from sluice.connect.converters.schema_registry.protobuf_descriptors import new_pool
from sluice.connect.converters.schema_registry.protobuf_enums import (
    add_enum,
    enum_marker,
    enum_number,
)
from sluice.connect.converters.schema_registry.protobuf_names import (
    CONNECT_PRECISION_PROP,
    CONNECT_TYPE_PROP,
    DEFAULT_SCHEMA_NAME,
    GENERALIZED_TYPE_UNION,
    LOGICAL_TYPES,
    PROTOBUF_TYPE_TAG,
    PROTOBUF_TYPE_UNION_PREFIX,
    confluent_meta,
    is_message,
    is_union,
    split_name,
)

__all__ = ["ProtobufFromConnect"]

_META_FILE = "confluent/meta.proto"
_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "int8": _F.TYPE_INT32,
    "int16": _F.TYPE_INT32,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
    "float32": _F.TYPE_FLOAT,
    "float64": _F.TYPE_DOUBLE,
    "boolean": _F.TYPE_BOOL,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class _Writing:
    def __init__(self) -> None:
        self.dependencies: set[str] = set()
        self.defaults = 0


class ProtobufFromConnect:
    """Connect struct schemas and values → proto3 files, message classes and messages; files
    and classes are cached (cleared when a cache reaches ``cache_size``)."""

    def __init__(self, *, generalized_sum_type_support: bool, cache_size: int = 1000) -> None:
        self.cache_size = cache_size
        self.generalized_sum_type_support = generalized_sum_type_support
        self._files: dict[int, tuple[Schema, descriptor_pb2.FileDescriptorProto]] = {}
        self._classes: dict[bytes, type[Message]] = {}

    # -- Connect schema → .proto file

    def schema(self, schema: Schema) -> descriptor_pb2.FileDescriptorProto:
        """The proto3 file (a ``FileDescriptorProto``) of a Connect struct schema."""
        cached = self._files.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        if schema.type != "struct":
            raise ConverterError(f"Unsupported root schema of type {schema.type}")
        state = _Writing()
        package, name = split_name(schema.name or DEFAULT_SCHEMA_NAME + "1")
        file = descriptor_pb2.FileDescriptorProto(syntax="proto3", package=package)
        file.message_type.append(self._message(name, schema, state))
        file.dependency.extend(sorted(state.dependencies))
        digest = hashlib.sha256(file.SerializeToString()).hexdigest()[:16]
        file.name = f"sluice-connect-{digest}.proto"
        if len(self._files) >= self.cache_size:
            self._files.clear()
        self._files[id(schema)] = (schema, file)
        return file

    def _message(
        self, name: str, schema: Schema, state: _Writing
    ) -> descriptor_pb2.DescriptorProto:
        message = descriptor_pb2.DescriptorProto(name=name)
        nested: set[str] = set()
        numbers = _Numbers(schema)
        for f in schema.fields:
            if f.schema.type == "struct" and is_union(f.schema):
                self._oneof(message, nested, f, numbers, state)
                continue
            number = numbers.of(f.schema)
            message.field.append(self._field(message, nested, f, number, state))
        return message

    def _oneof(
        self,
        message: descriptor_pb2.DescriptorProto,
        nested: set[str],
        f: Field,
        numbers: _Numbers,
        state: _Writing,
    ) -> None:
        """A union struct as a ``oneof`` of its fields (named by the union, as Confluent)."""
        union = f.schema
        generalized = dict(union.parameters).get(GENERALIZED_TYPE_UNION)
        if generalized is not None:
            name = generalized
        else:
            name = split_name((union.name or "").removeprefix(PROTOBUF_TYPE_UNION_PREFIX))[1]
        index = len(message.oneof_decl)
        message.oneof_decl.add(name=name)
        for member in union.fields:
            if member.schema.type in ("array", "map"):
                raise ConverterError(f"{f.name}.{member.name}: a oneof member cannot be repeated")
            field = self._field(message, nested, member, numbers.of(member.schema), state)
            field.oneof_index = index
            message.field.append(field)

    def _field(
        self,
        message: descriptor_pb2.DescriptorProto,
        nested: set[str],
        f: Field,
        number: int,
        state: _Writing,
    ) -> descriptor_pb2.FieldDescriptorProto:
        schema = f.schema
        field = descriptor_pb2.FieldDescriptorProto(name=f.name, number=number)
        field.label = _F.LABEL_OPTIONAL
        if schema.type == "array":
            assert schema.value_schema is not None
            field.label = _F.LABEL_REPEATED
            schema = schema.value_schema
            if schema.type in ("array", "map"):
                raise ConverterError(f"{f.name}: Array cannot be nested")
        if schema.type == "map":
            key, value = schema.key_schema, schema.value_schema
            assert key is not None and value is not None
            entry_name = _camel(f.name) + "Entry"
            entry = descriptor_pb2.DescriptorProto(name=entry_name)
            entry.options.map_entry = True
            # Messages the entry uses are defined beside it (a map entry has no nested types).
            entry.field.append(self._field(message, nested, Field("key", key), 1, state))
            entry.field.append(self._field(message, nested, Field("value", value), 2, state))
            if entry.field[0].type in (
                _F.TYPE_MESSAGE,
                _F.TYPE_DOUBLE,
                _F.TYPE_FLOAT,
                _F.TYPE_BYTES,
            ):
                raise ConverterError(f"{f.name}: map keys of type {key.type} have no protobuf form")
            message.nested_type.append(entry)
            field.label = _F.LABEL_REPEATED
            field.type = _F.TYPE_MESSAGE
            field.type_name = entry_name
            return field
        params: dict[str, str] = {}
        marker = enum_marker(schema, self.generalized_sum_type_support)
        if marker is not None:
            field.type = _F.TYPE_ENUM
            field.type_name = add_enum(message, schema, marker)
        elif schema.name in LOGICAL_TYPES:
            type_name, location = LOGICAL_TYPES[schema.name]
            field.type = _F.TYPE_MESSAGE
            field.type_name = "." + type_name
            state.dependencies.add(location)
            if schema.name == DECIMAL:
                parameters = dict(schema.parameters)
                if CONNECT_PRECISION_PROP in parameters:
                    params["precision"] = parameters[CONNECT_PRECISION_PROP]
                if "scale" in parameters:
                    params["scale"] = parameters["scale"]
        elif schema.type == "struct":
            if schema.name is not None:
                type_name = split_name(schema.name)[1]
            else:
                state.defaults += 1
                type_name = f"{DEFAULT_SCHEMA_NAME}{state.defaults + 1}"
            if type_name == f.name:
                type_name += "Message"
            if type_name not in nested:
                nested.add(type_name)
                message.nested_type.append(self._message(type_name, schema, state))
            field.type = _F.TYPE_MESSAGE
            field.type_name = type_name
        else:
            field.type = _SCALARS[schema.type]
            if schema.type in ("int8", "int16"):
                params[CONNECT_TYPE_PROP] = schema.type
        if params:
            meta = confluent_meta()
            field.options.Extensions[meta.field_meta].params.update(params)
            state.dependencies.add(_META_FILE)
        return field

    def message_class(self, file: descriptor_pb2.FileDescriptorProto) -> type[Message]:
        """The generated class of the file's first message (its imports: Confluent's and
        Google's own files)."""
        key = file.SerializeToString()
        found = self._classes.get(key)
        if found is None:
            pool = new_pool()
            try:
                pool.Add(file)
            except TypeError as error:  # e.g. two enums of one message with a symbol in common
                raise ConverterError(
                    f"The Connect schema has no valid proto3 form: {error}"
                ) from None
            package = f"{file.package}." if file.package else ""
            descriptor = pool.FindMessageTypeByName(package + file.message_type[0].name)
            found = message_factory.GetMessageClass(descriptor)
            if len(self._classes) >= self.cache_size:
                self._classes.clear()
            self._classes[key] = found
        return found

    # -- Connect value → message

    def fill(self, message: Message, schema: Schema, value: Any) -> Message:
        """Set the fields of ``message`` (of the class of :meth:`message_class`) from a Connect
        struct value of ``schema``; null values leave fields unset."""
        values = value.values if isinstance(value, Struct) else value
        if not isinstance(values, dict):
            raise ConverterError(f"Expected a Struct, got {type(value).__name__}")
        message.SetInParent()
        for f in schema.fields:
            item = values.get(f.name)
            if item is None:
                item = f.schema.default
            if item is None:
                if not f.schema.optional:
                    raise ConverterError(f"{f.name}: null value for a required field")
                continue
            try:
                if f.schema.type == "struct" and is_union(f.schema):
                    self._set_union(message, f.schema, item)
                else:
                    self._set(message, f.name, f.schema, item)
            except ConverterError as error:
                raise ConverterError(f"{f.name}: {error}") from error
            except (TypeError, ValueError) as error:
                raise ConverterError(f"{f.name}: {error}") from error
        return message

    def _set_union(self, message: Message, schema: Schema, value: Any) -> None:
        """The one member of a oneof that the union struct sets."""
        values = value.values if isinstance(value, Struct) else value
        if not isinstance(values, dict):
            raise ConverterError(f"Expected a union Struct, got {type(value).__name__}")
        for member in schema.fields:
            item = values.get(member.name)
            if item is not None:
                self._set(message, member.name, member.schema, item)
                return
        raise ConverterError("Cannot find non-null field of the union")

    def _set(self, message: Message, name: str, schema: Schema, value: Any) -> None:
        if schema.type == "array":
            assert schema.value_schema is not None
            target = getattr(message, name)
            for item in value:
                if item is None:
                    raise ConverterError("protobuf repeated fields cannot hold nulls")
                if is_message(schema.value_schema):
                    self._fill_any(target.add(), schema.value_schema, item)
                else:
                    target.append(_scalar(schema.value_schema, item))
            return
        if schema.type == "map":
            key, item_schema = schema.key_schema, schema.value_schema
            assert key is not None and item_schema is not None
            target = getattr(message, name)
            for k, v in value.items():
                if is_message(item_schema):
                    self._fill_any(target[_scalar(key, k)], item_schema, v)
                elif v is not None:
                    target[_scalar(key, k)] = _scalar(item_schema, v)
            return
        if is_message(schema):
            self._fill_any(getattr(message, name), schema, value)
            return
        setattr(message, name, _scalar(schema, value))

    def _fill_any(self, target: Message, schema: Schema, value: Any) -> None:
        if schema.name == DECIMAL:
            from confluent_kafka.schema_registry.common.protobuf import decimal_to_protobuf

            if not isinstance(value, Decimal):
                raise ConverterError(f"Invalid type for Decimal: {type(value).__name__}")
            scale = -value.as_tuple().exponent  # type: ignore[operator]
            target.MergeFromString(decimal_to_protobuf(value, scale).SerializeToString())
        elif schema.name == DATE:
            if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
                raise ConverterError(f"Invalid type for Date: {type(value).__name__}")
            target.year, target.month, target.day = value.year, value.month, value.day
        elif schema.name == TIME:
            if not isinstance(value, dt.time):
                raise ConverterError(f"Invalid type for Time: {type(value).__name__}")
            target.hours, target.minutes = value.hour, value.minute
            target.seconds = value.second
            target.nanos = value.microsecond // 1000 * 1_000_000
        elif schema.name == TIMESTAMP:
            if not isinstance(value, dt.datetime):
                raise ConverterError(f"Invalid type for Timestamp: {type(value).__name__}")
            millis = datetime_to_millis(value)
            target.seconds, rest = divmod(millis, 1000)
            target.nanos = rest * 1_000_000
        else:
            self.fill(target, schema, value)
        target.SetInParent()


class _Numbers:
    """Field numbers of a message written from a struct: a field's (or a union member's)
    ``io.confluent.connect.protobuf.Tag``, else the next number no tag of the message uses."""

    def __init__(self, schema: Schema) -> None:
        self.used = {int(t) for t in (_tag(f.schema) for f in _flat(schema)) if t is not None}
        self.next = 1

    def of(self, schema: Schema) -> int:
        tag = _tag(schema)
        if tag is not None:
            return int(tag)
        while self.next in self.used:
            self.next += 1
        self.next += 1
        return self.next - 1


def _flat(schema: Schema) -> list[Field]:
    """A struct's fields with its unions' members in place of the unions."""
    out: list[Field] = []
    for f in schema.fields:
        out.extend(f.schema.fields if f.schema.type == "struct" and is_union(f.schema) else [f])
    return out


def _tag(schema: Schema) -> str | None:
    return dict(schema.parameters).get(PROTOBUF_TYPE_TAG)


def _scalar(schema: Schema, value: Any) -> Any:
    kind = schema.type
    if kind in ("int8", "int16", "int32", "int64"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConverterError(f"Invalid type for {kind}: {type(value).__name__}")
        return value
    if kind in ("float32", "float64"):
        return float(value)
    if kind == "bytes":
        return bytes(value)
    marker = enum_marker(schema, False) if kind == "string" else None
    if marker is not None:
        return enum_number(schema, marker, value)
    return value
