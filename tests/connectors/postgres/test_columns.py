"""Debezium's column filters and masks on a real database: excluded columns never reach the
change events (snapshot and stream, before and after images, value schema), masks and
truncation apply, the key keeps the primary key; bad rules are refused naming the key."""

from __future__ import annotations

import hashlib

import pytest

from sluice.connect.api.errors import ConnectError
from sluice.connectors.postgres.columns import ColumnRules, hash_value
from sluice.connectors.postgres.source import PostgresCdcConnector
from sluice.errors import ConfigError
from tests.connectors.postgres.fixtures import CaptureFactory, Database, describe, value_of

USERS = (
    "CREATE TABLE users (id int PRIMARY KEY, email text, ssn text NOT NULL, "
    "name varchar(12), note text, age int)"
)
RULES = {
    "column.exclude.list": r"public\.users\.ssn",
    "column.mask.with.4.chars": r"public\.users\.email",
    "column.mask.hash.SHA-256.with.salt.pepper": r"public\.users\.name",
    "column.truncate.to.5.chars": r"public\.users\.note,public\.users\.name",
}


def _expected(id_: int, name: str, note: str, age: int) -> dict[str, object]:
    """A row as the rules emit it: no ssn, email masked, name hashed (the mask wins over the
    truncation that matches it too) and cut to its varchar(12), note truncated."""
    return {
        "id": id_,
        "email": "****",
        "name": hash_value("SHA-256", "pepper", name, version=1)[:12],
        "note": note[:5],
        "age": age,
    }


def test_excluded_columns_never_reach_the_events_and_masks_apply(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(
        USERS,
        "ALTER TABLE users REPLICA IDENTITY FULL",
        "INSERT INTO users VALUES (1, 'ada@example.com', '123-45-6789', 'Ada', "
        "'first programmer', 36)",
    )
    cdc = capture(**RULES)
    (read,) = cdc.poll_changes(1)  # the snapshot
    db.execute(
        "INSERT INTO users VALUES (2, 'alan@example.com', '987-65-4321', 'Alan Turing', "
        "'enigma', 41)",
        "UPDATE users SET age = 37, ssn = '000-00-0000' WHERE id = 1",
        "DELETE FROM users WHERE id = 2",
    )
    changes = cdc.poll_changes(4)
    ada = _expected(1, "Ada", "first programmer", 36)
    ada_older = _expected(1, "Ada", "first programmer", 37)
    alan = _expected(2, "Alan Turing", "enigma", 41)
    assert [describe(r) for r in [read, *changes]] == [
        ("r", {"id": 1}, None, ada),
        ("c", {"id": 2}, None, alan),
        ("u", {"id": 1}, ada, ada_older),
        ("d", {"id": 2}, alan, None),
        ("tombstone", {"id": 2}),
    ]
    for record in [read, *changes[:3]]:
        text = repr(value_of(record.value))
        for secret in ("123-45-6789", "987-65-4321", "000-00-0000", "@example.com", "Turing"):
            assert secret not in text, f"{secret} leaked into {text}"
    envelope = read.value_schema
    assert envelope is not None
    after = envelope.field("after")
    assert after is not None
    fields = {f.name: f.schema for f in after.schema.fields}
    assert list(fields) == ["id", "email", "name", "note", "age"]  # no ssn
    assert dict(fields["email"].parameters) == {"masked": "true"}
    assert dict(fields["name"].parameters) == {"masked": "true"}
    assert dict(fields["note"].parameters) == {"truncateLength": "5"}
    assert fields["age"].parameters == ()


def test_the_include_list_keeps_only_its_columns_and_the_key_its_primary_key(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(
        "CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance int, pin text)",
        "INSERT INTO accounts VALUES (1, 'ada', 10, '1234')",
    )
    cdc = capture(column_include_list=r"public\.accounts\.(owner|balance)")
    (read,) = cdc.poll_changes(1)
    db.execute("UPDATE accounts SET balance = 11 WHERE id = 1")
    (update,) = cdc.poll_changes(1)
    # the key is the primary key, whatever the filters (as Debezium's)
    assert describe(read) == ("r", {"id": 1}, None, {"owner": "ada", "balance": 10})
    assert describe(update) == ("u", {"id": 1}, None, {"owner": "ada", "balance": 11})


def test_a_mask_on_a_column_that_is_not_text_fails_naming_key_and_column(
    db: Database, capture: CaptureFactory
) -> None:
    db.execute(USERS, "INSERT INTO users VALUES (1, 'a', 'b', 'c', 'd', 5)")
    key = "column.mask.with.3.chars"
    with pytest.raises(ConnectError, match=rf"{key}: column public\.users\.age is not a char"):
        capture(**{key: r"public\.users\.(email|age)"})


def test_bad_column_rules_are_refused_at_validation_naming_the_key() -> None:
    base = {"database.hostname": "h", "database.user": "u", "database.dbname": "d"}
    base["topic.prefix"] = "p"
    cases = {
        "column.exclude.list": ({"column.include.list": "a.b.c", "column.exclude.list": "a.b.d"}),
        "column.mask.hash.SHA-999.with.salt.x": {"column.mask.hash.SHA-999.with.salt.x": "a"},
        "column.truncate.to.0.chars": {"column.truncate.to.0.chars": "a.b.c"},
        "column.mask.with.many.chars": {"column.mask.with.many.chars": "a.b.c"},
        "column.truncate.to.5.chars": {"column.truncate.to.5.chars": "a.b.(c"},
    }
    for key, extra in cases.items():
        results = PostgresCdcConnector().validate({**base, **extra})
        errors = {v.name: v.errors for v in results if v.errors}
        assert list(errors) == [key], (key, errors)
        with pytest.raises(ConfigError) as refused:
            ColumnRules.parse({**base, **extra})
        assert refused.value.key == key


def test_hashes_are_debeziums_byte_for_byte() -> None:
    # V1: the digest of salt + the value as Java's ObjectOutputStream serializes a String;
    # the expected digests were computed with Java 17 (MessageDigest, ObjectOutputStream)
    assert (
        hash_value("SHA-256", "CzQMA0cB5K", "Ada Lovelace \u00e9\U0001f600\x00", version=1)
        == "f6823822dbea790548b00fc7eec002c392cfae5e5681460a1673ef4327ca1296"
    )
    assert hash_value("md5", "s", "x", version=1) == "9ba30586108161dff3c7394dac3f39c3"
    # V2: the digest of salt + the value's UTF-8 bytes
    expected = hashlib.sha512(b"salt" + "caf\u00e9".encode()).hexdigest()
    assert hash_value("SHA-512", "salt", "caf\u00e9", version=2) == expected
