"""The names both directions of Confluent's ``AvroData`` share: its namespace, the names of the
types it defines (``ConnectDefault``, ``MapEntry``, ``Enum``, ``Union``) and the ``connect.*``
properties that carry Connect's details on an Avro type (see
:mod:`sluice.connect.converters.schema_registry.avro_data`).

>>> split_name("shop.Price"), split_name("Price")
(('shop', 'Price'), (None, 'Price'))
"""

from __future__ import annotations

__all__ = [
    "AVRO_TYPE_ENUM",
    "AVRO_TYPE_UNION",
    "CONNECT_DEFAULT_VALUE_PROP",
    "CONNECT_DOC_PROP",
    "CONNECT_ENUM_DOC_PROP",
    "CONNECT_NAME_PROP",
    "CONNECT_PARAMETERS_PROP",
    "CONNECT_RECORD_DOC_PROP",
    "CONNECT_TYPE_PROP",
    "CONNECT_VERSION_PROP",
    "DECIMAL_PRECISION_DEFAULT",
    "DECIMAL_PRECISION_PROP",
    "DEFAULT_SCHEMA_FULL_NAME",
    "DEFAULT_SCHEMA_NAME",
    "MAP_ENTRY_TYPE_NAME",
    "NAMESPACE",
    "split_name",
]

NAMESPACE = "io.confluent.connect.avro"
DEFAULT_SCHEMA_NAME = "ConnectDefault"
DEFAULT_SCHEMA_FULL_NAME = f"{NAMESPACE}.{DEFAULT_SCHEMA_NAME}"
MAP_ENTRY_TYPE_NAME = "MapEntry"
AVRO_TYPE_ENUM = f"{NAMESPACE}.Enum"
AVRO_TYPE_UNION = f"{NAMESPACE}.Union"
CONNECT_NAME_PROP = "connect.name"
CONNECT_DOC_PROP = "connect.doc"
CONNECT_RECORD_DOC_PROP = "connect.record.doc"
CONNECT_ENUM_DOC_PROP = "connect.enum.doc"
CONNECT_VERSION_PROP = "connect.version"
CONNECT_DEFAULT_VALUE_PROP = "connect.default"
CONNECT_PARAMETERS_PROP = "connect.parameters"
CONNECT_TYPE_PROP = "connect.type"
DECIMAL_PRECISION_PROP = "connect.decimal.precision"
DECIMAL_PRECISION_DEFAULT = 64


def split_name(name: str) -> tuple[str | None, str]:
    """A full Avro name's namespace (``None`` without one) and simple name."""
    namespace, dot, simple = name.rpartition(".")
    return (namespace if dot else None), simple
