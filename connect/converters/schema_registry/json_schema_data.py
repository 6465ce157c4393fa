"""Connect schemas and values ↔ JSON Schema and JSON, the way Confluent's ``JsonSchemaData`` maps
them.

The rules (Confluent's ``io.confluent.connect.json.JsonSchemaData``):

- ``int8`` … ``int64`` → ``{"type": "integer", "connect.type": "int8"}`` (and so on);
  ``float32`` / ``float64`` → ``{"type": "number", "connect.type": ...}``; ``boolean`` → the
  same; ``string`` → ``string`` (an ``enum`` with the ``io.confluent.connect.json.Enum``
  parameters); ``bytes`` → ``{"type": "string", "connect.type": "bytes"}`` (base64 text);
- ``Decimal`` → ``{"type": "number", "connect.type": "bytes"}`` titled
  ``org.apache.kafka.connect.data.Decimal``, the value base64 of the unscaled bytes
  (``decimal.format=BASE64``, the default) or a JSON number (``NUMERIC``); ``Date``, ``Time``,
  ``Timestamp`` → integers (days, milliseconds) titled with their logical name;
- ``array`` → ``array``; a map with non-optional string keys → ``object`` with
  ``additionalProperties`` and ``"connect.type": "map"``; any other map → an ``array`` of
  ``{key, value}`` objects with ``"connect.type": "map"``;
- ``struct`` → ``object`` with ``properties`` in order, each with its ``connect.index``;
- an optional schema → ``{"oneOf": [{"type": "null"}, T]}``;
- the schema's name is the ``title``, its doc the ``description``, its version
  ``connect.version``, its parameters ``connect.parameters``, its default ``default``.

Reading (:meth:`JsonSchemaData.to_connect_schema`) goes back, fields ordered by
``connect.index``; an integer without ``connect.type`` is ``int64``, a number ``float64``; a
``$ref`` is followed: a local one (``#/definitions/…``, ``#/$defs/…``), or one naming a schema
reference of the registered schema (``"$ref": "address.json"``, ``"address.json#/$defs/X"``),
whose documents :func:`referenced_documents` fetches from the registry as confluent-kafka does.

Unions and combinations, as Confluent's ``JsonSchemaData`` maps them:

- ``oneOf`` / ``anyOf`` of several types → an optional-field struct named
  ``io.confluent.connect.json.OneOf`` whose fields ``io.confluent.connect.json.OneOf.field.0``,
  ``….field.1``… are the alternatives (a ``{"type": "null"}`` among them makes the struct
  optional); with ``generalized_sum_type_support`` (Confluent's
  ``generalized.sum.type.support``) the struct is named ``connect_union_0``, ``connect_union_1``…
  with the parameter ``org.apache.kafka.connect.data.Union``, its fields
  ``connect_union_field_0``…, and enums carry ``org.apache.kafka.connect.data.Enum``
  parameters (symbol → index). A value is read into the first alternative whose type it has
  (a JSON object: the struct alternative sharing most property names with it) and written as
  the union's one non-null field; a union struct is written back as ``oneOf``, each
  alternative with its ``connect.index``;
- ``allOf``: the properties of its object parts (followed through nested ``allOf`` and
  ``$ref``) make one unnamed struct; without properties, a ``oneOf``/``anyOf`` part wins, then a
  string or number part beside ``const``, ``enum`` or ``format``.

:class:`JsonSchemaData` holds one object per direction:
:class:`~.json_schema_from_connect.JsonSchemaFromConnect` (Connect → JSON Schema and JSON, and
:func:`dumps_exact`) and :class:`~.json_schema_to_connect.JsonSchemaToConnect` (JSON Schema and
JSON → Connect, and :func:`referenced_documents`); the names both use are in
:mod:`.json_schema_names`.

>>> union = JsonSchemaData().to_connect_schema({"oneOf": [{"type": "string"}, {"type": "integer"}]})
>>> union.name, [f.name for f in union.fields]
('io.confluent.connect.json.OneOf', ['io.confluent.connect.json.OneOf.field.0', \
'io.confluent.connect.json.OneOf.field.1'])
>>> JsonSchemaData().to_connect_data(union, 7).values
{'io.confluent.connect.json.OneOf.field.1': 7}

>>> from sluice.connect.api.data import Field, Schema
>>> point = Schema.struct([Field("x", Schema("int32")), Field("y", Schema("int32", optional=True))])
>>> data = JsonSchemaData()
>>> data.from_connect_schema(point)["properties"]["y"]
{'oneOf': [{'type': 'null'}, {'type': 'integer', 'connect.type': 'int32'}], 'connect.index': 1}
>>> data.to_connect_schema(data.from_connect_schema(point)) == point
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sluice.connect.api.data import Schema
from sluice.connect.converters.schema_registry.json_schema_from_connect import (
    JsonSchemaFromConnect,
    dumps_exact,
)
from sluice.connect.converters.schema_registry.json_schema_to_connect import (
    JsonSchemaToConnect,
    referenced_documents,
)

__all__ = ["JsonSchemaData", "dumps_exact", "referenced_documents"]


class JsonSchemaData:
    """Confluent's ``JsonSchemaData`` (see the module docstring). The settings are those of
    :attr:`from_connect` and :attr:`to_connect`, fixed when made."""

    def __init__(
        self,
        *,
        decimal_numeric: bool = False,
        cache_size: int = 1000,
        generalized_sum_type_support: bool = False,
    ) -> None:
        self.from_connect = JsonSchemaFromConnect(
            decimal_numeric=decimal_numeric,
            generalized_sum_type_support=generalized_sum_type_support,
            cache_size=cache_size,
        )
        self.to_connect = JsonSchemaToConnect(
            generalized_sum_type_support=generalized_sum_type_support
        )

    def from_connect_schema(self, schema: Schema) -> dict[str, Any]:
        """The JSON Schema document of a Connect schema."""
        return self.from_connect.schema(schema)

    def from_connect_data(self, schema: Schema, value: Any) -> Any:
        """The JSON value (dicts, lists, numbers…) of a Connect value of ``schema``."""
        return self.from_connect.data(schema, value)

    def to_connect_schema(
        self, document: Any, references: Mapping[str, Any] | None = None
    ) -> Schema:
        """The Connect schema of a JSON Schema document, as Confluent builds it;
        ``references`` are the documents of its schema references by name (see
        :func:`referenced_documents`)."""
        return self.to_connect.schema(document, references)

    def to_connect_data(self, schema: Schema, node: Any) -> Any:
        """The Connect value of a JSON value read for ``schema``."""
        return self.to_connect.data(schema, node)
