"""Connect schemas and values ↔ Protobuf (proto3), the way Confluent's ``ProtobufData`` maps them.

The rules (Confluent's ``io.confluent.connect.protobuf.ProtobufData``):

- the root schema must be a struct: it becomes a message named by the schema's name (its
  namespace the package; ``ConnectDefault1`` when it has none); nested structs become messages
  nested in the message that uses them (a name equal to its field's gets the suffix ``Message``);
- fields are numbered 1, 2, … in order (or by the ``io.confluent.connect.protobuf.Tag``
  parameter); an ``array`` is a ``repeated`` field, a ``map`` a protobuf ``map`` (a nested
  ``…Entry`` message with ``key`` = 1, ``value`` = 2);
- ``int8`` / ``int16`` → ``int32`` with ``(confluent.field_meta).params`` ``connect.type``;
  ``int32``, ``int64``, ``float32`` → ``float``, ``float64`` → ``double``, ``boolean`` →
  ``bool``, ``string``, ``bytes``;
- ``Decimal`` → ``confluent.type.Decimal`` (with ``precision`` and ``scale`` in the field's
  ``confluent.field_meta`` params), ``Date`` → ``google.type.Date``, ``Time`` →
  ``google.type.TimeOfDay``, ``Timestamp`` → ``google.protobuf.Timestamp``.

proto3 has no required fields: reading, every field's schema is optional (the root struct is
not), a scalar that was not set reads as its default (0, "", false) and an unset message field as
null, as with Confluent's converter. Messages, enums and oneofs are named by their full names
(what Confluent's ``enhanced.protobuf.schema.support=true`` gives).

- an ``enum`` field → an optional ``string`` (the symbol) named by the enum, with the parameters
  ``io.confluent.connect.protobuf.Enum`` = the enum's name and
  ``io.confluent.connect.protobuf.Enum.<SYMBOL>`` = its number; written back as an enum
  (defined in the message using it, its values in number order: proto3 needs the 0 first). A
  number the enum does not define reads as ``UNKNOWN_ENUM_VALUE_<Enum>_<n>``, as Java's does;
- a ``oneof`` → an optional struct field ``<oneof>_<index>`` (before the other fields) named
  ``io.confluent.connect.protobuf.Union.<oneof full name>``, one optional field per member,
  each with the ``io.confluent.connect.protobuf.Tag`` parameter (its number); the member set
  is the one non-null field. Written back as a ``oneof`` of that name, fields without a tag
  are numbered after the tags in use;
- with ``generalized_sum_type_support`` (Confluent's ``generalized.sum.type.support``), a oneof
  is a struct named by the oneof, with ``org.apache.kafka.connect.data.Union`` = its name, and
  enums carry ``org.apache.kafka.connect.data.Enum`` parameters instead.

A schema with references (``import "other.proto"`` of another subject) is read with its
imports fetched from the registry, as confluent-kafka does: :func:`registered_descriptor`.

>>> from sluice.connect.api.data import Field, Schema
>>> point = Schema.struct([Field("x", Schema("int32")), Field("y", Schema("int8"))], name="geo.P")
>>> file = ProtobufData().from_connect_schema(point)
>>> file.package, [(f.name, f.number, f.type) for f in file.message_type[0].field]
('geo', [('x', 1, 5), ('y', 2, 5)])
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from decimal import Decimal
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message

from sluice.connect.api.data import Field, Schema, Struct
from sluice.connect.api.errors import ConverterError
from sluice.connect.api.logical import (
    DATE,
    DECIMAL,
    TIME,
    TIMESTAMP,
    datetime_to_millis,
    millis_to_datetime,
)

__all__ = ["ProtobufData", "registered_descriptor"]

NAMESPACE = "io.confluent.connect.protobuf"
PROTOBUF_TYPE_TAG = f"{NAMESPACE}.Tag"
PROTOBUF_TYPE_ENUM = f"{NAMESPACE}.Enum"
PROTOBUF_TYPE_UNION = f"{NAMESPACE}.Union"
PROTOBUF_TYPE_UNION_PREFIX = PROTOBUF_TYPE_UNION + "."
GENERALIZED_TYPE_UNION = "org.apache.kafka.connect.data.Union"  # Confluent's ConnectUnion
GENERALIZED_TYPE_ENUM = "org.apache.kafka.connect.data.Enum"  # Confluent's ConnectEnum
DEFAULT_SCHEMA_NAME = "ConnectDefault"
CONNECT_TYPE_PROP = "connect.type"
CONNECT_PRECISION_PROP = "connect.decimal.precision"
_DECIMAL_TYPE = "confluent.type.Decimal"
_DATE_TYPE = "google.type.Date"
_TIME_TYPE = "google.type.TimeOfDay"
_TIMESTAMP_TYPE = "google.protobuf.Timestamp"
_LOGICAL = {
    DECIMAL: (_DECIMAL_TYPE, "confluent/type/decimal.proto"),
    DATE: (_DATE_TYPE, "google/type/date.proto"),
    TIME: (_TIME_TYPE, "google/type/timeofday.proto"),
    TIMESTAMP: (_TIMESTAMP_TYPE, "google/protobuf/timestamp.proto"),
}
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


def _meta() -> Any:
    from confluent_kafka.schema_registry.confluent import meta_pb2

    return meta_pb2


def _split(full: str) -> tuple[str, str]:
    namespace, dot, name = full.rpartition(".")
    return (namespace if dot else ""), name


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


class _Writing:
    def __init__(self) -> None:
        self.dependencies: set[str] = set()
        self.defaults = 0


class ProtobufData:
    """Confluent's ``ProtobufData`` (see the module docstring)."""

    def __init__(
        self, *, cache_size: int = 1000, generalized_sum_type_support: bool = False
    ) -> None:
        self.cache_size = cache_size
        self.generalized_sum_type_support = generalized_sum_type_support
        self._files: dict[int, tuple[Schema, descriptor_pb2.FileDescriptorProto]] = {}
        self._classes: dict[bytes, type[Message]] = {}

    # -- Connect schema → .proto file

    def from_connect_schema(self, schema: Schema) -> descriptor_pb2.FileDescriptorProto:
        """The proto3 file (a ``FileDescriptorProto``) of a Connect struct schema."""
        cached = self._files.get(id(schema))
        if cached is not None and cached[0] is schema:
            return cached[1]
        if schema.type != "struct":
            raise ConverterError(f"Unsupported root schema of type {schema.type}")
        state = _Writing()
        package, name = _split(schema.name or DEFAULT_SCHEMA_NAME + "1")
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
            if f.schema.type == "struct" and _is_union(f.schema):
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
            name = _split((union.name or "").removeprefix(PROTOBUF_TYPE_UNION_PREFIX))[1]
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
        enum_marker = _enum_marker(schema, self.generalized_sum_type_support)
        if enum_marker is not None:
            field.type = _F.TYPE_ENUM
            field.type_name = _add_enum(message, schema, enum_marker)
        elif schema.name in _LOGICAL:
            type_name, location = _LOGICAL[schema.name]
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
                type_name = _split(schema.name)[1]
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
            meta = _meta()
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
                if f.schema.type == "struct" and _is_union(f.schema):
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
                if _is_message(schema.value_schema):
                    self._fill_any(target.add(), schema.value_schema, item)
                else:
                    target.append(_scalar(schema.value_schema, item))
            return
        if schema.type == "map":
            key, item_schema = schema.key_schema, schema.value_schema
            assert key is not None and item_schema is not None
            target = getattr(message, name)
            for k, v in value.items():
                if _is_message(item_schema):
                    self._fill_any(target[_scalar(key, k)], item_schema, v)
                elif v is not None:
                    target[_scalar(key, k)] = _scalar(item_schema, v)
            return
        if _is_message(schema):
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

    # -- message descriptor → Connect schema

    def to_connect_schema(self, descriptor: Descriptor) -> Schema:
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
            if full == _DECIMAL_TYPE:
                parameters = [("scale", params.get("scale", "0"))]
                if "precision" in params:
                    parameters.append((CONNECT_PRECISION_PROP, params["precision"]))
                return Schema(
                    "bytes", optional=True, name=DECIMAL, version=1, parameters=tuple(parameters)
                )
            if full == _DATE_TYPE:
                return Schema("int32", optional=True, name=DATE, version=1)
            if full == _TIME_TYPE:
                return Schema("int32", optional=True, name=TIME, version=1)
            if full == _TIMESTAMP_TYPE:
                return Schema("int64", optional=True, name=TIMESTAMP, version=1)
            return self._struct(fd.message_type, optional=True, seen=seen)
        if fd.type == FieldDescriptor.TYPE_ENUM:
            enum = fd.enum_type
            marker = (
                GENERALIZED_TYPE_ENUM if self.generalized_sum_type_support else PROTOBUF_TYPE_ENUM
            )
            symbols = [(f"{marker}.{v.name}", str(v.number)) for v in enum.values]
            return Schema(
                "string",
                optional=True,
                name=enum.full_name,
                parameters=((marker, enum.name), *symbols),
            )
        kind = _CONNECT_OF.get(fd.type)
        if kind is None:
            raise ConverterError(f"{fd.full_name}: unsupported protobuf type {fd.type}")
        if kind == "int32" and params.get(CONNECT_TYPE_PROP) in ("int8", "int16"):
            kind = params[CONNECT_TYPE_PROP]
        return Schema(kind, optional=True)

    # -- message → Connect value

    def to_connect_data(self, schema: Schema, message: Message) -> Struct:
        """The Connect struct of a message read with the class of its writer's schema."""
        values: dict[str, Any] = {}
        for f in schema.fields:
            fs = f.schema
            if fs.type == "struct" and _is_union(fs):
                values[f.name] = self._union_value(fs, message, f.name)
                continue
            raw = getattr(message, f.name)
            if fs.type == "array":
                assert fs.value_schema is not None
                values[f.name] = [self._value(fs.value_schema, item) for item in raw]
            elif fs.type == "map":
                assert fs.value_schema is not None
                values[f.name] = {k: self._value(fs.value_schema, v) for k, v in raw.items()}
            elif _is_message(fs) and not message.HasField(f.name):
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
            return _enum_symbol(schema, raw)
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
            return self.to_connect_data(schema, raw)
        if schema.type == "bytes":
            return bytes(raw)
        return raw


