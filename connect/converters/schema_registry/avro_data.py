"""Connect schemas and values ↔ Avro, the way Confluent's ``AvroData`` maps them.

The rules (Confluent's ``io.confluent.connect.avro.AvroData``):

- ``int8`` / ``int16`` → Avro ``int`` with ``"connect.type": "int8"`` / ``"int16"``; ``int32`` →
  ``int``; ``int64`` → ``long``; ``float32`` → ``float``; ``float64`` → ``double``; ``boolean``,
  ``string``, ``bytes`` → the same;
- ``Decimal`` → ``bytes`` with ``"logicalType": "decimal"``, ``scale`` and ``precision`` (the
  ``connect.decimal.precision`` parameter, 64 when absent); ``Date`` → ``int`` + ``date``;
  ``Time`` → ``int`` + ``time-millis``; ``Timestamp`` → ``long`` + ``timestamp-millis``;
- ``array`` → ``array``; ``map`` with non-optional string keys → ``map``; any other map → an
  ``array`` of ``io.confluent.connect.avro.MapEntry`` records (``key``, ``value``);
- ``struct`` → ``record`` named by the schema's name (``io.confluent.connect.avro.ConnectDefault``
  when it has none); a struct reused in one schema is defined once and referred to by name;
- an optional schema → a union with ``null``: ``["null", T]`` with field default ``null``, or
  ``[T, "null"]`` when the schema has a default (the field's default);
- with ``connect.meta.data`` (the default) the Connect details ride as properties of the type:
  ``connect.name``, ``connect.version``, ``connect.doc``, ``connect.parameters``,
  ``connect.default``; parameters whose key starts with ``avro`` become properties themselves;
- with ``enhanced.avro.schema.support``, a string with the ``io.confluent.connect.avro.Enum``
  parameter becomes an Avro ``enum`` (read back as a string with those parameters either way).

The reverse (:meth:`AvroData.to_connect_schema`) reads any of this back, ``connect.*`` properties
first; a union of ``null`` and one type is an optional schema. A union of several types is, as
in Confluent's ``AvroData``, a struct named ``io.confluent.connect.avro.Union`` (optional when
the union holds ``null``) with one optional field a branch, named by the branch's type
(``int``, ``string``, ``array``…) or, for a record, enum or fixed, its name (its full name with
``enhanced.avro.schema.support``); such a struct is written as the union, its first non-null
field the branch. Read back, the branch is told by the Python type of what fastavro read
(fastavro gives no branch index): ``bool``, ``int`` in the field's range, ``float``, ``str``
(an enum's symbols), ``bytes``, ``Decimal`` and the date and time types, ``list``, and a ``dict``
is the first record whose field names are its keys, else a map — so records with the same
field names in one union are told apart as the first of them. Recursive records are refused
with :class:`~sluice.connect.ConverterError`.

Values: a Connect value becomes what fastavro writes (a struct a dict, a logical value its raw
form: unscaled bytes, days, milliseconds); fastavro's readings become Connect values again
(``Decimal``, ``date``, ``time``, aware UTC ``datetime``).

:class:`AvroData` holds one object per direction:
:class:`~.avro_from_connect.AvroFromConnect` (Connect → Avro) and
:class:`~.avro_to_connect.AvroToConnect` (Avro → Connect); the names both use are in
:mod:`.avro_names`.

>>> from sluice.connect.api.data import Field, Schema, Struct
>>> from sluice.connect.api.logical import decimal_schema
>>> price = Schema.struct([Field("amount", decimal_schema(2))], name="shop.Price")
>>> data = AvroData()
>>> data.from_connect_schema(price)["fields"][0]["type"]["logicalType"]
'decimal'
>>> data.to_connect_schema(data.from_connect_schema(price)) == price
True
"""

from __future__ import annotations

from typing import Any

from sluice.connect.api.data import Schema
from sluice.connect.converters.schema_registry.avro_from_connect import AvroFromConnect
from sluice.connect.converters.schema_registry.avro_names import AVRO_TYPE_UNION
from sluice.connect.converters.schema_registry.avro_to_connect import AvroToConnect

__all__ = ["AVRO_TYPE_UNION", "AvroData"]


class AvroData:
    """Confluent's ``AvroData`` (see the module docstring); schemas are cached (LRU-less: the
    caches are cleared when they reach ``cache_size``). The settings are those of
    :attr:`from_connect` and :attr:`to_connect`, fixed when made."""

    def __init__(
        self,
        *,
        connect_meta_data: bool = True,
        enhanced_schema_support: bool = False,
        cache_size: int = 1000,
    ) -> None:
        self.from_connect = AvroFromConnect(
            connect_meta_data=connect_meta_data,
            enhanced_schema_support=enhanced_schema_support,
            cache_size=cache_size,
        )
        self.to_connect = AvroToConnect(enhanced_schema_support=enhanced_schema_support)

    def from_connect_schema(self, schema: Schema) -> Any:
        """The Avro schema (its JSON form: dict, list or str) of a Connect schema."""
        return self.from_connect.schema(schema)

    def from_connect_data(self, schema: Schema, value: Any) -> Any:
        """The datum fastavro writes for ``value`` of ``schema`` (logical values in raw form)."""
        return self.from_connect.data(schema, value)

    def to_connect_schema(self, avro: Any) -> Schema:
        """The Connect schema of an Avro schema (its JSON form), as Confluent builds it."""
        return self.to_connect.schema(avro)

    def to_connect_data(self, schema: Schema, datum: Any) -> Any:
        """The Connect value of what fastavro read for ``schema``."""
        return self.to_connect.data(schema, datum)
