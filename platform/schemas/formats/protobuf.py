"""The ``PROTOBUF`` schema format, as Confluent Schema Registry defines it.

A client registers a Protobuf schema in one of two forms, and the registry accepts both:

* ``.proto`` text (proto2, proto3 or editions), as the Java serializer and ``curl`` users send.
  It is compiled by ``protoc`` itself (``grpc_tools.protoc``, run as a subprocess) with the
  references written beside it at their import paths; protoc's error text, file and line
  included, becomes the :class:`InvalidSchemaError`. The well-known files that Confluent resolves
  without a reference (``google/protobuf/*.proto``, ``google/type/*.proto``,
  ``confluent/meta.proto``, ``confluent/type/decimal.proto``) are always importable.
* base64 of a serialized ``FileDescriptorProto``: what confluent-kafka's Python
  ``ProtobufSerializer`` registers (``_schema_to_str(descriptor.file)``), each imported file
  registered first under its own subject and referenced by its import path. A text that is
  base64 of a descriptor (``.proto`` text never is: it needs ``;`` or ``{``) is taken this way;
  its descriptor is checked by building it into a descriptor pool.

Either way the result is a :class:`ProtobufSchema` holding the compiled ``FileDescriptorProto``
(type names fully qualified). Its :attr:`~ProtobufSchema.canonical` text is ``.proto`` text
rendered from the descriptor as Confluent's ``ProtobufSchemaUtils`` lays it out, whichever form
was registered (Confluent stores that text too), checked to compile back;
:meth:`~ProtobufSchema.serialized` is the base64 form that the registry answers to
``?format=serialized`` (``GET /schemas/ids/{id}``, ``/subjects/{s}/versions/{v}``, ``.../latest``),
which the Python deserializer asks for to learn the writer's message from the message indexes.
Rendered text (:mod:`sluice.schemas.formats.protobuf_text`) keeps the order of nested messages,
map entries included, since those positions are the message indexes the Python serializer writes.

Compatibility follows Confluent's ``SchemaDiff`` (:mod:`sluice.schemas.formats.protobuf_diff`):
the differences between the writer's schema (Confluent's *original*) and the reader's (*update*)
are listed with Confluent's ``Difference.Type`` names and paths (``#/Order/3``: message ``Order``,
field number 3); those outside Confluent's ``COMPATIBLE_CHANGES`` are the errors.

>>> schema = FORMAT.parse('''
... syntax = "proto3";
... package shop;
... message Order {
...   int64 id = 1;
...   message Line { string sku = 1; }
...   repeated Line lines = 2;
... }''', {})
>>> schema.record_names()
['shop.Order']
>>> schema.message_indexes("shop.Order.Line")
[0, 0]
>>> FORMAT.parse(schema.serialized(), {}).record_names()
['shop.Order']
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import importlib
import importlib.resources
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pool, unknown_fields
from google.protobuf.descriptor_pb2 import (
    DescriptorProto,
    FieldDescriptorProto,
    FileDescriptorProto,
    FileDescriptorSet,
)
from google.protobuf.message import DecodeError

from sluice.schemas.formats.base import Incompatibility, InvalidSchemaError, ParsedSchema
from sluice.schemas.formats.protobuf_diff import COMPATIBLE_CHANGES, descriptor_differences
from sluice.schemas.formats.protobuf_text import default_json_name, package_prefix, render

__all__ = ["COMPATIBLE_CHANGES", "FORMAT", "ProtobufFormat", "ProtobufSchema", "differences"]


#: Name given to the registered file itself (a reference of the same name pushes it aside).
_MAIN_NAME = "schema.proto"
_PROTOC_TIMEOUT_S = 60.0
_CACHE_SIZE = 256

# Files a schema may import without a reference, as Confluent's registry and client resolve
# them (``_is_builtin``: the ``confluent/``, ``google/protobuf/`` and ``google/type/`` trees).
_BUILTIN_MODULES = (
    *(
        f"google.protobuf.{name}_pb2"
        for name in [
            "any",
            "api",
            "descriptor",
            "duration",
            "empty",
            "field_mask",
            "source_context",
            "struct",
            "timestamp",
            "type",
            "wrappers",
        ]
    ),
    *(
        f"google.type.{name}_pb2"
        for name in [
            "calendar_period",
            "color",
            "date",
            "datetime",
            "dayofweek",
            "expr",
            "fraction",
            "latlng",
            "money",
            "month",
            "postal_address",
            "quaternion",
            "timeofday",
        ]
    ),
    "confluent_kafka.schema_registry.confluent.meta_pb2",
    "confluent_kafka.schema_registry.confluent.type.decimal_pb2",
)

_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_IMPORT_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")


# --- compiling ------------------------------------------------------------------------------


@functools.cache
def _builtin_files() -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for module_name in _BUILTIN_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an optional package (googleapis-common-protos) is missing
            continue
        serialized: bytes = module.DESCRIPTOR.serialized_pb
        files[module.DESCRIPTOR.name] = serialized
    return files


def _well_known_include() -> str:
    return str(importlib.resources.files("grpc_tools") / "_proto")


def _decode_base64(text: str) -> FileDescriptorProto | None:
    """The descriptor *text* is the base64 of, or None if it is not one (then it is .proto text)."""
    stripped = text.strip()
    if not stripped or not _BASE64.fullmatch(stripped):
        return None
    try:
        data = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return None
    proto = FileDescriptorProto()
    try:
        proto.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError):
        return None
    if proto.SerializeToString(deterministic=True) == b"" or _has_unknown_fields(proto):
        return None
    return proto


def _has_unknown_fields(proto: FileDescriptorProto) -> bool:
    return len(unknown_fields.UnknownFieldSet(proto)) > 0


def _check_import_path(name: str) -> None:
    parts = name.split("/")
    if not _IMPORT_PATH.fullmatch(name) or any(part in ("", ".", "..") for part in parts):
        raise InvalidSchemaError(
            f"invalid reference name {name!r}: a Protobuf reference is named by its import path "
            "(for example 'shop/customer.proto')"
        )


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A compiled schema: its file and every file it imports by import path (imports before
    importers, the file itself last), type names fully qualified. Shared through the parse
    cache: never mutated."""

    main: FileDescriptorProto
    files: Mapping[str, FileDescriptorProto]
    from_base64: bool
    canonical: str  # the .proto text rendered from the descriptor


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _compile(text: str, references: tuple[tuple[str, str], ...]) -> _Compiled:
    main_name = _MAIN_NAME
    while any(name == main_name for name, _ in references):
        main_name = "_" + main_name
    sources: dict[str, str] = {}
    decoded: dict[str, FileDescriptorProto] = {}
    for name, body in ((main_name, text), *references):
        if name != main_name:
            _check_import_path(name)
        proto = _decode_base64(body)
        if proto is None:
            sources[name] = body
        else:
            proto.name = name
            decoded[name] = proto
    builtins = {
        name: FileDescriptorProto.FromString(data) for name, data in _builtin_files().items()
    }
    files: dict[str, FileDescriptorProto] = {**builtins, **decoded}
    if sources:
        files.update(_run_protoc(sources, {**builtins, **decoded}))
    pool = descriptor_pool.DescriptorPool()
    added: dict[str, FileDescriptorProto] = {}
    _add_to_pool(pool, main_name, files, added, ())
    compiled = _Compiled(added[main_name], added, main_name in decoded, text)
    # Stored as .proto text rendered from the descriptor, as Confluent stores it whichever form
    # was registered: the text and the base64 form of one schema are the same schema (one id,
    # found by a lookup in either form); the rendered text must compile back.
    rendered = render(compiled.main, compiled.files)
    if rendered != text:
        try:
            _compile(rendered, references)
        except InvalidSchemaError as exc:
            raise InvalidSchemaError(f"the schema has no valid .proto text form: {exc}") from None
    return dataclasses.replace(compiled, canonical=rendered)