def _is_message(schema: Schema) -> bool:
    return schema.type == "struct" or schema.name in _LOGICAL


def _is_union(schema: Schema) -> bool:
    return (schema.name or "").startswith(PROTOBUF_TYPE_UNION) or any(
        k == GENERALIZED_TYPE_UNION for k, _ in schema.parameters
    )


def _real_oneofs(descriptor: Descriptor) -> list[OneofDescriptor]:
    """The oneofs of a message but the synthetic ones of proto3 ``optional`` fields."""
    return [
        o
        for o in descriptor.oneofs
        if not (len(o.fields) == 1 and o.name == "_" + o.fields[0].name)
    ]


def _union_field_name(oneof: OneofDescriptor) -> str:
    return f"{oneof.name}_{oneof.index}"


def _enum_marker(schema: Schema, generalized: bool) -> str | None:
    """The enum parameter of a Connect string schema (Confluent's or the generalized one)."""
    if schema.type != "string":
        return None
    keys = {k for k, _ in schema.parameters}
    if GENERALIZED_TYPE_ENUM in keys and (generalized or PROTOBUF_TYPE_ENUM not in keys):
        return GENERALIZED_TYPE_ENUM
    return PROTOBUF_TYPE_ENUM if PROTOBUF_TYPE_ENUM in keys else None


