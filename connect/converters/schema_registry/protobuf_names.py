"""The names both directions of Confluent's ``ProtobufData`` share: its namespace and
parameters, the enum and union markers (Confluent's own and the generalized ones of
``generalized.sum.type.support``), the well-known messages of Connect's logical types, and what
a union struct and a message-valued schema are (see :mod:`.protobuf_data`).

>>> from sluice.connect.api.data import Schema
>>> split_name("geo.P"), is_message(Schema("int32", name="org.apache.kafka.connect.data.Date"))
(('geo', 'P'), True)
"""

from __future__ import annotations

from typing import Any

from sluice.connect.api.data import Schema
from sluice.connect.api.logical import DATE, DECIMAL, TIME, TIMESTAMP

__all__ = [
    "CONNECT_PRECISION_PROP",
    "CONNECT_TYPE_PROP",
    "DATE_TYPE",
    "DECIMAL_TYPE",
    "DEFAULT_SCHEMA_NAME",
    "GENERALIZED_TYPE_ENUM",
    "GENERALIZED_TYPE_UNION",
    "LOGICAL_TYPES",
    "NAMESPACE",
    "PROTOBUF_TYPE_ENUM",
    "PROTOBUF_TYPE_TAG",
    "PROTOBUF_TYPE_UNION",
    "PROTOBUF_TYPE_UNION_PREFIX",
    "TIMESTAMP_TYPE",
    "TIME_TYPE",
    "confluent_meta",
    "is_message",
    "is_union",
    "split_name",
]

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
DECIMAL_TYPE = "confluent.type.Decimal"
DATE_TYPE = "google.type.Date"
TIME_TYPE = "google.type.TimeOfDay"
TIMESTAMP_TYPE = "google.protobuf.Timestamp"
LOGICAL_TYPES = {
    DECIMAL: (DECIMAL_TYPE, "confluent/type/decimal.proto"),
    DATE: (DATE_TYPE, "google/type/date.proto"),
    TIME: (TIME_TYPE, "google/type/timeofday.proto"),
    TIMESTAMP: (TIMESTAMP_TYPE, "google/protobuf/timestamp.proto"),
}


def confluent_meta() -> Any:
    """confluent-kafka's ``confluent/meta.proto`` module (``field_meta``), imported on use."""
    from confluent_kafka.schema_registry.confluent import meta_pb2

    return meta_pb2


def split_name(full: str) -> tuple[str, str]:
    """A full name's package (``""`` without one) and simple name."""
    namespace, dot, name = full.rpartition(".")
    return (namespace if dot else ""), name


def is_message(schema: Schema) -> bool:
    """Whether values of the schema are messages (a struct, or a logical type's message)."""
    return schema.type == "struct" or schema.name in LOGICAL_TYPES


def is_union(schema: Schema) -> bool:
    """Whether a struct is a oneof: Confluent's ``…Union.<oneof>`` or a generalized union."""
    return (schema.name or "").startswith(PROTOBUF_TYPE_UNION) or any(
        k == GENERALIZED_TYPE_UNION for k, _ in schema.parameters
    )
