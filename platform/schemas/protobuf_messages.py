"""Protobuf messages of a ``.proto`` text, for the schema serdes: :func:`message_class` compiles
the text with protoc once (a descriptor pool per text and references, holding every file it
imports: the well-known ones and the registered schemas its references name) and
:func:`message_to_dict` turns a message into plain Python values (field names as in the
``.proto``, enums by name).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from sluice.serde import SerdeError

__all__ = ["descriptor_pool_of", "message_class", "message_named", "message_to_dict"]

_pools: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[Any, list[str]]] = {}
_pools_lock = threading.Lock()


def message_class(
    proto: str, message: str | None = None, references: Mapping[str, str] | None = None
) -> Any:
    """The message class of *message* (full or short name; default: the first) in *proto*,
    compiled with *references* (import path → schema text: the registered schemas its imports
    name; well-known imports need none).

    >>> proto = 'syntax = "proto3"; package shop; message Order { int64 id = 1; }'
    >>> cls = message_class(proto)
    >>> cls.DESCRIPTOR.full_name, cls(id=7).id
    ('shop.Order', 7)
    >>> message_class(proto, "Order") is message_class(proto, "shop.Order") is cls
    True
    >>> money = 'syntax = "proto3"; package shop; message Money { int64 cents = 1; }'
    >>> priced = 'syntax = "proto3"; import "money.proto"; message P { shop.Money m = 1; }'
    >>> message_class(priced, references={"money.proto": money})(m={"cents": 5}).m.cents
    5
    """
    from google.protobuf import message_factory

    pool, names = descriptor_pool_of(proto, references or {})
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


def descriptor_pool_of(proto: str, references: Mapping[str, str]) -> tuple[Any, list[str]]:
    """A descriptor pool holding *proto* compiled (by protoc) with every file it imports
    (*references*: import path → schema text; well-known files), and its messages' full names
    (top-level first); one per text and references."""
    key = (proto, tuple(sorted(references.items())))
    with _pools_lock:
        if key in _pools:
            return _pools[key]
        from google.protobuf import descriptor_pool

        from sluice.schemas.formats import InvalidSchemaError, format_named

        try:
            parsed: Any = format_named("PROTOBUF").parse(proto, references)
        except InvalidSchemaError as error:
            raise SerdeError(f"bad Protobuf schema: {error}") from None
        pool = descriptor_pool.DescriptorPool()
        for file_proto in parsed.files():  # imports first
            pool.Add(file_proto)
        names: list[str] = parsed.record_names()
        if not names:
            raise SerdeError("the Protobuf schema defines no message")
        _pools[key] = (pool, names)
        return pool, names


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
