"""Hypothesis: random Avro records registered, read back by id and looked up — the same schema,
one id across subjects, no version for a repeat (the registry in process, over the memory log)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.schema_registry.log import MemoryLog
from sluice.schema_registry.registry import SchemaRegistry
from sluice.schema_registry.store import Store

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
PRIMITIVES = st.sampled_from(
    ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]
)
FIELD_TYPES = st.one_of(
    PRIMITIVES,
    st.builds(lambda t: {"type": "array", "items": t}, PRIMITIVES),
    st.builds(lambda t: {"type": "map", "values": t}, PRIMITIVES),
    st.builds(lambda t: ["null", t], PRIMITIVES.filter(lambda t: t != "null")),
)


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(NAMES, min_size=0, max_size=6, unique=True))
    return {
        "type": "record",
        "name": draw(NAMES),
        "namespace": draw(st.sampled_from(["", "shop", "a.b"])) or None,
        "fields": [{"name": n, "type": draw(FIELD_TYPES)} for n in names],
    }


@settings(max_examples=150, deadline=None)
@given(schemas=st.lists(records(), min_size=1, max_size=4))
def test_registered_schemas_read_back_the_same(schemas: list[dict[str, Any]]) -> None:
    registry = SchemaRegistry(MemoryLog(Store()))
    registry.set_config(None, {"compatibility": "NONE"})
    ids = []
    for schema in schemas:
        text = json.dumps({k: v for k, v in schema.items() if v is not None})
        schema_id = registry.register("random-value", {"schema": text})["id"]
        ids.append(schema_id)
        stored = registry.get_schema(schema_id)
        assert json.loads(stored["schema"]) == json.loads(registry.get_schema_text(schema_id))
        assert registry.register("random-value", {"schema": text}) == {"id": schema_id}
        assert registry.register("other-value", {"schema": text}) == {"id": schema_id}
        found = registry.lookup("random-value", {"schema": stored["schema"]})
        assert found["id"] == schema_id
    distinct = {json.dumps(s, sort_keys=True) for s in schemas}
    assert len(set(ids)) <= len(distinct)
    assert registry.store.max_id == len(set(ids))
    assert registry.versions("random-value")[-1] <= len(schemas)
