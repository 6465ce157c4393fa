"""Confluent's schema registry converters: Connect data ↔ Confluent's wire format, the schemas in
a registry with Confluent's API.

- ``io.confluent.connect.avro.AvroConverter``:
  :class:`~sluice.connect.converters.schema_registry.converters.AvroConverter`, with the Connect ↔
  Avro mapping of Confluent's ``AvroData`` in
  :mod:`sluice.connect.converters.schema_registry.avro_data`;
- ``io.confluent.connect.json.JsonSchemaConverter``: ``JsonSchemaConverter``, the mapping of
  Confluent's ``JsonSchemaData`` in
  :mod:`sluice.connect.converters.schema_registry.json_schema_data`;
- ``io.confluent.connect.protobuf.ProtobufConverter``: ``ProtobufConverter``, the mapping of
  Confluent's ``ProtobufData`` in :mod:`sluice.connect.converters.schema_registry.protobuf_data`.

The bytes and the registration are confluent-kafka's own serializers' work; these modules map
Connect schemas and values to each format and back. All are reached by class name through
:func:`sluice.connect.converters.converter_from`.
"""
