"""ExtractNewRecordState on real change events: rows out of envelopes, deletes as configured."""

from __future__ import annotations

from typing import Any

import pytest

from sluice.connect.api.data import SourceRecord, Struct
from sluice.connect.converters.json_converter import JsonConverter
from sluice.connect.transforms import TransformChain
from sluice.connectors.postgres.unwrap import ExtractNewRecordState
from tests.connectors.postgres.fixtures import CaptureFactory, Database, value_of

UNWRAP = "sluice.connectors.postgres.unwrap.ExtractNewRecordState"


@pytest.fixture
def events(db: Database, capture: CaptureFactory) -> list[SourceRecord]:
    """c, u, d, tombstone, t and a heartbeat from a real capture."""
    db.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
    cdc = capture(snapshot_mode="never", heartbeat_interval_ms=1)
    db.execute(
        "INSERT INTO items VALUES (1, 'pen')",
        "UPDATE items SET name = 'ink' WHERE id = 1",
        "DELETE FROM items WHERE id = 1",
        "TRUNCATE items",
    )
    found = cdc.poll_changes(5)
    beat = cdc.poll_until(lambda came: any(r.topic.startswith("__debezium") for r in came))
    return [*found, next(r for r in beat if r.topic.startswith("__debezium"))]


def _unwrap(events: list[SourceRecord], **config: Any) -> list[Any]:
    chain = TransformChain.from_config(
        {
            "transforms": "unwrap",
            "transforms.unwrap.type": UNWRAP,
            **{f"transforms.unwrap.{k.replace('_', '.')}": v for k, v in config.items()},
        }
    )
    out = []
    for record in events:
        result = chain.apply(record)
        if result is None:
            out.append(None)
        elif result.topic.startswith("__debezium"):
            out.append("heartbeat")
        else:
            out.append((value_of(result.key), value_of(result.value)))
    return out


def test_rows_come_out_deletes_and_tombstones_are_dropped(events: list[SourceRecord]) -> None:
    assert _unwrap(events) == [
        ({"id": 1}, {"id": 1, "name": "pen"}),
        ({"id": 1}, {"id": 1, "name": "ink"}),
        None,  # delete: dropped (delete.handling.mode=drop)
        None,  # tombstone: dropped
        None,  # truncate: no row
        "heartbeat",  # not an envelope: unchanged
    ]
    row = ExtractNewRecordState()
    row.configure({})
    result = row.apply(events[0])
    assert result is not None and isinstance(result.value, Struct)
    assert result.value_schema is not None and result.value_schema.name == "shop.public.items.Value"
    converter = JsonConverter()
    converter.configure({"schemas.enable": "false"}, is_key=False)
    assert converter.from_connect("t", result.value_schema, result.value) == (
        b'{"id":1,"name":"pen"}'
    )


def test_deletes_rewritten_or_kept_as_nulls(events: list[SourceRecord]) -> None:
    rewritten = _unwrap(events, delete_handling_mode="rewrite", drop_tombstones="false")
    assert rewritten[:4] == [
        ({"id": 1}, {"id": 1, "name": "pen", "__deleted": "false"}),
        ({"id": 1}, {"id": 1, "name": "ink", "__deleted": "false"}),
        ({"id": 1}, {"id": 1, "name": None, "__deleted": "true"}),
        ({"id": 1}, None),  # the tombstone is kept
    ]
    kept = _unwrap(events, delete_handling_mode="none")
    assert kept[2:4] == [({"id": 1}, None), None]  # the delete as a null value; tombstone dropped


def test_envelope_fields_added_to_rows_and_headers(events: list[SourceRecord]) -> None:
    unwrap = ExtractNewRecordState()
    unwrap.configure({"add.fields": "op,table,lsn,source.ts_ms", "add.headers": "op"})
    result = unwrap.apply(events[1])
    assert result is not None
    row = value_of(result.value)
    source = events[1].value.get("source")
    assert row == {
        "id": 1,
        "name": "ink",
        "__op": "u",
        "__table": "items",
        "__lsn": source.get("lsn"),
        "__source_ts_ms": source.get("ts_ms"),
    }
    assert ("__op", "u") in result.headers
    schema = result.value_schema
    assert schema is not None
    assert [(f.name, f.schema.type, f.schema.optional) for f in schema.fields[2:]] == [
        ("__op", "string", True),
        ("__table", "string", True),
        ("__lsn", "int64", True),
        ("__source_ts_ms", "int64", True),
    ]


def test_schemaless_envelopes_are_unwrapped_too() -> None:
    unwrap = ExtractNewRecordState()
    unwrap.configure({"delete.handling.mode": "rewrite"})
    event = {"before": {"id": 2}, "after": None, "op": "d", "source": {"table": "t"}}
    record = SourceRecord({}, {}, "t", None, None, event, key={"id": 2})
    result = unwrap.apply(record)
    assert result is not None and result.value == {"id": 2, "__deleted": "true"}