def _add_to_pool(
    pool: descriptor_pool.DescriptorPool,
    name: str,
    files: Mapping[str, FileDescriptorProto],
    added: dict[str, FileDescriptorProto],
    importing: tuple[str, ...],
) -> None:
    if name in added:
        return
    if name in importing:
        raise InvalidSchemaError(f"import cycle: {' -> '.join((*importing, name))}")
    proto = files.get(name)
    if proto is None:
        raise InvalidSchemaError(
            f"{importing[-1]}: import {name!r} not found; register it and add a reference named "
            f"{name!r}"
        )
    for dependency in proto.dependency:
        _add_to_pool(pool, dependency, files, added, (*importing, name))
    try:
        pool.Add(proto)
        resolved = FileDescriptorProto()
        pool.FindFileByName(name).CopyToProto(resolved)
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidSchemaError(f"{name}: {exc}") from None
    _clear_default_json_names(resolved)
    added[name] = resolved


def _clear_default_json_names(proto: FileDescriptorProto) -> None:
    """Drop each ``json_name`` protoc sets to its default, as generated code's descriptors do,
    so that a file compiled from text and the same file sent as base64 compare equal."""

    def clear(fields: Sequence[FieldDescriptorProto]) -> None:
        for item in fields:
            if item.HasField("json_name") and item.json_name == default_json_name(item.name):
                item.ClearField("json_name")

    def walk(messages: Sequence[DescriptorProto]) -> None:
        for message in messages:
            clear(message.field)
            clear(message.extension)
            walk(message.nested_type)

    clear(proto.extension)
    walk(proto.message_type)


