"""Change events of a real database in Debezium's shape: ops, keys, before images, types."""

from __future__ import annotations

from decimal import Decimal

from sluice.connectors.postgres.types import UNAVAILABLE
from tests.connectors.postgres.fixtures import CaptureFactory, Database, describe, value_of

ITEMS = "CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2))"


def test_insert_update_delete_truncate_in_debeziums_shape(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(ITEMS)
    cdc = capture(snapshot_mode="never")
    db.execute(
        "INSERT INTO items VALUES (1, 'pen', 1.50)",
        "UPDATE items SET price = 2 WHERE id = 1",
        "DELETE FROM items WHERE id = 1",
        "TRUNCATE items",
    )
    records = cdc.poll_changes(5)
    assert [describe(r) for r in records] == [
        ("c", {"id": 1}, None, {"id": 1, "name": "pen", "price": Decimal("1.50")}),
        ("u", {"id": 1}, None, {"id": 1, "name": "pen", "price": Decimal("2.00")}),
        # default replica identity: the before image holds the key (NOT NULL columns get
        # Debezium's fallback value, nullable ones null)
        ("d", {"id": 1}, {"id": 1, "name": "", "price": None}, None),
        ("tombstone", {"id": 1}),
        ("t", None, None, None),
    ]
    insert = records[0]
    assert insert.topic == "shop.public.items"
    assert insert.source_partition == {"server": "shop"}
    assert insert.key_schema is not None and insert.key_schema.name == "shop.public.items.Key"
    envelope = insert.value_schema
    assert envelope is not None and envelope.name == "shop.public.items.Envelope"
    assert [f.name for f in envelope.fields] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"
    ]  # fmt: skip
    after = envelope.field("after")
    assert after is not None and after.schema.name == "shop.public.items.Value"
    assert [(f.name, f.schema.type, f.schema.optional) for f in after.schema.fields] == [
        ("id", "int32", False),
        ("name", "string", False),
        ("price", "bytes", True),
    ]
    source = value_of(insert.value.get("source"))
    assert source["connector"] == "postgresql" and source["name"] == "shop"
    assert (source["db"], source["schema"], source["table"]) == (db.name, "public", "items")
    assert source["snapshot"] == "false"
    assert isinstance(source["txId"], int) and isinstance(source["lsn"], int)
    assert source["lsn"] == insert.source_offset["lsn"]
    assert isinstance(insert.value.get("ts_ms"), int)
    assert insert.value.get("transaction") is None
    truncate = records[4]
    assert truncate.key is None and truncate.topic == "shop.public.items"
    offsets = [r.source_offset for r in records]
    assert all(set(o) >= {"lsn", "lsn_commit", "txId", "ts_usec"} for o in offsets)
    assert [o["lsn_commit"] for o in offsets] == sorted(o["lsn_commit"] for o in offsets)