def _enum_values(schema: Schema, marker: str) -> list[tuple[str, int]]:
    prefix = marker + "."
    try:
        return sorted(
            ((k[len(prefix) :], int(v)) for k, v in schema.parameters if k.startswith(prefix)),
            key=lambda item: item[1],
        )
    except ValueError as error:
        raise ConverterError(f"enum {schema.name}: a value that is not a number: {error}") from None


def _add_enum(message: descriptor_pb2.DescriptorProto, schema: Schema, marker: str) -> str:
    """Define the enum of a Connect enum schema in ``message`` (once); its type name."""
    name = dict(schema.parameters)[marker] or _split(schema.name or "")[1]
    if not name:
        raise ConverterError("an enum schema needs a name (the enum parameter or the schema's)")
    if any(e.name == name for e in message.enum_type):
        return name
    values = _enum_values(schema, marker)
    if not values or values[0][1] != 0:
        raise ConverterError(f"enum {name} has no value numbered 0, which proto3 needs first")
    enum = message.enum_type.add(name=name)
    for symbol, number in values:
        enum.value.add(name=symbol, number=number)
    return name


def _enum_symbol(schema: Schema, number: int) -> str:
    marker = _enum_marker(schema, False)
    if marker is None:
        raise ConverterError(f"Invalid class for string type: int {number}")
    for symbol, value in _enum_values(schema, marker):
        if value == number:
            return symbol
    return f"UNKNOWN_ENUM_VALUE_{dict(schema.parameters)[marker]}_{number}"


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
        out.extend(f.schema.fields if f.schema.type == "struct" and _is_union(f.schema) else [f])
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
    marker = _enum_marker(schema, False) if kind == "string" else None
    if marker is not None:
        for symbol, number in _enum_values(schema, marker):
            if symbol == value:
                return number
        symbols = ", ".join(s for s, _ in _enum_values(schema, marker))
        raise ConverterError(f"{value!r} is not a symbol of enum {schema.name} ({symbols})")
    return value


