"""The pgoutput v1 decoder: hand-built bytes of every message, and real bytes from the server."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.connectors.postgres.pgoutput import (
    PG_EPOCH_US,
    UNCHANGED,
    Begin,
    Column,
    Commit,
    DecodeError,
    Delete,
    Insert,
    LogicalMessage,
    Origin,
    Relation,
    Truncate,
    TupleValue,
    Type,
    Update,
    decode,
    format_lsn,
    parse_lsn,
)
from tests.connectors.postgres.fixtures import Database


def _string(text: str) -> bytes:
    return text.encode() + b"\0"


def _tuple(values: list[TupleValue]) -> bytes:
    out = struct.pack(">h", len(values))
    for value in values:
        if value is None:
            out += b"n"
        elif value is UNCHANGED:
            out += b"u"
        elif isinstance(value, str):
            data = value.encode()
            out += b"t" + struct.pack(">i", len(data)) + data
        else:
            assert isinstance(value, bytes)
            out += b"b" + struct.pack(">i", len(value)) + value
    return out


def test_begin_commit_origin() -> None:
    begin = b"B" + struct.pack(">QqI", 0x1_0000_0010, 1_000_000, 4_000_000_000)
    assert decode(begin) == Begin(0x1_0000_0010, PG_EPOCH_US + 1_000_000, 4_000_000_000)
    commit = b"C\0" + struct.pack(">QQq", 100, 180, -5)
    assert decode(commit) == Commit(0, 100, 180, PG_EPOCH_US - 5)
    assert decode(b"O" + struct.pack(">Q", 77) + _string("east")) == Origin(77, "east")


def test_relation_and_type() -> None:
    columns = (
        b"\x01" + _string("id") + struct.pack(">Ii", 23, -1),
        b"\x00" + _string("price") + struct.pack(">Ii", 1700, 655366),
    )
    payload = b"R" + struct.pack(">I", 16390) + _string("") + _string("items") + b"f"
    payload += struct.pack(">h", 2) + b"".join(columns)
    assert decode(payload) == Relation(
        16390,
        "pg_catalog",
        "items",
        "f",
        (Column("id", 23, -1, True), Column("price", 1700, 655366, False)),
    )
    assert decode(b"Y" + struct.pack(">I", 99) + _string("app") + _string("mood")) == Type(
        99, "app", "mood"
    )


def test_changes_and_tuple_kinds() -> None:
    new = _tuple(["1", None, UNCHANGED, b"\x00\x01"])
    assert decode(b"I" + struct.pack(">I", 5) + b"N" + new) == Insert(
        5, ("1", None, UNCHANGED, b"\x00\x01")
    )
    update = b"U" + struct.pack(">I", 5) + b"K" + _tuple(["1"]) + b"N" + _tuple(["2"])
    assert decode(update) == Update(5, "K", ("1",), ("2",))
    plain = b"U" + struct.pack(">I", 5) + b"N" + _tuple(["2"])
    assert decode(plain) == Update(5, None, None, ("2",))
    delete = b"D" + struct.pack(">I", 5) + b"O" + _tuple(["1", "x"])
    assert decode(delete) == Delete(5, "O", ("1", "x"))
    truncate = b"T" + struct.pack(">iB", 2, 3) + struct.pack(">II", 5, 6)
    assert decode(truncate) == Truncate(3, (5, 6))
    message = b"M\x01" + struct.pack(">Q", 9) + _string("app") + struct.pack(">i", 2) + b"hi"
    assert decode(message) == LogicalMessage(True, 9, "app", b"hi")


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"", "empty"),
        (b"Z", "unknown pgoutput message type"),
        (b"B\0\0", "truncated"),
        (b"I" + struct.pack(">I", 5) + b"X", "expected 'N'"),
        (b"I" + struct.pack(">I", 5) + b"N" + struct.pack(">h", 1) + b"q", "column kind"),
        (b"O" + struct.pack(">Q", 1) + b"no-terminator", "unterminated"),
        (b"C\0" + struct.pack(">QQq", 1, 2, 3) + b"!", "bytes left"),
    ],
)
def test_malformed_messages_are_reported(payload: bytes, problem: str) -> None:
    with pytest.raises(DecodeError, match=problem):
        decode(payload)


values = st.one_of(
    st.none(), st.just(UNCHANGED), st.text(max_size=20).filter(lambda t: "\0" not in t)
)


@given(st.lists(values, max_size=12))
def test_tuple_data_round_trip(row: list[TupleValue]) -> None:
    assert decode(b"I" + struct.pack(">I", 1) + b"N" + _tuple(row)) == Insert(1, tuple(row))


def test_lsn_text() -> None:
    assert parse_lsn("16/B374D848") == 0x16_B374D848
    assert format_lsn(0x16_B374D848) == "16/B374D848"
    assert format_lsn(parse_lsn("0/0")) == "0/0"


def test_real_messages_from_the_server(db: Database) -> None:
    """Bytes captured with pg_logical_slot_peek_binary_changes decode to what was done."""
    db.execute(
        "CREATE TABLE items (id int PRIMARY KEY, name text, body text)",
        "ALTER TABLE items REPLICA IDENTITY FULL",
        f"CREATE PUBLICATION pub_{db.name} FOR TABLE items",
        f"SELECT pg_create_logical_replication_slot('{db.slot}', 'pgoutput')",
        "INSERT INTO items VALUES (1, 'pen', NULL)",
        "UPDATE items SET name = 'ink' WHERE id = 1",
        "DELETE FROM items WHERE id = 1",
        "TRUNCATE items",
    )
    rows = db.query(
        "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes("
        "%s, NULL, NULL, 'proto_version', '1', 'publication_names', %s)",
        (db.slot, f"pub_{db.name}"),
    )
    messages = [decode(bytes(data)) for _, data in rows]
    kinds = [type(m).__name__ for m in messages]
    assert kinds == [
        "Begin", "Relation", "Insert", "Commit",
        "Begin", "Update", "Commit",
        "Begin", "Delete", "Commit",
        "Begin", "Relation", "Truncate", "Commit",  # TRUNCATE invalidated the relation cache
    ]  # fmt: skip
    relation = messages[1]
    assert isinstance(relation, Relation)
    assert (relation.namespace, relation.name, relation.replica_identity) == (
        "public",
        "items",
        "f",
    )
    assert [(c.name, c.type_oid, c.key) for c in relation.columns] == [
        ("id", 23, True),
        ("name", 25, True),  # with REPLICA IDENTITY FULL every column is part of the identity
        ("body", 25, True),
    ]
    assert messages[2] == Insert(relation.oid, ("1", "pen", None))
    update = messages[5]
    assert isinstance(update, Update)
    assert (update.old_kind, update.old, update.new) == (
        "O",
        ("1", "pen", None),
        ("1", "ink", None),
    )
    assert messages[8] == Delete(relation.oid, "O", ("1", "ink", None))
    assert messages[12] == Truncate(0, (relation.oid,))
    begin, commit = messages[0], messages[3]
    assert isinstance(begin, Begin) and isinstance(commit, Commit)
    assert begin.final_lsn == commit.commit_lsn < commit.end_lsn
