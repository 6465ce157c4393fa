"""Confluent's schema registry converters: Connect data ↔ Confluent's wire format, the schemas in
a registry with Confluent's API.

- ``io.confluent.connect.avro.AvroConverter``:
  :class:`~sluice.connect.converters.schema_registry.avro_converter.AvroConverter`, with the
  Connect ↔ Avro mapping of Confluent's ``AvroData`` in
  :mod:`sluice.connect.converters.schema_registry.avro_data`;
- ``io.confluent.connect.json.JsonSchemaConverter``:
  :class:`~sluice.connect.converters.schema_registry.json_schema_converter.JsonSchemaConverter`,
  the mapping of Confluent's ``JsonSchemaData`` in
  :mod:`sluice.connect.converters.schema_registry.json_schema_data`;
- ``io.confluent.connect.protobuf.ProtobufConverter``:
  :class:`~sluice.connect.converters.schema_registry.protobuf_converter.ProtobufConverter`, the
  mapping of Confluent's ``ProtobufData`` in
  :mod:`sluice.connect.converters.schema_registry.protobuf_data`.

What the three share (settings, the registry client, the subject name strategy) is
:class:`~sluice.connect.converters.schema_registry.registry_converter.SchemaRegistryConverter`.
Each mapping holds one object per direction (``…_from_connect`` and ``…_to_connect`` modules),
the names both directions use in a ``…_names`` module.

The bytes and the registration are confluent-kafka's own serializers' work; these modules map
Connect schemas and values to each format and back. All are reached by class name through
:func:`sluice.connect.converters.converter_from`.
"""