def _field_params(fd: FieldDescriptor) -> dict[str, str]:
    options = fd.GetOptions()
    meta = _meta()
    if not options.HasExtension(meta.field_meta):
        return {}
    return dict(options.Extensions[meta.field_meta].params)


def new_pool() -> descriptor_pool.DescriptorPool:
    """A descriptor pool holding Google's and Confluent's own files (what schemas import)."""
    from confluent_kafka.schema_registry.common.protobuf import _init_pool

    pool = descriptor_pool.DescriptorPool()
    _init_pool(pool)  # google/protobuf/*, google/type/*
    meta = _meta()
    from confluent_kafka.schema_registry.confluent.type import decimal_pb2

    for module in (meta, decimal_pb2):
        try:
            pool.FindFileByName(module.DESCRIPTOR.name)
        except KeyError:
            pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    return pool


def registered_descriptor(
    client: Any, registered: Any, file_name: str, indexes: tuple[int, ...]
) -> Descriptor:
    """The message type a record names (its message ``indexes``) in a registered Protobuf
    schema (``registered``: confluent-kafka's ``Schema``, fetched with ``fmt="serialized"``),
    in a pool holding Google's and Confluent's files and the schema's references, fetched
    from the registry through ``client`` (confluent-kafka's ``SchemaRegistryClient``)
    recursively, each under its reference name, as confluent-kafka's deserializer does.
    """
    from confluent_kafka.schema_registry._sync.protobuf import _resolve_named_schema
    from confluent_kafka.schema_registry.common.protobuf import _str_to_proto

    pool = new_pool()
    try:
        _resolve_named_schema(registered, client, pool)
    except (TypeError, ValueError) as error:  # a broken reference (no name, subject, version)
        raise ConverterError(f"Cannot resolve the schema's references: {error}") from error
    file = _str_to_proto(file_name, registered.schema_str or "")
    pool.Add(file)
    if not indexes or indexes[0] >= len(file.message_type):
        raise ConverterError(f"Message indexes {list(indexes)} name no message of the schema")
    path = [file.message_type[indexes[0]]]
    for index in indexes[1:]:
        if index >= len(path[-1].nested_type):
            raise ConverterError(f"Message indexes {list(indexes)} name no message of the schema")
        path.append(path[-1].nested_type[index])
    full = ".".join(([file.package] if file.package else []) + [m.name for m in path])
    return pool.FindMessageTypeByName(full)
