"""``.proto`` text rendered from a ``FileDescriptorProto``, laid out as Confluent's
``ProtobufSchemaUtils`` prints it: the text the registry stores for a schema registered as base64
of a descriptor, and Confluent's normal form (``normalize=True``: imports and options sorted,
fields in number order).

The rendered text keeps the order of nested messages, map entries included, since those positions
are the message indexes the Python serializer writes. Type names are fully qualified
(``.shop.Order``), as in a compiled descriptor.

This module only renders: it does not parse or compile ``.proto`` text, nor check that what it
renders compiles back (the ``PROTOBUF`` format, :mod:`sluice.schemas.formats.protobuf`, does
both), and it knows nothing of compatibility (:mod:`sluice.schemas.formats.protobuf_diff`).
It also holds the small vocabulary of ``.proto`` text that those two modules share
(:data:`SCALAR_TYPE_NAMES`, :func:`default_json_name`, :func:`in_real_oneof`,
:func:`package_prefix`).

>>> from google.protobuf import text_format
>>> order = text_format.Parse('''name: "shop.proto" package: "shop" syntax: "proto3"
...     message_type { name: "Order"
...         field { name: "id" number: 1 label: LABEL_OPTIONAL type: TYPE_INT64 } }''',
...     FileDescriptorProto())
>>> print(render(order, {order.name: order}), end="")
syntax = "proto3";
package shop;
<BLANKLINE>
message Order {
  int64 id = 1;
}
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    message_factory,
    text_encoding,
    text_format,
)
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.descriptor_pb2 import (
    DescriptorProto,
    Edition,
    EnumDescriptorProto,
    FieldDescriptorProto,
    FileDescriptorProto,
    ServiceDescriptorProto,
)
from google.protobuf.message import Message

__all__ = ["SCALAR_TYPE_NAMES", "default_json_name", "in_real_oneof", "package_prefix", "render"]


def render(
    proto: FileDescriptorProto,
    files: Mapping[str, FileDescriptorProto],
    *,
    normalize: bool = False,
) -> str:
    """``.proto`` text for *proto*, normalized (Confluent's normal form) or as the descriptor
    orders it.

    *files* holds *proto* and every file it imports, by import path, imports before their
    importers: custom options are read as the extensions those files define.

    >>> from google.protobuf import text_format
    >>> proto = text_format.Parse('''name: "m.proto" syntax: "proto3"
    ...     message_type { name: "M"
    ...         field { name: "b" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING }
    ...         field { name: "a" number: 1 label: LABEL_REPEATED type: TYPE_INT32 } }''',
    ...     FileDescriptorProto())
    >>> print(render(proto, {proto.name: proto}, normalize=True), end="")
    syntax = "proto3";
    <BLANKLINE>
    message M {
      repeated int32 a = 1;
      string b = 2;
    }
    """
    return _Renderer(proto, files, normalize).file()


def package_prefix(package: str) -> str:
    """What a package puts before the names of its types.

    >>> package_prefix("shop"), package_prefix("")
    ('shop.', '')
    """
    return package + "." if package else ""


#: The ``.proto`` name of each scalar type (``FieldDescriptorProto.TYPE_*``).
SCALAR_TYPE_NAMES = {
    FieldDescriptorProto.TYPE_DOUBLE: "double",
    FieldDescriptorProto.TYPE_FLOAT: "float",
    FieldDescriptorProto.TYPE_INT64: "int64",
    FieldDescriptorProto.TYPE_UINT64: "uint64",
    FieldDescriptorProto.TYPE_INT32: "int32",
    FieldDescriptorProto.TYPE_FIXED64: "fixed64",
    FieldDescriptorProto.TYPE_FIXED32: "fixed32",
    FieldDescriptorProto.TYPE_BOOL: "bool",
    FieldDescriptorProto.TYPE_STRING: "string",
    FieldDescriptorProto.TYPE_BYTES: "bytes",
    FieldDescriptorProto.TYPE_UINT32: "uint32",
    FieldDescriptorProto.TYPE_SFIXED32: "sfixed32",
    FieldDescriptorProto.TYPE_SFIXED64: "sfixed64",
    FieldDescriptorProto.TYPE_SINT32: "sint32",
    FieldDescriptorProto.TYPE_SINT64: "sint64",
}
_FIELD_NUMBER_MAX = 536870911  # 2^29 - 1, printed as max
_ENUM_NUMBER_MAX = 2147483647


def default_json_name(name: str) -> str:
    """The ``json_name`` protoc gives a field by default (lowerCamelCase of its name).

    >>> default_json_name("order_id")
    'orderId'
    """
    out: list[str] = []
    upper = False
    for char in name:
        if char == "_":
            upper = True
        elif upper:
            out.append(char.upper())
            upper = False
        else:
            out.append(char)
    return "".join(out)


def _quote(value: str | bytes) -> str:
    escaped: str = text_encoding.CEscape(value, as_utf8=isinstance(value, str))
    return '"' + escaped + '"'


def _scalar_text(field_descriptor: FieldDescriptor, value: Any) -> str:
    if field_descriptor.type == FieldDescriptor.TYPE_MESSAGE:
        body = text_format.MessageToString(value, as_one_line=True)
        return "{ " + body + " }" if body else "{}"
    if field_descriptor.type == FieldDescriptor.TYPE_ENUM:
        found = field_descriptor.enum_type.values_by_number.get(value)
        return found.name if found is not None else str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str | bytes):
        return _quote(value)
    return str(value)


def _range_texts(ranges: Sequence[Any], *, exclusive_end: bool, maximum: int) -> list[str]:
    texts: list[str] = []
    for item in ranges:
        last = item.end - 1 if exclusive_end else item.end
        if last == item.start:
            texts.append(str(item.start))
        else:
            texts.append(f"{item.start} to {'max' if last >= maximum else last}")
    return texts


def in_real_oneof(item: FieldDescriptorProto) -> bool:
    """Whether a field is in a oneof written as such (proto3 ``optional`` makes a synthetic one).

    >>> in_real_oneof(FieldDescriptorProto(name="a", oneof_index=0, proto3_optional=True))
    False
    """
    return item.HasField("oneof_index") and not item.proto3_optional


def _indent(text: str) -> str:
    """Each line two spaces in (Confluent's ``appendIndented``)."""
    lines = text.split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()
    return "".join(f"  {line}\n" for line in lines)


def _bracketed(options: Sequence[str]) -> str:
    """Field and enum value options: ``[a = 1]``, or one per line when there are more."""
    if not options:
        return ""
    if len(options) == 1:
        return f" [{options[0]}]"
    body = ",\n".join(options)
    return " [\n" + _indent(body) + "]"


@dataclass
class _Renderer:
    """Renders a file as ``.proto`` text laid out as Confluent's ``ProtobufSchemaUtils``
    prints it (sections separated by blank lines, messages before enums), normalized or not.

    Type names are always fully qualified (``.shop.Order``), as in the descriptor.
    """

    proto: FileDescriptorProto
    files: Mapping[str, FileDescriptorProto]  # every file it imports, imports before importers
    normalize: bool

    @functools.cached_property
    def pool(self) -> descriptor_pool.DescriptorPool | None:
        """The file and its imports, so that custom options read as the extensions they are
        (None if they do not build beside ``descriptor.proto``: a file redefining its types)."""
        pool = descriptor_pool.DescriptorPool()
        try:
            if "google/protobuf/descriptor.proto" not in self.files:
                pool.AddSerializedFile(descriptor_pb2.DESCRIPTOR.serialized_pb)
            for proto in self.files.values():  # imports come before their importers
                pool.Add(proto)
        except (TypeError, ValueError):
            return None
        return pool

    @property
    def editions(self) -> bool:
        return str(self.proto.syntax) == "editions"

    @property
    def proto3(self) -> bool:
        return str(self.proto.syntax) == "proto3"

    def options(self, options: Message, *, skip: frozenset[str] = frozenset()) -> list[str]:
        """``name = value`` for each option set on an element, custom options included
        (``(full.name) = value``); normalized: in name order."""
        if not options.ByteSize():
            return []
        with_extensions = options
        if self.pool is not None:
            own = self.pool.FindMessageTypeByName(options.DESCRIPTOR.full_name)
            with_extensions = message_factory.GetMessageClass(own).FromString(
                options.SerializeToString()
            )
        rendered: list[tuple[str, str]] = []
        for field_descriptor, value in with_extensions.ListFields():
            if field_descriptor.name in skip or field_descriptor.name == "uninterpreted_option":
                continue
            name = field_descriptor.name
            if field_descriptor.is_extension:
                name = f"({field_descriptor.full_name})"
            values = list(value) if field_descriptor.is_repeated else [value]
            rendered.extend(
                (name, f"{name} = {_scalar_text(field_descriptor, item)}") for item in values
            )
        if self.normalize:
            rendered.sort(key=lambda pair: pair[0])
        return [text for _, text in rendered]

    def option_lines(self, options: Message, *, skip: frozenset[str] = frozenset()) -> str:
        return "".join(f"option {option};\n" for option in self.options(options, skip=skip))

    def reserved_lines(self, ranges: list[str], names: Sequence[str]) -> str:
        quoted = [name if self.editions else _quote(name) for name in names]
        if not self.normalize:
            lines = [f"reserved {', '.join(ranges)};\n"] if ranges else []
            return "".join(lines) + (f"reserved {', '.join(quoted)};\n" if quoted else "")
        entries = [(int(text.split(" ")[0]), text) for text in ranges]
        entries += [(sys.maxsize, name) for name in quoted]
        return "".join(f"reserved {text};\n" for _, text in sorted(entries))

    def file(self) -> str:
        proto = self.proto
        out: list[str] = []
        if self.editions:
            edition = Edition.Name(proto.edition).removeprefix("EDITION_")
            out.append(f'edition = "{edition}";\n')
        elif self.proto3 or not self.normalize:  # Confluent's normal form omits proto2's
            out.append(f'syntax = "{proto.syntax or "proto2"}";\n')
        if proto.package:
            out.append(f"package {proto.package};\n")
        public, weak = set(proto.public_dependency), set(proto.weak_dependency)
        groups: list[list[str]] = [[], [], []]
        for index, dependency in enumerate(proto.dependency):
            groups[1 if index in public else 2 if index in weak else 0].append(dependency)
        if self.normalize:
            groups = [sorted(set(group)) for group in groups]
        if proto.dependency:
            out.append("\n")
            for kind, group in zip(("", "public ", "weak "), groups, strict=True):
                out.extend(f'import {kind}"{dependency}";\n' for dependency in group)
        options = self.option_lines(proto.options)
        if options:
            out.append("\n" + options)
        if proto.message_type or proto.enum_type:
            out.append("\n")
            prefix = package_prefix(proto.package)
            out.extend(
                self.message(message, prefix + message.name) for message in proto.message_type
            )
            out.extend(self.enum(enum) for enum in proto.enum_type)
        if proto.extension:
            out.append("\n" + self.extends(proto.extension))
        if proto.service:
            out.append("\n")
            out.extend(self.service(service) for service in proto.service)
        return "".join(out)

    def message(self, message: DescriptorProto, full_name: str) -> str:
        return f"message {message.name} {{" + self.message_body(message, full_name) + "}\n"

    def message_body(self, message: DescriptorProto, full_name: str) -> str:
        """Everything between a message's braces, each section after a line break."""
        sections: list[str] = []
        ranges = _range_texts(message.reserved_range, exclusive_end=True, maximum=_FIELD_NUMBER_MAX)
        reserved = self.reserved_lines(ranges, message.reserved_name)
        sections.append(reserved)
        sections.append(self.option_lines(message.options, skip=frozenset({"map_entry"})))
        nested = {f"{full_name}.{inner.name}": inner for inner in message.nested_type}
        # Map entries and groups are nested types protoc generates where their field stands.
        entry_field: dict[str, FieldDescriptorProto] = {}
        for item in message.field:
            inner = nested.get(item.type_name.removeprefix("."))
            if inner is not None and (
                inner.options.map_entry or item.type == FieldDescriptorProto.TYPE_GROUP
            ):
                entry_field[item.type_name.removeprefix(".")] = item
        oneof_members: dict[int, list[FieldDescriptorProto]] = {}
        plain: list[FieldDescriptorProto] = []
        for item in message.field:
            if in_real_oneof(item):
                oneof_members.setdefault(item.oneof_index, []).append(item)
            else:
                plain.append(item)
        if self.normalize:
            plain.sort(key=lambda item: item.number)
        oneofs = []
        for index, members in oneof_members.items():
            if self.normalize:
                members.sort(key=lambda item: item.number)
            oneofs.append((members[0].number, message.oneof_decl[index], members))
        if self.normalize:
            oneofs.sort(key=lambda entry: entry[0])
        # Confluent's layout (fields, then nested types) unless it would reorder the nested
        # types, whose positions are the message indexes of the wire format: then each map or
        # group field goes where its generated type stands among the nested messages.
        generated = [
            item.type_name.removeprefix(".")
            for item in [*plain, *(item for _, _, members in oneofs for item in members)]
            if item.type_name.removeprefix(".") in entry_field
        ]
        generated += [name for name in nested if name not in entry_field]
        keep_layout = generated == list(nested)
        sections.append(
            "".join(
                self.field(item, nested, False)
                for item in plain
                if keep_layout or item.type_name.removeprefix(".") not in entry_field
            )
        )
        oneof_texts = []
        for _, decl, members in oneofs:
            body = [self.option_lines(decl.options)]
            body.append("".join(self.field(item, nested, True) for item in members))
            inner = "".join("\n" + _indent(part) for part in body if part)
            oneof_texts.append(f"oneof {decl.name} {{{inner}}}\n")
        sections.append("".join(oneof_texts))
        extension_ranges = []
        for extension_range in message.extension_range:
            (text,) = _range_texts([extension_range], exclusive_end=True, maximum=_FIELD_NUMBER_MAX)
            extension_ranges.append(
                (extension_range.start, text + _bracketed(self.options(extension_range.options)))
            )
        if self.normalize:
            extension_ranges.sort()
        sections.append("".join(f"extensions {text};\n" for _, text in extension_ranges))
        sections.append(self.extends(message.extension))
        types = []
        for name, inner in nested.items():
            if name not in entry_field:
                types.append(self.message(inner, name))
            elif not keep_layout and not in_real_oneof(entry_field[name]):
                types.append(self.field(entry_field[name], nested, False))
        types += [self.enum(enum) for enum in message.enum_type]
        sections.append("".join(types))
        return "".join("\n" + _indent(section) for section in sections if section)

    def label(self, item: FieldDescriptorProto, in_oneof: bool) -> str:
        if item.label == FieldDescriptorProto.LABEL_REPEATED:
            return "repeated "
        if in_oneof or self.editions:
            return ""
        if self.proto3:
            return "optional " if item.proto3_optional else ""
        return "required " if item.label == FieldDescriptorProto.LABEL_REQUIRED else "optional "

    def field(
        self,
        item: FieldDescriptorProto,
        nested: Mapping[str, DescriptorProto],
        in_oneof: bool,
    ) -> str:
        options: list[tuple[str, str]] = []
        if item.HasField("default_value"):
            options.append(("default", f"default = {self.default(item)}"))
        if item.HasField("json_name") and item.json_name != default_json_name(item.name):
            options.append(("json_name", f"json_name = {_quote(item.json_name)}"))
        options.extend((text.split(" = ")[0], text) for text in self.options(item.options))
        if self.normalize:
            options.sort(key=lambda pair: pair[0])
        suffix = _bracketed([text for _, text in options])
        type_name = item.type_name.removeprefix(".")
        entry = nested.get(type_name)
        if entry is not None and entry.options.map_entry:
            key, value = self.type_of(entry.field[0]), self.type_of(entry.field[1])
            return f"map<{key}, {value}> {item.name} = {item.number}{suffix};\n"
        label = self.label(item, in_oneof)
        if item.type == FieldDescriptorProto.TYPE_GROUP and entry is not None:
            body = self.message_body(entry, type_name)
            return f"{label}group {entry.name} = {item.number}{suffix} {{{body}}}\n"
        return f"{label}{self.type_of(item)} {item.name} = {item.number}{suffix};\n"

    @staticmethod
    def type_of(item: FieldDescriptorProto) -> str:
        return SCALAR_TYPE_NAMES.get(item.type) or item.type_name

    @staticmethod
    def default(item: FieldDescriptorProto) -> str:
        if item.type == FieldDescriptorProto.TYPE_STRING:
            return _quote(item.default_value)
        if item.type == FieldDescriptorProto.TYPE_BYTES:
            return f'"{item.default_value}"'  # already C-escaped in the descriptor
        return str(item.default_value)

    def enum(self, enum: EnumDescriptorProto) -> str:
        ranges = _range_texts(enum.reserved_range, exclusive_end=False, maximum=_ENUM_NUMBER_MAX)
        reserved = self.reserved_lines(ranges, enum.reserved_name)
        values = list(enum.value)
        if self.normalize and values:  # in number order, the first (proto3's zero) kept first
            first = values[0].number
            values.sort(key=lambda value: (value.number != first, value.number, value.name))
        body = self.option_lines(enum.options) + "".join(
            f"{value.name} = {value.number}{_bracketed(self.options(value.options))};\n"
            for value in values
        )
        inner = ("\n" + _indent(reserved) if reserved else "\n" if body else "") + (
            _indent(body) if body else ""
        )
        return f"enum {enum.name} {{{inner}}}\n"

    def extends(self, extensions: Sequence[FieldDescriptorProto]) -> str:
        extendees: dict[str, list[FieldDescriptorProto]] = {}
        for extension in extensions:
            extendees.setdefault(extension.extendee, []).append(extension)
        blocks = []
        for extendee, members in extendees.items():
            if self.normalize:
                members.sort(key=lambda member: member.number)
            fields = "".join(self.field(member, {}, False) for member in members)
            blocks.append(f"extend {extendee} {{\n{_indent(fields)}}}\n")
        return "".join(blocks)

    def service(self, service: ServiceDescriptorProto) -> str:
        rpcs = []
        for method in service.method:
            request = ("stream " if method.client_streaming else "") + method.input_type
            response = ("stream " if method.server_streaming else "") + method.output_type
            options = self.option_lines(method.options)
            block = f" {{\n{_indent(options)}}}" if options else ""
            rpcs.append(f"rpc {method.name} ({request}) returns ({response}){block};\n")
        sections = [self.option_lines(service.options), "".join(rpcs)]
        inner = "".join("\n" + _indent(section) for section in sections if section)
        return f"service {service.name} {{{inner}}}\n"
