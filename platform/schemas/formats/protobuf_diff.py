"""Protobuf schema compatibility: a port of Confluent's ``SchemaDiff``.

:func:`descriptor_differences` lists the differences from the writer's schema (Confluent's
*original*) to the reader's (*update*) with Confluent's ``Difference.Type`` names and paths
(``#/Order/3``: message ``Order``, field number 3); those outside :data:`COMPATIBLE_CHANGES` break
compatibility.

This module compares compiled ``FileDescriptorProto`` objects only: it neither parses nor
compiles schemas, nor decides which pairs of versions a compatibility level compares (the
``PROTOBUF`` format, :mod:`sluice.schemas.formats.protobuf`, compiles the schemas and answers
``read_errors``; :mod:`sluice.schemas.compatibility` applies the level).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from google.protobuf.descriptor_pb2 import (
    DescriptorProto,
    EnumDescriptorProto,
    FieldDescriptorProto,
    FileDescriptorProto,
)

from sluice.schemas.formats.base import Incompatibility
from sluice.schemas.formats.protobuf_text import SCALAR_TYPE_NAMES, in_real_oneof, package_prefix

__all__ = ["COMPATIBLE_CHANGES", "descriptor_differences"]


def descriptor_differences(
    writer: FileDescriptorProto,
    writer_files: Mapping[str, FileDescriptorProto],
    reader: FileDescriptorProto,
    reader_files: Mapping[str, FileDescriptorProto],
) -> list[Incompatibility]:
    """Every difference Confluent's ``SchemaDiff`` finds from *writer* to *reader*, compatible
    ones included (``kind`` in :data:`COMPATIBLE_CHANGES`), each once.

    Each side's files hold its file and every file it imports, by import path, type names fully
    qualified (as compiled): a field's message type is compared through them.

    >>> from google.protobuf import text_format
    >>> def compiled(fields: str) -> FileDescriptorProto:
    ...     text = f'name: "m.proto" syntax: "proto3" message_type {{ name: "M" {fields} }}'
    ...     return text_format.Parse(text, FileDescriptorProto())
    >>> old = compiled('field { name: "a" number: 1 label: LABEL_OPTIONAL type: TYPE_INT32 }')
    >>> new = compiled('field { name: "a" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING }')
    >>> [(d.kind, d.path) for d in descriptor_differences(old, {}, new, {})]
    [('FIELD_SCALAR_KIND_CHANGED', '#/M/1')]
    """
    original, update = _Side(writer, writer_files), _Side(reader, reader_files)
    diff = _Diff(original, update, _type_table(original), _type_table(update))
    diff.files()
    seen: set[tuple[str, str]] = set()
    found: list[Incompatibility] = []
    for difference in diff.found:
        if (difference.kind, difference.path) in seen:
            continue
        seen.add((difference.kind, difference.path))
        description = _DESCRIPTIONS.get(difference.kind, difference.kind.replace("_", " ").lower())
        if difference.detail:
            description += f" ({difference.detail})"
        found.append(
            Incompatibility(
                difference.kind, difference.path, f"{description} at '{difference.path}'"
            )
        )
    return found


#: Confluent's ``SchemaDiff.COMPATIBLE_CHANGES``: every other difference breaks compatibility.
COMPATIBLE_CHANGES = frozenset(
    {
        "MESSAGE_ADDED",
        "MESSAGE_MOVED",
        "ENUM_ADDED",
        "ENUM_REMOVED",
        "ENUM_CONST_ADDED",
        "ENUM_CONST_CHANGED",
        "ENUM_CONST_REMOVED",
        "FIELD_ADDED",
        "FIELD_REMOVED",
        "FIELD_NAME_CHANGED",
        "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
        "ONEOF_ADDED",
        "ONEOF_REMOVED",
        "ONEOF_FIELD_ADDED",
    }
)

_DESCRIPTIONS = {
    "PACKAGE_CHANGED": "The package of the schema changed",
    "MESSAGE_REMOVED": "A message was removed",
    "FIELD_KIND_CHANGED": "The kind of a field changed (scalar, enum, message or map)",
    "FIELD_SCALAR_KIND_CHANGED": "The type of a scalar field changed to a wire-incompatible type",
    "FIELD_NAMED_TYPE_CHANGED": "The message type of a field changed",
    "REQUIRED_FIELD_ADDED": "A required field was added",
    "REQUIRED_FIELD_REMOVED": "A required field was removed",
    "ONEOF_FIELD_REMOVED": "A field was removed from a oneof",
    "MULTIPLE_FIELDS_MOVED_TO_ONEOF": "More than one existing field was moved into one oneof",
    "FIELD_MOVED_TO_EXISTING_ONEOF": "An existing field was moved into a oneof that existed",
}

# Wire-compatible groups of scalar types (Confluent's ScalarKind; enums read as varints).
_SCALAR_KINDS = {
    FieldDescriptorProto.TYPE_INT32: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_INT64: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_UINT32: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_UINT64: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_BOOL: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_ENUM: "GENERAL_NUMBER",
    FieldDescriptorProto.TYPE_SINT32: "SIGNED_NUMBER",
    FieldDescriptorProto.TYPE_SINT64: "SIGNED_NUMBER",
    FieldDescriptorProto.TYPE_STRING: "STRING_OR_BYTES",
    FieldDescriptorProto.TYPE_BYTES: "STRING_OR_BYTES",
    FieldDescriptorProto.TYPE_FIXED32: "FIXED32",
    FieldDescriptorProto.TYPE_SFIXED32: "FIXED32",
    FieldDescriptorProto.TYPE_FIXED64: "FIXED64",
    FieldDescriptorProto.TYPE_SFIXED64: "FIXED64",
    FieldDescriptorProto.TYPE_FLOAT: "FLOAT",
    FieldDescriptorProto.TYPE_DOUBLE: "DOUBLE",
}


@dataclass(frozen=True, slots=True)
class _Side:
    """One side of the comparison: its file, and every file it imports (itself included)."""

    main: FileDescriptorProto
    files: Mapping[str, FileDescriptorProto]


@dataclass(frozen=True, slots=True)
class _TypeInfo:
    package: str
    file: str
    message: DescriptorProto | None  # None: an enum


def _type_table(side: _Side) -> dict[str, _TypeInfo]:
    table: dict[str, _TypeInfo] = {}

    def walk(package: str, file: str, prefix: str, messages: Sequence[DescriptorProto]) -> None:
        for message in messages:
            name = prefix + message.name
            table[name] = _TypeInfo(package, file, message)
            for enum in message.enum_type:
                table[f"{name}.{enum.name}"] = _TypeInfo(package, file, None)
            walk(package, file, name + ".", message.nested_type)

    for proto in side.files.values():
        walk(proto.package, proto.name, package_prefix(proto.package), proto.message_type)
        for enum in proto.enum_type:
            name = package_prefix(proto.package) + enum.name
            table[name] = _TypeInfo(proto.package, proto.name, None)
    return table


@dataclass(frozen=True, slots=True)
class _Difference:
    kind: str
    path: str
    detail: str = ""


@dataclass
class _Diff:
    """Confluent's ``Context``: the differences found so far, where they are, types on each side."""

    original: _Side  # the writer's schema
    update: _Side  # the reader's schema
    original_types: dict[str, _TypeInfo]
    update_types: dict[str, _TypeInfo]
    path: list[str] = field(default_factory=list)
    # ids of the writer's messages being compared, against recursion (Confluent's SchemaScope);
    # the files outlive the comparison, so each sub-message keeps its one Python object.
    in_progress: set[int] = field(default_factory=set)
    found: list[_Difference] = field(default_factory=list)

    def add(self, kind: str, detail: str = "") -> None:
        self.found.append(_Difference(kind, "#/" + "/".join(self.path), detail))

    def enter(self, part: str) -> _Scope:
        return _Scope(self.path, part)

    def sub(self, path: list[str]) -> _Diff:
        return _Diff(
            self.original,
            self.update,
            self.original_types,
            self.update_types,
            path=list(path),
            in_progress=set(self.in_progress),
        )

    def compatible(self) -> bool:
        return all(difference.kind in COMPATIBLE_CHANGES for difference in self.found)

    # SchemaDiff.compare
    def files(self) -> None:
        if self.original.main.package != self.update.main.package:
            detail = f"{self.original.main.package!r} became {self.update.main.package!r}"
            self.add("PACKAGE_CHANGED", detail)
        self.types(
            self.original.main.message_type,
            self.original.main.enum_type,
            self.update.main.message_type,
            self.update.main.enum_type,
        )

    # SchemaDiff.compareTypeElements (map entries are not types of their own, as in Wire's text)
    def types(
        self,
        original_messages: Sequence[DescriptorProto],
        original_enums: Sequence[EnumDescriptorProto],
        update_messages: Sequence[DescriptorProto],
        update_enums: Sequence[EnumDescriptorProto],
    ) -> None:
        def by_name(
            messages: Sequence[DescriptorProto],
        ) -> dict[str, tuple[int, DescriptorProto]]:
            kept = [message for message in messages if not message.options.map_entry]
            return {message.name: (index, message) for index, message in enumerate(kept)}

        before, after = by_name(original_messages), by_name(update_messages)
        for name in sorted(before.keys() | after.keys()):
            with self.enter(name):
                if name not in after:
                    self.add("MESSAGE_REMOVED", f"message {name} is gone")
                elif name not in before:
                    self.add("MESSAGE_ADDED")
                else:
                    self.message(before[name][1], after[name][1])
                    if before[name][0] != after[name][0]:
                        self.add("MESSAGE_MOVED")
        enums_before = {enum.name: enum for enum in original_enums}
        enums_after = {enum.name: enum for enum in update_enums}
        for name in sorted(enums_before.keys() | enums_after.keys()):
            with self.enter(name):
                if name not in enums_after:
                    self.add("ENUM_REMOVED")
                elif name not in enums_before:
                    self.add("ENUM_ADDED")
                else:
                    self.enum(enums_before[name], enums_after[name])

    # EnumSchemaDiff.compare
    def enum(
        self,
        original: EnumDescriptorProto,
        update: EnumDescriptorProto,
    ) -> None:
        before = {value.number: value.name for value in original.value}
        after = {value.number: value.name for value in update.value}
        for number in sorted(before.keys() | after.keys()):
            with self.enter(str(number)):
                if number not in after:
                    self.add("ENUM_CONST_REMOVED")
                elif number not in before:
                    self.add("ENUM_CONST_ADDED")
                elif before[number] != after[number]:
                    self.add("ENUM_CONST_CHANGED")

    # MessageSchemaDiff.compare
    def message(self, original: DescriptorProto, update: DescriptorProto) -> None:
        if id(original) not in self.in_progress:
            self.in_progress.add(id(original))
            try:
                self.message_fields(original, update)
            finally:
                self.in_progress.discard(id(original))
        self.types(original.nested_type, original.enum_type, update.nested_type, update.enum_type)

    def message_fields(self, original: DescriptorProto, update: DescriptorProto) -> None:
        before_top, before_oneofs = _split_fields(original)
        after_top, after_oneofs = _split_fields(update)
        before_all = {**before_top, **{n: f for o in before_oneofs.values() for n, f in o.items()}}
        after_all = {**after_top, **{n: f for o in after_oneofs.values() for n, f in o.items()}}
        before_oneof_of = {n: name for name, fields in before_oneofs.items() for n in fields}
        after_oneof_of = {n: name for name, fields in after_oneofs.items() for n in fields}
        remaining_top = dict(before_top)
        for oneof_name, members in after_oneofs.items():
            with self.enter(oneof_name):
                moved = existing = 0
                for number in members:
                    if remaining_top.pop(number, None) is not None:
                        moved += 1
                    elif number in before_oneof_of:
                        existing += 1
                if moved > 1:
                    self.add("MULTIPLE_FIELDS_MOVED_TO_ONEOF")
                elif moved == 1 and existing > 0:
                    self.add("FIELD_MOVED_TO_EXISTING_ONEOF")
        for oneof_name in sorted(before_oneofs.keys() | after_oneofs.keys()):
            with self.enter(oneof_name):
                if oneof_name not in after_oneofs:
                    self.add("ONEOF_REMOVED")
                elif oneof_name not in before_oneofs:
                    self.add("ONEOF_ADDED")
                else:
                    self.oneof(before_oneofs[oneof_name], after_oneofs[oneof_name], after_all)
        for number in sorted(remaining_top.keys() | after_top.keys()):
            with self.enter(str(number)):
                before_field, after_field = remaining_top.get(number), after_top.get(number)
                if after_field is None and before_field is not None:
                    required = before_field.label == FieldDescriptorProto.LABEL_REQUIRED
                    self.add(
                        "REQUIRED_FIELD_REMOVED" if required else "FIELD_REMOVED",
                        f"field {before_field.name} = {number} is gone",
                    )
                elif before_field is None and after_field is not None:
                    required = after_field.label == FieldDescriptorProto.LABEL_REQUIRED
                    self.add(
                        "REQUIRED_FIELD_ADDED" if required else "FIELD_ADDED",
                        f"field {after_field.name} = {number} is new",
                    )
                elif before_field is not None and after_field is not None:
                    self.field(before_field, after_field)
        for number in sorted(before_all.keys() & after_all.keys()):
            before_oneof, after_oneof = before_oneof_of.get(number), after_oneof_of.get(number)
            if before_oneof == after_oneof:  # both top level, or both in the same oneof
                continue
            with self.enter(str(number)):
                self.field(before_all[number], after_all[number])

    # OneOfDiff.compare
    def oneof(
        self,
        original: Mapping[int, FieldDescriptorProto],
        update: Mapping[int, FieldDescriptorProto],
        update_all: Mapping[int, FieldDescriptorProto],
    ) -> None:
        for number in sorted(original.keys() | update.keys()):
            with self.enter(str(number)):
                before_field, after_field = original.get(number), update.get(number)
                if after_field is None:
                    if number not in update_all:
                        self.add("ONEOF_FIELD_REMOVED", f"field number {number} is gone")
                elif before_field is None:
                    self.add("ONEOF_FIELD_ADDED")
                else:
                    self.field(before_field, after_field)

    # FieldSchemaDiff.compare
    def field(
        self,
        original: FieldDescriptorProto,
        update: FieldDescriptorProto,
    ) -> None:
        if original.name != update.name:
            self.add("FIELD_NAME_CHANGED", f"{original.name} became {update.name}")
        self.field_types(_FieldType.of(original, True, self), _FieldType.of(update, False, self))

    def field_types(self, original: _FieldType, update: _FieldType) -> None:
        if original.kind != update.kind:
            self.add("FIELD_KIND_CHANGED", f"{original.describe()} became {update.describe()}")
        elif original.kind == "SCALAR":
            if _SCALAR_KINDS.get(original.type) != _SCALAR_KINDS.get(update.type):
                detail = f"{original.describe()} became {update.describe()}"
                self.add("FIELD_SCALAR_KIND_CHANGED", detail)
        elif original.kind == "MAP":
            assert original.map_types is not None and update.map_types is not None
            self.field_types(original.map_types[0], update.map_types[0])
            self.field_types(original.map_types[1], update.map_types[1])
        else:
            self.message_types(original, update)

    # FieldSchemaDiff.compareMessageTypes
    def message_types(self, original: _FieldType, update: _FieldType) -> None:
        before = self.original_types.get(original.name)
        after = self.update_types.get(update.name)
        if before is None or after is None or before.message is None or after.message is None:
            if original.name != update.name:
                self.add("FIELD_NAMED_TYPE_CHANGED", f"{original.name} became {update.name}")
            return
        before_local = original.name.removeprefix(package_prefix(before.package))
        after_local = update.name.removeprefix(package_prefix(after.package))
        if before_local != after_local:
            self.add("FIELD_NAMED_TYPE_CHANGED", f"{original.name} became {update.name}")
            return
        if before.file != self.original.main.name and before.file == after.file:
            same = self.original.files.get(before.file) == self.update.files.get(after.file)
            if same:  # the same referenced file on both sides: nothing to compare
                return
        sub = self.sub(before_local.split("."))
        sub.message(before.message, after.message)
        self.found.extend(sub.found)
        if not sub.compatible():
            self.add("FIELD_NAMED_TYPE_CHANGED", f"{original.name} changed incompatibly")


