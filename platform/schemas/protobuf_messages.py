"""Protobuf messages of a ``.proto`` text, for the schema serdes: :func:`message_class` compiles
the text with protoc once (a descriptor pool per text, with the well-known types it imports)
and :func:`message_to_dict` turns a message into plain Python values (field names as in the
``.proto``, enums by name).
"""

from __future__ import annotations

import threading
from typing import Any

from sluice.serde import SerdeError

__all__ = ["message_class", "message_named", "message_to_dict"]

_pools: dict[str, tuple[Any, list[str]]] = {}
_pools_lock = threading.Lock()


def message_class(proto: str, message: str | None = None) -> Any:
    """The message class of *message* (full or short name; default: the first) in *proto*.

    >>> proto = 'syntax = "proto3"; package shop; message Order { int64 id = 1; }'
    >>> cls = message_class(proto)
    >>> cls.DESCRIPTOR.full_name, cls(id=7).id
    ('shop.Order', 7)
    >>> message_class(proto, "Order") is message_class(proto, "shop.Order") is cls
    True
    """
    from google.protobuf import message_factory

    pool, names = _pool(proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(message_named(names, message))
    )


def message_named(names: list[str], message: str | None) -> str:
    """The full name among *names* (a schema's messages, top-level first) that *message* means:
    itself or a short name; the first message when ``None``.

    >>> message_named(["shop.Order", "shop.Line"], "Line")
    'shop.Line'
    >>> message_named(["shop.Order"], None)
    'shop.Order'
    """
    if message is None:
        return names[0]
    candidates = [n for n in names if n == message or n.rsplit(".", 1)[-1] == message]
    if not candidates:
        raise SerdeError(f"no message {message!r} in the schema (it has {', '.join(names)})")
    return candidates[0]


def _pool(proto: str) -> tuple[Any, list[str]]:
    """A descriptor pool holding *proto* compiled (by protoc), and its top-level messages."""
    with _pools_lock:
        if proto in _pools:
            return _pools[proto]
        from google.protobuf import descriptor_pool
        from google.protobuf.descriptor_pb2 import FileDescriptorProto

        from sluice.schemas.formats import InvalidSchemaError, format_named

        try:
            parsed: Any = format_named("PROTOBUF").parse(proto, {})
        except InvalidSchemaError as error:
            raise SerdeError(f"bad Protobuf schema: {error}") from None
        file_proto: FileDescriptorProto = parsed.descriptor
        pool = descriptor_pool.DescriptorPool()
        _add_dependencies(pool, file_proto, set())
        pool.Add(file_proto)
        names: list[str] = parsed.record_names()
        if not names:
            raise SerdeError("the Protobuf schema defines no message")
        _pools[proto] = (pool, names)
        return pool, names


def _add_dependencies(pool: Any, file_proto: Any, added: set[str]) -> None:
    """Well-known imports (``google/protobuf/*.proto``, Confluent's) into *pool*."""
    from google.protobuf import descriptor_pool
    from google.protobuf.descriptor_pb2 import FileDescriptorProto

    _import_well_known()
    for name in file_proto.dependency:
        if name in added:
            continue
        try:
            known = descriptor_pool.Default().FindFileByName(name)
        except KeyError:
            raise SerdeError(
                f"the Protobuf schema imports {name!r}: a serde built from .proto text takes "
                "well-known imports only; pass message_type= for schemas with references"
            ) from None
        dependency = FileDescriptorProto()
        known.CopyToProto(dependency)
        _add_dependencies(pool, dependency, added)
        pool.Add(dependency)
        added.add(name)


def _import_well_known() -> None:
    import importlib

    for module in (
        "google.protobuf.any_pb2",
        "google.protobuf.duration_pb2",
        "google.protobuf.empty_pb2",
        "google.protobuf.struct_pb2",
        "google.protobuf.timestamp_pb2",
        "google.protobuf.wrappers_pb2",
        "confluent_kafka.schema_registry.confluent.meta_pb2",
        "confluent_kafka.schema_registry.confluent.types.decimal_pb2",
    ):
        try:
            importlib.import_module(module)
        except ImportError:  # pragma: no cover - a client without Confluent's types
            continue


def message_to_dict(message: Any) -> dict[str, Any]:
    """A Protobuf message as a dict: every field by its ``.proto`` name (unset scalars as their
    defaults, unset messages as ``None``), enums by name, maps as dicts, repeated as lists.

    >>> cls = message_class('syntax = "proto3"; message P { string a = 1; repeated int32 b = 2; }')
    >>> message_to_dict(cls(a="x", b=[1, 2]))
    {'a': 'x', 'b': [1, 2]}
    """
    result: dict[str, Any] = {}
    for descriptor in message.DESCRIPTOR.fields:
        value = getattr(message, descriptor.name)
        if _is_map(descriptor):
            value_field = descriptor.message_type.fields_by_name["value"]
            result[descriptor.name] = {k: _field_value(value_field, v) for k, v in value.items()}
        elif _is_repeated(descriptor):
            result[descriptor.name] = [_field_value(descriptor, item) for item in value]
        elif descriptor.message_type is not None and not message.HasField(descriptor.name):
            result[descriptor.name] = None
        else:
            result[descriptor.name] = _field_value(descriptor, value)
    return result


def _is_map(descriptor: Any) -> bool:
    return bool(
        descriptor.message_type is not None and descriptor.message_type.GetOptions().map_entry
    )


def _is_repeated(descriptor: Any) -> bool:
    repeated = getattr(descriptor, "is_repeated", None)
    if repeated is not None:
        return bool(repeated)
    return bool(descriptor.label == descriptor.LABEL_REPEATED)  # pragma: no cover - old protobuf


def _field_value(descriptor: Any, value: Any) -> Any:
    if descriptor.message_type is not None:
        return message_to_dict(value)
    if descriptor.enum_type is not None:
        number = descriptor.enum_type.values_by_number.get(value)
        return number.name if number is not None else value
    return value
