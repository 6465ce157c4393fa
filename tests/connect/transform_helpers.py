"""Shared records, schemas and shortcuts for the transformation tests."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from sluice.connect.api.data import (
    ConnectRecord,
    Field,
    Header,
    Schema,
    SinkRecord,
    SourceRecord,
    Struct,
)
from sluice.connect.transforms import (
    Transformation,
    transform_class,
)

UTC = dt.UTC
TS = 1_700_000_000_123  # 2023-11-14T22:13:20.123Z
TS_DATETIME = dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)

PERSON = Schema.struct(
    [Field("id", Schema("int64")), Field("name", Schema("string", optional=True))],
    name="com.example.Person",
)


def person(id: int = 7, name: str | None = "Ada") -> Struct:
    return Struct(PERSON, {"id": id, "name": name})


def raises(kind: type[Exception], text: str) -> pytest.RaisesContext[Exception]:
    """``pytest.raises`` for an exception whose message contains ``text``."""
    return pytest.raises(kind, match=re.escape(text))


def record(
    value: Any = None,
    value_schema: Schema | None = None,
    *,
    key: Any = None,
    key_schema: Schema | None = None,
    topic: str = "orders",
    timestamp: int | None = TS,
    headers: list[Header] | None = None,
) -> SourceRecord:
    return SourceRecord(
        {"file": "a"},
        {"pos": 1},
        topic,
        3,
        value_schema,
        value,
        key_schema=key_schema,
        key=key,
        timestamp=timestamp,
        headers=headers,
    )


def sink_record(value: Any, value_schema: Schema | None = None) -> SinkRecord:
    return SinkRecord("orders", 3, None, "k", value_schema, value, TS, [], kafka_offset=42)


def make(name: str, config: dict[str, Any] | None = None) -> Transformation:
    transformation = transform_class(name)()
    transformation.configure(config or {})
    return transformation


def apply(name: str, config: dict[str, Any], rec: ConnectRecord) -> Any:
    out = make(name, config).apply(rec)
    assert out is not None
    return out