@dataclass(frozen=True, slots=True)
class _FieldType:
    kind: str  # SCALAR (enums too), MESSAGE or MAP
    type: int
    name: str  # the full name of a message or enum type, else the scalar's name
    map_types: tuple[_FieldType, _FieldType] | None = None

    @staticmethod
    def of(item: FieldDescriptorProto, original: bool, diff: _Diff) -> _FieldType:
        types = diff.original_types if original else diff.update_types
        name = item.type_name.removeprefix(".") or SCALAR_TYPE_NAMES.get(item.type, "")
        if item.type in (FieldDescriptorProto.TYPE_MESSAGE, FieldDescriptorProto.TYPE_GROUP):
            info = types.get(name)
            if info is not None and info.message is not None and info.message.options.map_entry:
                key, value = info.message.field[0], info.message.field[1]
                pair = (_FieldType.of(key, original, diff), _FieldType.of(value, original, diff))
                return _FieldType("MAP", item.type, name, pair)
            return _FieldType("MESSAGE", item.type, name)
        return _FieldType("SCALAR", item.type, name)

    def describe(self) -> str:
        if self.map_types is not None:
            return f"map<{self.map_types[0].describe()}, {self.map_types[1].describe()}>"
        return self.name


def _split_fields(
    message: DescriptorProto,
) -> tuple[
    dict[int, FieldDescriptorProto],
    dict[str, dict[int, FieldDescriptorProto]],
]:
    """The message's fields outside any oneof, and each real oneof's (proto3 ``optional`` is a
    plain field, as in the ``.proto`` text)."""
    top: dict[int, FieldDescriptorProto] = {}
    oneofs: dict[str, dict[int, FieldDescriptorProto]] = {}
    for item in message.field:
        if in_real_oneof(item):
            oneofs.setdefault(message.oneof_decl[item.oneof_index].name, {})[item.number] = item
        else:
            top[item.number] = item
    return top, oneofs


class _Scope:
    __slots__ = ("_part", "_path")

    def __init__(self, path: list[str], part: str) -> None:
        self._path = path
        self._part = part

    def __enter__(self) -> None:
        self._path.append(self._part)

    def __exit__(self, *_: object) -> None:
        self._path.pop()
