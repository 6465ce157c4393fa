"""The ``_schemas`` records: Confluent's bytes, a Hypothesis round trip, and the state a
sequence of records (as Confluent writes them) leaves in the store."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from sluice.schema_registry.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    Key,
    ModeKey,
    ModeValue,
    NoopKey,
    Reference,
    SchemaKey,
    SchemaValue,
    Value,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from sluice.schema_registry.store import Store

names = st.text(min_size=1, max_size=20)
numbers = st.integers(min_value=1, max_value=2**31 - 1)
references = st.lists(st.builds(Reference, names, names, numbers), max_size=3).map(tuple)
schema_values = st.builds(
    SchemaValue,
    names,
    numbers,
    numbers,
    st.sampled_from(["AVRO", "JSON", "PROTOBUF"]),
    st.text(max_size=50),
    references,
    st.booleans(),
)
PAIRS: st.SearchStrategy[tuple[Key, Value | None]] = st.one_of(
    st.tuples(st.builds(SchemaKey, names, numbers), schema_values | st.none()),
    st.tuples(
        st.builds(ConfigKey, names | st.none()),
        st.builds(
            ConfigValue,
            st.sampled_from(["NONE", "FULL"]) | st.none(),
            st.booleans() | st.none(),
        ),
    ),
    st.tuples(st.builds(ModeKey, names | st.none()), st.builds(ModeValue, names)),
    st.tuples(st.builds(DeleteSubjectKey, names), st.builds(DeleteSubjectValue, names, numbers)),
    st.tuples(st.builds(ClearSubjectKey, names), st.builds(ClearSubjectValue, names)),
    st.tuples(st.just(NoopKey()), st.none()),
)


@given(PAIRS)
def test_records_round_trip(pair: tuple[Key, Value | None]) -> None:
    key, value = pair
    decoded = decode_key(encode_key(key))
    assert decoded == key
    assert decode_value(key, encode_value(value)) == value


def test_confluent_bytes() -> None:
    assert encode_key(ConfigKey(None)) == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert encode_key(ModeKey("s")) == b'{"keytype":"MODE","subject":"s","magic":0}'
    assert encode_key(NoopKey()) == b'{"keytype":"NOOP","magic":0}'
    assert json.loads(
        encode_value(SchemaValue("s", 2, 5, "PROTOBUF", "syntax", (Reference("a.proto", "a", 1),)))  # type: ignore[arg-type]
    ) == {
        "subject": "s",
        "version": 2,
        "id": 5,
        "schemaType": "PROTOBUF",
        "references": [{"name": "a.proto", "subject": "a", "version": 1}],
        "schema": "syntax",
        "deleted": False,
    }
    # a key type this registry does not use (Confluent's contexts) is skipped, not an error
    assert decode_key(b'{"keytype":"CONTEXT","tenant":"t","context":".c","magic":0}') is None


def test_replaying_confluent_deletes() -> None:
    store = Store()
    for version in (1, 2, 3):
        value = SchemaValue("s", version, version, "AVRO", f'"v{version}"', ())
        store.apply(SchemaKey("s", version), value)
    # Confluent's soft delete of a subject: DELETE_SUBJECT up to the latest version
    store.apply(DeleteSubjectKey("s"), DeleteSubjectValue("s", 2))
    assert store.versions("s") == [3]
    assert store.versions("s", deleted=True) == [1, 2, 3]
    # CLEAR_SUBJECT removes the soft-deleted versions for good
    store.apply(ClearSubjectKey("s"), ClearSubjectValue("s"))
    assert store.versions("s", deleted=True) == [3]
    assert store.by_id(1) is None and store.max_id == 3
    store.apply(SchemaKey("s", 3), None)
    assert not store.has_subject("s") and store.subjects(deleted=True) == []
