"""Message classes for Protobuf schemas given as text, compiled by ``protoc`` (grpcio-tools).

confluent-kafka's ``ProtobufSerializer``/``ProtobufDeserializer`` work on generated message
classes; a REST client sends a ``.proto`` text (or a schema id). :func:`message_class`
compiles the text with the real ``protoc`` into a descriptor set, loads it into a descriptor
pool of its own and returns the class of a message in it (the first one, as Confluent's
serializer uses the first message of a schema unless told otherwise). Schema references
(imports of other registered schemas) are not resolved; imports of Google's well-known types
are. ``protoc`` writes its diagnostics to the process's standard error: while it runs (a few
milliseconds, once per schema: the classes are cached) that descriptor points at a file of its
own, so the diagnostics end up in the error, not in the proxy's log.

>>> cls = message_class('syntax = "proto3"; package p; message M { int32 a = 1; }')
>>> cls.DESCRIPTOR.full_name, cls(a=3).a
('p.M', 3)
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import grpc_tools
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_tools import protoc

__all__ = ["ProtoSchemaError", "message_class"]

_INCLUDE = str(Path(grpc_tools.__file__).parent / "_proto")


class ProtoSchemaError(ValueError):
    """A ``.proto`` text ``protoc`` refuses, with its diagnostics."""


_PROTOC = threading.Lock()


def _protoc(tmp: str, source: Path, out: Path, errors_path: Path) -> int:
    saved = os.dup(2)
    try:
        with errors_path.open("wb") as errors, contextlib.redirect_stderr(io.StringIO()):
            os.dup2(errors.fileno(), 2)
            code: int = protoc.main(
                [
                    "protoc",
                    f"-I{tmp}",
                    f"-I{_INCLUDE}",
                    "--include_imports",
                    f"--descriptor_set_out={out}",
                    str(source),
                ]
            )
            return code
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@functools.lru_cache(maxsize=256)
def message_class(schema: str) -> Any:
    """The class of the first message of the ``.proto`` text ``schema``."""
    with tempfile.TemporaryDirectory(prefix="sluice-proto-") as tmp:
        source = Path(tmp) / "schema.proto"
        source.write_text(schema, encoding="utf-8")
        out = Path(tmp) / "schema.desc"
        # protoc writes its diagnostics to the process's stderr (fd 2): capture them there
        errors_path = Path(tmp) / "errors.txt"
        with _PROTOC:  # one at a time: fd 2 is the process's
            code = _protoc(tmp, source, out, errors_path)
        if code != 0:
            text = errors_path.read_text(errors="replace").replace(str(source), "schema")
            raise ProtoSchemaError(text.strip() or "protoc refused the schema")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    main = files.file[-1]
    if not main.message_type:
        raise ProtoSchemaError("the schema defines no message")
    name = (
        f"{main.package}.{main.message_type[0].name}" if main.package else main.message_type[0].name
    )
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))
