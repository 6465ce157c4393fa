"""Descriptor pools for Protobuf schemas: :func:`new_pool` holds Google's and Confluent's own
files (what schemas import), :func:`registered_descriptor` reads a registered schema with its
references fetched from the registry, as confluent-kafka's deserializer does.

>>> new_pool().FindMessageTypeByName("google.type.Date").full_name
'google.type.Date'
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor

from sluice.connect.api.errors import ConverterError
from sluice.connect.converters.schema_registry.protobuf_names import confluent_meta

__all__ = ["new_pool", "registered_descriptor"]


def new_pool() -> descriptor_pool.DescriptorPool:
    """A descriptor pool holding Google's and Confluent's own files (what schemas import)."""
    from confluent_kafka.schema_registry.common.protobuf import _init_pool

    pool = descriptor_pool.DescriptorPool()
    _init_pool(pool)  # google/protobuf/*, google/type/*
    meta = confluent_meta()
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
