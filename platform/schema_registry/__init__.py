"""A schema registry with Confluent Schema Registry's REST API v1 (``sluice schema-registry
start``), so that Confluent's clients and serializers work against it unchanged.

Its parts, one concept each:

- :mod:`~sluice.schema_registry.errors`: Confluent's error codes and messages;
- :mod:`~sluice.schema_registry.records`: the ``_schemas`` topic's records, Confluent's format;
- :mod:`~sluice.schema_registry.store`: the state in memory, built by applying those records;
- :mod:`~sluice.schema_registry.log`: where writes go (the interface, and an in-memory log);
- :mod:`~sluice.schema_registry.kafka_store`: the ``_schemas`` topic as that log;
- :mod:`~sluice.schema_registry.bodies`: request bodies, checked;
- :mod:`~sluice.schema_registry.registry`: the operations and Confluent's rules;
- :mod:`~sluice.schema_registry.election`: which instance writes (a consumer group);
- :mod:`~sluice.schema_registry.forwarding`: a follower's writes sent to the leader;
- :mod:`~sluice.schema_registry.api`: the REST routes; :mod:`sluice.http_server`
  runs them with uvicorn;
- :mod:`~sluice.schema_registry.service`: one instance assembled, started and stopped.

``docs/schemas.md`` describes the API, the storage and the election.
"""