def _run_protoc(
    sources: Mapping[str, str], available: Mapping[str, FileDescriptorProto]
) -> dict[str, FileDescriptorProto]:
    with tempfile.TemporaryDirectory(prefix="sluice-protoc-") as tmp:
        root = Path(tmp) / "src"
        for name, body in sources.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                path.write_bytes(body.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise InvalidSchemaError(f"{name}: not valid UTF-8 text ({exc.reason})") from None
        out = Path(tmp) / "out.pb"
        command = [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"--proto_path={root}",
            f"--proto_path={_well_known_include()}",
            "--include_imports",
            f"--descriptor_set_out={out}",
        ]
        given = FileDescriptorSet(
            file=[proto for name, proto in available.items() if name not in sources]
        )
        if given.file:
            given_path = Path(tmp) / "in.pb"
            given_path.write_bytes(given.SerializeToString())
            command.append(f"--descriptor_set_in={given_path}")
        command.extend(sorted(sources))
        try:
            done = subprocess.run(
                command, cwd=root, capture_output=True, timeout=_PROTOC_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise InvalidSchemaError(
                f"protoc did not finish compiling the schema in {_PROTOC_TIMEOUT_S:.0f} s"
            ) from None
        if done.returncode != 0:
            raise InvalidSchemaError(_protoc_errors(done.stderr, root, done.returncode))
        compiled = FileDescriptorSet.FromString(out.read_bytes())
    return {proto.name: proto for proto in compiled.file}


_LOG_LINE = re.compile(r"WARNING: All log messages before absl|[IWEF]\d{4} \d\d:\d\d:\d\d")
_NOT_FOUND = re.compile(r"^(\S+): File not found\.$", re.MULTILINE)


def _protoc_errors(stderr: bytes, root: Path, returncode: int) -> str:
    """protoc's error lines (``file:line:column: message``), its absl logging left out."""
    text = stderr.decode("utf-8", "replace").replace(str(root) + "/", "")
    lines = [line for line in text.splitlines() if line.strip() and not _LOG_LINE.match(line)]
    message = "\n".join(lines) or text.strip() or f"protoc failed with exit code {returncode}"
    missing = sorted(set(_NOT_FOUND.findall(message)))
    if missing:
        named = ", ".join(repr(name) for name in missing)
        message += f"\n(add a reference named {named}, registered under its own subject)"
    return message


# --- the parsed schema ----------------------------------------------------------------------


class ProtobufSchema:
    """A compiled Protobuf schema (:class:`~sluice.schemas.formats.base.ParsedSchema`).

    Never built directly: :meth:`ProtobufFormat.parse` makes one.
    """

    __slots__ = ("_compiled", "_references")

    def __init__(self, compiled: _Compiled, references: Mapping[str, str]) -> None:
        self._compiled = compiled
        self._references = dict(references)

    def __repr__(self) -> str:
        return f"ProtobufSchema({self.record_names()!r})"

    @property
    def schema_type(self) -> str:
        """``PROTOBUF``."""
        return "PROTOBUF"

    @property
    def canonical(self) -> str:
        """The text stored: ``.proto`` text rendered from the descriptor (comments and layout
        of a registered text are not kept, as in Confluent's registry)."""
        return self._compiled.canonical

    @property
    def references(self) -> Mapping[str, str]:
        """The resolved references the schema was parsed with, by import path."""
        return self._references

    @property
    def descriptor(self) -> FileDescriptorProto:
        """A copy of the compiled file (type names fully qualified)."""
        copy = FileDescriptorProto()
        copy.CopyFrom(self._compiled.main)
        return copy

    def files(self) -> list[FileDescriptorProto]:
        """Copies of the compiled file and of every file it imports, references and well-known
        files alike, imports before their importers (the order a descriptor pool takes them)."""
        copies = []
        for proto in self._compiled.files.values():
            copy = FileDescriptorProto()
            copy.CopyFrom(proto)
            copies.append(copy)
        return copies

    @property
    def from_base64(self) -> bool:
        """Whether the schema was registered as base64 of a ``FileDescriptorProto``."""
        return self._compiled.from_base64

    def serialized(self) -> str:
        """Base64 of the serialized ``FileDescriptorProto``: Confluent's ``format=serialized``.

        Its ``dependency`` list holds the import paths, which are the references' names.
        """
        data = self._compiled.main.SerializeToString(deterministic=True)
        return base64.standard_b64encode(data).decode("ascii")

    def to_text(self, *, normalize: bool = False) -> str:
        """``.proto`` text rendered from the descriptor (normalized: Confluent's normal form)."""
        return render(self._compiled.main, self._compiled.files, normalize=normalize)

    def normalized(self) -> ProtobufSchema:
        """Confluent's normal form: imports and options sorted, fields in number order, type
        names fully qualified; two schemas differing only in those normalize alike.

        >>> a = FORMAT.parse('syntax = "proto3"; message M { int32 a = 1; string b = 2; }', {})
        >>> b = FORMAT.parse('syntax = "proto3"; message M { string b = 2; int32 a = 1; }', {})
        >>> a.normalized().canonical == b.normalized().canonical
        True
        """
        parsed = FORMAT.parse(self.to_text(normalize=True), self._references)
        assert isinstance(parsed, ProtobufSchema)
        # stored as the normal form's text (a plain rendering would undo the option order)
        normal = dataclasses.replace(parsed._compiled, canonical=self.to_text(normalize=True))
        return ProtobufSchema(normal, self._references)

    def record_names(self) -> list[str]:
        """Full names of the top-level messages in file order; the first is the main one.

        >>> FORMAT.parse('syntax = "proto3"; package p; message A {} message B {}', {}
        ...              ).record_names()
        ['p.A', 'p.B']
        """
        prefix = package_prefix(self._compiled.main.package)
        return [prefix + message.name for message in self._compiled.main.message_type]

    def message_indexes(self, full_name: str) -> list[int]:
        """The message-index path of a (nested) message in the Confluent wire format.

        Each index is a position among the file's top-level messages, then among the nested
        messages of the one before (map entries count, as in the descriptor).

        >>> schema = FORMAT.parse('''syntax = "proto3"; package p;
        ...     message A {}
        ...     message B { message C {} message D { message E {} } }''', {})
        >>> schema.message_indexes("p.A"), schema.message_indexes("p.B.D.E")
        ([0], [1, 1, 0])
        >>> schema.message_name([1, 1, 0])
        'p.B.D.E'
        """
        name = full_name.removeprefix(".")
        prefix = package_prefix(self._compiled.main.package)
        if not name.startswith(prefix):
            raise KeyError(f"no message {full_name!r} in package {self._compiled.main.package!r}")
        indexes: list[int] = []
        messages: Sequence[DescriptorProto] = self._compiled.main.message_type
        for part in name[len(prefix) :].split("."):
            for index, message in enumerate(messages):
                if message.name == part:
                    indexes.append(index)
                    messages = message.nested_type
                    break
            else:
                raise KeyError(f"no message {full_name!r} in the schema")
        return indexes

    def message_name(self, indexes: Sequence[int]) -> str:
        """The full name of the message at a message-index path (see :meth:`message_indexes`);
        an empty path means the first message, as in the wire format."""
        path = list(indexes) or [0]
        names: list[str] = []
        messages: Sequence[DescriptorProto] = self._compiled.main.message_type
        for index in path:
            if not 0 <= index < len(messages):
                raise KeyError(f"message index path {path} is out of range")
            names.append(messages[index].name)
            messages = messages[index].nested_type
        return package_prefix(self._compiled.main.package) + ".".join(names)


def differences(writer: ProtobufSchema, reader: ProtobufSchema) -> list[Incompatibility]:
    """Every difference Confluent's ``SchemaDiff`` finds from *writer* to *reader*, compatible
    ones included (``kind`` in :data:`COMPATIBLE_CHANGES`), each once
    (:func:`~sluice.schemas.formats.protobuf_diff.descriptor_differences` on their files).

    >>> old = FORMAT.parse('syntax = "proto3"; message M { int32 a = 1; }', {})
    >>> new = FORMAT.parse('syntax = "proto3"; message M { int64 a = 1; string b = 2; }', {})
    >>> [(d.kind, d.path) for d in differences(old, new)]
    [('FIELD_ADDED', '#/M/2')]
    """
    original, update = writer._compiled, reader._compiled
    return descriptor_differences(original.main, original.files, update.main, update.files)


# --- the format -----------------------------------------------------------------------------


class ProtobufFormat:
    """Confluent's ``PROTOBUF`` schema type (:class:`~sluice.schemas.formats.base.SchemaFormat`)."""

    @property
    def name(self) -> str:
        """``PROTOBUF``."""
        return "PROTOBUF"

    def parse(self, text: str, references: Mapping[str, str]) -> ProtobufSchema:
        """Compile *text* (``.proto`` text or base64 of a ``FileDescriptorProto``) with
        *references* (import path → schema text, in either form).

        >>> FORMAT.parse('syntax = "proto3"; message M { int32 a = 1 }', {})
        Traceback (most recent call last):
        ...
        sluice.schemas.formats.base.InvalidSchemaError: schema.proto:1:44: Expected ";".
        """
        if not isinstance(text, str):
            raise InvalidSchemaError("a Protobuf schema is a string")
        if not text.strip():
            raise InvalidSchemaError("empty schema: a Protobuf schema is .proto text or base64")
        compiled = _compile(text, tuple(sorted(references.items())))
        return ProtobufSchema(compiled, references)

    def read_errors(self, reader: ParsedSchema, writer: ParsedSchema) -> list[Incompatibility]:
        """Why *reader* cannot read what *writer* wrote: the differences from *writer* to
        *reader* outside Confluent's ``COMPATIBLE_CHANGES``.

        >>> old = FORMAT.parse('syntax = "proto3"; message M { int32 a = 1; }', {})
        >>> new = FORMAT.parse('syntax = "proto3"; message M { string a = 1; }', {})
        >>> [(e.kind, e.path) for e in FORMAT.read_errors(new, old)]
        [('FIELD_SCALAR_KIND_CHANGED', '#/M/1')]
        """
        if not isinstance(reader, ProtobufSchema) or not isinstance(writer, ProtobufSchema):
            return [
                Incompatibility(
                    "SCHEMA_TYPE_CHANGED", "#/", "Incompatible because of different schema type"
                )
            ]
        return [
            difference
            for difference in differences(writer, reader)
            if difference.kind not in COMPATIBLE_CHANGES
        ]


#: The ``PROTOBUF`` format.
FORMAT = ProtobufFormat()
