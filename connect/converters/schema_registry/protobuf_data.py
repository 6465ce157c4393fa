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

:class:`ProtobufData` holds one object per direction:
:class:`~.protobuf_from_connect.ProtobufFromConnect` (Connect → proto3 files, classes, messages)
and :class:`~.protobuf_to_connect.ProtobufToConnect` (message types and messages → Connect). The
enum mapping is :mod:`.protobuf_enums`, the descriptor pools :mod:`.protobuf_descriptors`, the
names both directions use :mod:`.protobuf_names`.

>>> from sluice.connect.api.data import Field, Schema
>>> point = Schema.struct([Field("x", Schema("int32")), Field("y", Schema("int8"))], name="geo.P")
>>> file = ProtobufData().from_connect_schema(point)
>>> file.package, [(f.name, f.number, f.type) for f in file.message_type[0].field]
('geo', [('x', 1, 5), ('y', 2, 5)])
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from sluice.connect.api.data import Schema, Struct
from sluice.connect.converters.schema_registry.protobuf_descriptors import registered_descriptor
from sluice.connect.converters.schema_registry.protobuf_from_connect import ProtobufFromConnect
from sluice.connect.converters.schema_registry.protobuf_to_connect import ProtobufToConnect

__all__ = ["ProtobufData", "registered_descriptor"]


class ProtobufData:
    """Confluent's ``ProtobufData`` (see the module docstring). The settings are those of
    :attr:`from_connect` and :attr:`to_connect`, fixed when made."""

    def __init__(
        self, *, cache_size: int = 1000, generalized_sum_type_support: bool = False
    ) -> None:
        self.from_connect = ProtobufFromConnect(
            generalized_sum_type_support=generalized_sum_type_support, cache_size=cache_size
        )
        self.to_connect = ProtobufToConnect(
            generalized_sum_type_support=generalized_sum_type_support
        )

    def from_connect_schema(self, schema: Schema) -> descriptor_pb2.FileDescriptorProto:
        """The proto3 file (a ``FileDescriptorProto``) of a Connect struct schema."""
        return self.from_connect.schema(schema)

    def message_class(self, file: descriptor_pb2.FileDescriptorProto) -> type[Message]:
        """The generated class of the file's first message (its imports: Confluent's and
        Google's own files)."""
        return self.from_connect.message_class(file)

    def fill(self, message: Message, schema: Schema, value: Any) -> Message:
        """Set the fields of ``message`` (of the class of :meth:`message_class`) from a Connect
        struct value of ``schema``; null values leave fields unset."""
        return self.from_connect.fill(message, schema, value)

    def to_connect_schema(self, descriptor: Descriptor) -> Schema:
        """The Connect schema of a message type: a struct named by its full name, every field
        optional (proto3)."""
        return self.to_connect.schema(descriptor)

    def to_connect_data(self, schema: Schema, message: Message) -> Struct:
        """The Connect struct of a message read with the class of its writer's schema."""
        return self.to_connect.data(schema, message)