def test_a_primary_key_change_is_a_delete_a_tombstone_and_a_create(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(ITEMS, "INSERT INTO items VALUES (1, 'pen', 1)")
    cdc = capture(snapshot_mode="never")
    db.execute("UPDATE items SET id = 2, name = 'ink' WHERE id = 1")
    assert [describe(r) for r in cdc.poll_changes(3)] == [
        ("d", {"id": 1}, {"id": 1, "name": "", "price": None}, None),
        ("tombstone", {"id": 1}),
        ("c", {"id": 2}, None, {"id": 2, "name": "ink", "price": Decimal("1.00")}),
    ]


def test_replica_identity_full_gives_whole_before_images(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(
        ITEMS, "ALTER TABLE items REPLICA IDENTITY FULL", "INSERT INTO items VALUES (1, 'a', 1)"
    )
    cdc = capture(snapshot_mode="never", tombstones_on_delete="false")
    db.execute(
        "UPDATE items SET name = 'b' WHERE id = 1",
        "UPDATE items SET id = 5 WHERE id = 1",
        "DELETE FROM items WHERE id = 5",
    )
    one, five = Decimal("1.00"), {"id": 5, "name": "b", "price": Decimal("1.00")}
    assert [describe(r) for r in cdc.poll_changes(4)] == [
        (
            "u",
            {"id": 1},
            {"id": 1, "name": "a", "price": one},
            {"id": 1, "name": "b", "price": one},
        ),
        ("d", {"id": 1}, {"id": 1, "name": "b", "price": one}, None),  # no tombstone: disabled
        ("c", {"id": 5}, None, five),
        ("d", {"id": 5}, five, None),
    ]


def test_unchanged_toasted_values_get_debeziums_placeholder(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(
        "CREATE TABLE docs (id int PRIMARY KEY, title text, body text, tags text[])",
        "ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL",  # stored out of line as is
        "ALTER TABLE docs ALTER COLUMN tags SET STORAGE EXTERNAL",
        "INSERT INTO docs SELECT 1, 'draft', repeat('x', 10000), "
        "array_fill('t'::text, ARRAY[3000])",
    )
    cdc = capture(snapshot_mode="never")
    db.execute("UPDATE docs SET title = 'final' WHERE id = 1")
    (update,) = cdc.poll_changes(1)
    after = value_of(update.value.get("after"))
    assert after == {"id": 1, "title": "final", "body": UNAVAILABLE, "tags": [UNAVAILABLE]}


def test_types_map_as_debezium_maps_them_in_snapshot_and_stream(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(
        """CREATE TABLE t (id int PRIMARY KEY, b bool, s smallint, big bigint, r real,
        d double precision, n numeric(8,3), v numeric, c char(3), vc varchar(5), by bytea,
        day date, tm time, ts timestamp, ts3 timestamp(3), tz timestamptz, tt timetz,
        iv interval, u uuid, j json, jb jsonb, ints int[], words text[], mood text)""",
    )
    row = """(%d, true, -3, 9007199254740993, 1.5, 0.1, -12.345, 1e-20, 'ab', 'xyz', '\\x0102',
        '2024-02-29', '13:14:15.123456', '2024-02-29 13:14:15.5', '2024-02-29 13:14:15.123',
        '2024-02-29 13:14:15.25+02', '10:00:00+01', '1 day 2 hours 3.5 seconds',
        'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 1}', '{"b": [1, 2]}', '{1,NULL,3}',
        '{"a b","c,d"}', NULL)"""
    db.execute("INSERT INTO t VALUES " + row % 1)
    cdc = capture()
    (read,) = cdc.poll_changes(1)
    db.execute("INSERT INTO t VALUES " + row % 2)
    (created,) = cdc.poll_changes(1)
    expected = {
        "b": True,
        "s": -3,
        "big": 9007199254740993,
        "r": 1.5,
        "d": 0.1,
        "n": Decimal("-12.345"),
        "c": "ab ",
        "vc": "xyz",
        "by": b"\x01\x02",
        "day": 19782,
        "tm": 47655123456,
        "ts": 1709212455500000,
        "ts3": 1709212455123,
        "tz": "2024-02-29T11:14:15.25Z",
        "tt": "09:00:00Z",
        "iv": (26 * 3600 + 3) * 1_000_000 + 500_000,
        "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "j": '{"a": 1}',
        "jb": '{"b": [1, 2]}',
        "ints": [1, None, 3],
        "words": ["a b", "c,d"],
        "mood": None,
    }
    for record, key in ((read, 1), (created, 2)):
        after = value_of(record.value.get("after"))
        variable = after.pop("v")
        assert variable == {"scale": 20, "value": b"\x01"}
        assert after == {"id": key, **expected}
    schema = read.value_schema.field("after").schema  # type: ignore[union-attr]
    names = {f.name: f.schema.name for f in schema.fields}
    assert names["v"] == "io.debezium.data.VariableScaleDecimal"
    assert names["ts"] == "io.debezium.time.MicroTimestamp"
    assert names["ts3"] == "io.debezium.time.Timestamp"
    assert names["tz"] == "io.debezium.time.ZonedTimestamp"
    assert names["jb"] == "io.debezium.data.Json"
    assert names["u"] == "io.debezium.data.Uuid"
    assert names["day"] == "io.debezium.time.Date"


def test_a_schema_change_updates_the_value_schema(db: Database, capture: CaptureFactory) -> None:
    db.execute(ITEMS)
    cdc = capture(snapshot_mode="never", decimal_handling_mode="double")
    db.execute(
        "INSERT INTO items VALUES (1, 'pen', 1.5)",
        "ALTER TABLE items ADD COLUMN stock int NOT NULL DEFAULT 0, DROP COLUMN name",
        "INSERT INTO items VALUES (2, 2.5, 7)",
    )
    first, second = cdc.poll_changes(2)
    assert value_of(first.value.get("after")) == {"id": 1, "name": "pen", "price": 1.5}
    assert value_of(second.value.get("after")) == {"id": 2, "price": 2.5, "stock": 7}
    schema = second.value_schema.field("after").schema  # type: ignore[union-attr]
    assert [(f.name, f.schema.type) for f in schema.fields] == [
        ("id", "int32"),
        ("price", "float64"),
        ("stock", "int32"),
    ]


def test_only_included_tables_are_captured(db: Database, capture: CaptureFactory) -> None:
    db.execute(
        ITEMS,
        "CREATE TABLE audit (id int PRIMARY KEY)",
        "INSERT INTO audit VALUES (1)",
        "INSERT INTO items VALUES (1, 'pen', 1)",
    )
    cdc = capture(table_include_list="public\\.item.*", publication_autocreate_mode="filtered")
    (read,) = cdc.poll_changes(1)
    db.execute("INSERT INTO audit VALUES (2)", "INSERT INTO items VALUES (2, 'ink', 1)")
    (created,) = cdc.poll_changes(1)
    assert [r.topic for r in (read, created)] == ["shop.public.items"] * 2
    published = db.query(
        "SELECT tablename FROM pg_publication_tables WHERE pubname = %s", (f"pub_{db.name}",)
    )
    assert published == [("items",)]
