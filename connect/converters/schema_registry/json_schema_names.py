"""The names both directions of Confluent's ``JsonSchemaData`` share: its namespace and
``connect.*`` keywords, the enum and union markers (Confluent's own and the generalized ones of
``generalized.sum.type.support``), and what a union struct is (see
:mod:`sluice.connect.converters.schema_registry.json_schema_data`).

>>> from sluice.connect.api.data import Schema
>>> is_union(Schema.struct([], name=JSON_TYPE_ONE_OF)), is_union(Schema.struct([], name="shop.X"))
(True, False)
"""

from __future__ import annotations

from sluice.connect.api.data import Schema

__all__ = [
    "CONNECT_INDEX_PROP",
    "CONNECT_PARAMETERS_PROP",
    "CONNECT_TYPE_PROP",
    "CONNECT_VERSION_PROP",
    "GENERALIZED_TYPE_ENUM",
    "GENERALIZED_TYPE_UNION",
    "GENERALIZED_TYPE_UNION_FIELD_PREFIX",
    "GENERALIZED_TYPE_UNION_PREFIX",
    "INTEGERS",
    "JSON_TYPE_ENUM",
    "JSON_TYPE_ENUM_PREFIX",
    "JSON_TYPE_ONE_OF",
    "NAMESPACE",
    "NULL_MARKER",
    "NUMBERS",
    "is_union",
]

NAMESPACE = "io.confluent.connect.json"
JSON_TYPE_ENUM = f"{NAMESPACE}.Enum"
JSON_TYPE_ENUM_PREFIX = JSON_TYPE_ENUM + "."
JSON_TYPE_ONE_OF = f"{NAMESPACE}.OneOf"
GENERALIZED_TYPE_UNION = "org.apache.kafka.connect.data.Union"  # Confluent's ConnectUnion
GENERALIZED_TYPE_ENUM = "org.apache.kafka.connect.data.Enum"  # Confluent's ConnectEnum
GENERALIZED_TYPE_UNION_PREFIX = "connect_union_"
GENERALIZED_TYPE_UNION_FIELD_PREFIX = GENERALIZED_TYPE_UNION_PREFIX + "field_"
NULL_MARKER = "<NULL>"
CONNECT_TYPE_PROP = "connect.type"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_INDEX_PROP = "connect.index"
INTEGERS = frozenset(["int8", "int16", "int32", "int64"])
NUMBERS = frozenset(["float32", "float64"])


def is_union(schema: Schema) -> bool:
    """Whether a struct is a union: ``io.confluent.connect.json.OneOf`` or a generalized one."""
    return schema.name == JSON_TYPE_ONE_OF or any(
        k == GENERALIZED_TYPE_UNION for k, _ in schema.parameters
    )
