"""Subject name strategies (Confluent's class names) and the record name of a schema.

The subject a record's schema id must be registered under, as Confluent's serializers and
Confluent Server name it:

=====================================================================  =======================
``io.confluent.kafka.serializers.subject.TopicNameStrategy`` (default)  ``<topic>-value`` / ``-key``
``io.confluent.kafka.serializers.subject.RecordNameStrategy``           ``<record name>``
``io.confluent.kafka.serializers.subject.TopicRecordNameStrategy``      ``<topic>-<record name>``
=====================================================================  =======================

The record name (:func:`record_name`) is the full name of an Avro schema (``namespace.name``;
a primitive's type name), the ``title`` of a JSON schema, and for Protobuf the full name
(``package.Outer.Inner``) of the message that the record's message-index path picks in the
schema's ``FileDescriptorProto`` (``[0]``: its first message).

>>> subject_for(TOPIC_NAME, "orders", is_key=False, record=None)
'orders-value'
>>> subject_for(TOPIC_RECORD_NAME, "orders", is_key=True, record="shop.Order")
'orders-shop.Order'
>>> record_name("AVRO", '{"type": "record", "name": "Order", "namespace": "shop", "fields": []}')
'shop.Order'
>>> # package shop; message A {} message B { message C {} }, as format=serialized gives it
>>> record_name("PROTOBUF", "Cgd4LnByb3RvEgRzaG9wIgMKAUEiCAoBQhoDCgFD", (1, 0))
'shop.B.C'
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

__all__ = [
    "RECORD_NAME",
    "STRATEGIES",
    "TOPIC_NAME",
    "TOPIC_RECORD_NAME",
    "SchemaNameError",
    "record_name",
    "subject_for",
]

_PREFIX = "io.confluent.kafka.serializers.subject."
TOPIC_NAME = _PREFIX + "TopicNameStrategy"
RECORD_NAME = _PREFIX + "RecordNameStrategy"
TOPIC_RECORD_NAME = _PREFIX + "TopicRecordNameStrategy"
STRATEGIES = (TOPIC_NAME, RECORD_NAME, TOPIC_RECORD_NAME)
"""The strategy class names ``confluent.{key,value}.subject.name.strategy`` accept."""


class SchemaNameError(ValueError):
    """The schema has no record name the strategy can use."""


def needs_record_name(strategy: str) -> bool:
    """Whether the strategy's subject depends on the schema (not on the topic alone)."""
    return strategy != TOPIC_NAME


def subject_for(strategy: str, topic: str, *, is_key: bool, record: str | None) -> str:
    """The subject ``strategy`` names; ``record`` is the schema's record name (needed by all
    but the topic strategy)."""
    if strategy == TOPIC_NAME:
        return f"{topic}-{'key' if is_key else 'value'}"
    if record is None:
        raise SchemaNameError(f"{strategy} needs the schema's record name")
    return record if strategy == RECORD_NAME else f"{topic}-{record}"


def record_name(schema_type: str, schema: str, message_indexes: Sequence[int] = (0,)) -> str:
    """The record name of a registered schema (see the module's docstring)."""
    if schema_type == "PROTOBUF":
        return _protobuf_name(schema, message_indexes)
    try:
        parsed = json.loads(schema)
    except ValueError:
        raise SchemaNameError(f"the {schema_type} schema is not JSON") from None
    if schema_type == "JSON":
        title = parsed.get("title") if isinstance(parsed, dict) else None
        if not isinstance(title, str) or not title:
            raise SchemaNameError("the JSON schema has no title (its record name)")
        return title
    return _avro_name(parsed)


def _avro_name(parsed: object) -> str:
    """Avro's full name: ``namespace.name`` of a named type, else the type's name."""
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        name = parsed.get("name")
        if isinstance(name, str) and parsed.get("type") in ("record", "enum", "fixed", "error"):
            namespace = parsed.get("namespace")
            if "." in name or not isinstance(namespace, str) or not namespace:
                return name
            return f"{namespace}.{name}"
        kind = parsed.get("type")
        if isinstance(kind, str):
            return kind if kind not in ("record", "enum", "fixed", "error") else "record"
        return _avro_name(kind)
    if isinstance(parsed, list):
        return "union"
    raise SchemaNameError("the Avro schema has no name")


# -- Protobuf: the message of an index path, from the schema's FileDescriptorProto ----------


def _protobuf_name(schema: str, indexes: Sequence[int]) -> str:
    """The full name of the message at ``indexes`` (top-level index, then nested ones) of a
    schema the registry gave as its base64 ``FileDescriptorProto`` (parsed by the protobuf
    library itself)."""
    try:
        descriptor = descriptor_pb2.FileDescriptorProto.FromString(
            base64.b64decode(schema, validate=True)
        )
    except (binascii.Error, DecodeError):
        raise SchemaNameError("the Protobuf schema is not a serialized descriptor") from None
    names = [descriptor.package] if descriptor.package else []
    messages = descriptor.message_type
    for index in indexes or (0,):
        if not 0 <= index < len(messages):
            raise SchemaNameError(f"the Protobuf schema has no message at index path {indexes}")
        names.append(messages[index].name)
        messages = messages[index].nested_type
    return ".".join(names)
