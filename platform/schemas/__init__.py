"""Schemas: formats, compatibility rules, the registry client and schema-aware serializers.

The formats (``sluice.schemas.formats``) parse AVRO, JSON Schema and PROTOBUF schemas with their
own well-kept libraries (fastavro, jsonschema, protoc) and say, with Confluent's rules, whether
one schema can read data written with another. The schema registry service
(``sluice.schema_registry``) and the HTTP proxy (``sluice.rest_proxy``) build on them.
"""
