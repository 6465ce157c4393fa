"""Sluice Connect: Kafka Connect's model in Python.

This package's top level is the public connector API (Kafka's ``connect/api``): connectors, tasks,
records, schemas, config definitions, logical types, errors and the transformation base. Connector
packages (:mod:`sluice.connectors`) import only these names; an import-linter contract keeps it so.

>>> from sluice.connect import Schema, SourceRecord, Struct
>>> schema = Schema("struct", fields=())
>>> record = SourceRecord({"file": "a"}, {"line": 1}, "lines", None, schema, Struct(schema, {}))
>>> record.topic, record.source_offset
('lines', {'line': 1})

Below the API: :mod:`sluice.connect.converters` (JSON, string, bytes),
:mod:`sluice.connect.transforms` (the built-in transformations and predicates) and
:mod:`sluice.connect.runtime` (one worker and one herder in both modes, task
runners, offset/config/status storage, error tolerance); above the runtime, the REST API
(:mod:`sluice.connect.rest`) and the YAML deployment (:mod:`sluice.connect.deploy`).
docs/architecture.md draws the layers.
"""

from sluice.connect.api.config_def import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigValue,
    RefusedKey,
    at_least,
    one_of,
)
from sluice.connect.api.connector import (
    Connector,
    ConnectorContext,
    ErrantRecordReporter,
    OffsetStorageReader,
    SinkConnector,
    SinkTask,
    SinkTaskContext,
    SourceConnector,
    SourceTask,
    SourceTaskContext,
    Task,
    TopicPartition,
)
from sluice.connect.api.data import (
    PRIMITIVES,
    ConnectRecord,
    Field,
    Header,
    Schema,
    SinkBatch,
    SinkRecord,
    SourceBatch,
    SourceRecord,
    Struct,
)
from sluice.connect.api.errors import ConnectError, ConverterError, TransformError
from sluice.connect.api.logical import (
    DATE,
    DECIMAL,
    EPOCH,
    LOGICAL_NAMES,
    TIME,
    TIMESTAMP,
    date_schema,
    datetime_to_millis,
    decimal_scaled,
    decimal_schema,
    java_double,
    java_string,
    logical_to_raw,
    millis_to_datetime,
    millis_to_time,
    raw_to_logical,
    time_schema,
    time_to_millis,
    timestamp_schema,
)
from sluice.connect.api.transform import ConfigKey as TransformConfigKey
from sluice.connect.api.transform import (
    KeyOrValueTransformation,
    Predicate,
    SchemaCache,
    Transformation,
)
from sluice.connect.api.transform import R as ConnectRecordT
from sluice.connect.api.transform import Settings as TransformSettings

__all__ = [
    "DATE",
    "DECIMAL",
    "EPOCH",
    "LOGICAL_NAMES",
    "NO_DEFAULT",
    "PRIMITIVES",
    "TIME",
    "TIMESTAMP",
    "ConfigDef",
    "ConfigKey",
    "ConfigValue",
    "ConnectError",
    "ConnectRecord",
    "ConnectRecordT",
    "Connector",
    "ConnectorContext",
    "ConverterError",
    "ErrantRecordReporter",
    "Field",
    "Header",
    "KeyOrValueTransformation",
    "OffsetStorageReader",
    "Predicate",
    "RefusedKey",
    "Schema",
    "SchemaCache",
    "SinkBatch",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceBatch",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "TopicPartition",
    "TransformConfigKey",
    "TransformError",
    "TransformSettings",
    "Transformation",
    "at_least",
    "date_schema",
    "datetime_to_millis",
    "decimal_scaled",
    "decimal_schema",
    "java_double",
    "java_string",
    "logical_to_raw",
    "millis_to_datetime",
    "millis_to_time",
    "one_of",
    "raw_to_logical",
    "time_schema",
    "time_to_millis",
    "timestamp_schema",
]
