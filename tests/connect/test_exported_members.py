"""The public connector API: what `sluice.connect` exports is pinned (as httpx's
tests/test_exported_members.py pins httpx's), sorted, and lives in `sluice.connect.api`."""

from __future__ import annotations

import inspect

import sluice.connect

EXPORTED = [
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


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: CONSTANTS, then Classes, then functions."""
    if name.isupper():
        return (0, name)
    return (1 if name[0].isupper() else 2, name)


def test_the_exported_members_are_pinned() -> None:
    assert sluice.connect.__all__ == EXPORTED, (
        f"added: {sorted(set(sluice.connect.__all__) - set(EXPORTED))}, "
        f"removed: {sorted(set(EXPORTED) - set(sluice.connect.__all__))}"
    )


def test_the_exported_members_are_sorted() -> None:
    assert sluice.connect.__all__ == sorted(sluice.connect.__all__, key=_isort_key)


def test_every_exported_member_is_defined_in_the_api_package() -> None:
    elsewhere = {
        name: module
        for name in sluice.connect.__all__
        if inspect.isclass(value := getattr(sluice.connect, name)) or inspect.isfunction(value)
        if not (module := getattr(value, "__module__", "")).startswith("sluice.connect.api.")
    }
    assert elsewhere == {}, f"exported from outside sluice.connect.api: {elsewhere}"


def test_every_public_name_of_the_package_top_level_is_exported() -> None:
    public = {
        name
        for name in vars(sluice.connect)
        if not name.startswith("_") and name not in {"annotations", "api"}
    }
    # Sub-packages imported elsewhere become attributes of the package; they are not members.
    public = {name for name in public if not _is_module(getattr(sluice.connect, name))}
    assert public == set(sluice.connect.__all__), f"unexported: {public - set(EXPORTED)}"


def _is_module(value: object) -> bool:
    return type(value).__name__ == "module"
