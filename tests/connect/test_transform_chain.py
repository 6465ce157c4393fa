"""The transformation registry and the chain built from config.

Expected values are written out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from sluice.connect.api.data import (
    Header,
    SinkRecord,
)
from sluice.connect.api.errors import TransformError
from sluice.connect.transforms import (
    TRANSFORMS,
    Transformation,
    TransformChain,
    transform_class,
)
from sluice.errors import ConfigError
from tests.connect.transform_helpers import (
    PERSON,
    person,
    raises,
    record,
    sink_record,
)

# --- The registry and the chain -----------------------------------------------------------------


@pytest.mark.parametrize("short", sorted(TRANSFORMS))
def test_every_kafka_transform_name_resolves(short: str) -> None:
    cls = transform_class(f"org.apache.kafka.connect.transforms.{short}")
    assert cls is transform_class(short) is TRANSFORMS[short]
    assert cls.__doc__, f"{cls.__name__} has no docstring"
    for key in cls.CONFIG:
        assert key.doc, f"{short}: {key.name} has no doc"


def test_unknown_transform_names() -> None:
    with raises(ConfigError, "unknown transformation 'InsertField'"):
        transform_class("InsertField")
    with raises(ConfigError, "unknown transformation 'org.apache.kafka.connect.transforms.Nope'"):
        transform_class("org.apache.kafka.connect.transforms.Nope")
    assert transform_class("sluice.connect.transforms.fields.InsertFieldValue").__name__ == (
        "InsertFieldValue"
    )


def chain(config: dict[str, Any]) -> TransformChain:
    return TransformChain.from_config(config)


def test_chain_applies_in_order_and_keeps_the_record_type() -> None:
    steps = chain(
        {
            "transforms": "insert, extract",
            "transforms.insert.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.insert.offset.field": "offset",
            "transforms.extract.type": "ExtractField$Value",
            "transforms.extract.field": "offset",
        }
    )
    assert len(steps) == 2
    out = steps.apply(sink_record({"id": 1}))
    assert isinstance(out, SinkRecord)
    assert (out.value, out.kafka_offset) == (42, 42)
    nothing = chain({})
    original = record("v")
    assert nothing.apply(original) is original


def test_chain_predicates_and_negate() -> None:
    config = {
        "transforms": "mark",
        "transforms.mark.type": "InsertHeader",
        "transforms.mark.header": "big",
        "transforms.mark.value.literal": "true",
        "transforms.mark.predicate": "isOrders",
        "predicates": "isOrders",
        "predicates.isOrders.type": "org.apache.kafka.connect.transforms.predicates."
        "TopicNameMatches",
        "predicates.isOrders.pattern": "orders",
    }

    def headers(steps: TransformChain, topic: str) -> list[Header]:
        out = steps.apply(record("v", topic=topic))
        assert out is not None
        return out.headers

    plain, negated = chain(config), chain({**config, "transforms.mark.negate": "true"})
    assert headers(plain, "orders") == [("big", True)]
    assert headers(plain, "users") == []
    assert headers(negated, "orders") == []
    assert headers(negated, "users") == [("big", True)]


def test_chain_stops_at_a_dropped_record() -> None:
    steps = chain(
        {
            "transforms": "drop,route",
            "transforms.drop.type": "Filter",
            "transforms.route.type": "TimestampRouter",
        }
    )
    assert steps.apply(record("v", timestamp=None)) is None


def test_chain_names_the_failing_transform() -> None:
    steps = chain(
        {
            "transforms": "pick",
            "transforms.pick.type": "ExtractField$Value",
            "transforms.pick.field": "x",
        }
    )
    with raises(TransformError, "transforms.pick (ExtractFieldValue): Unknown field: x"):
        steps.apply(record(person(), PERSON))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"transforms": "a"}, "transforms.a.type: required"),
        (
            {"transforms": "a", "transforms.a.type": "Nope"},
            "transforms.a.type: unknown transformation 'Nope'",
        ),
        (
            {"transforms": "a", "transforms.a.type": "ExtractField$Key"},
            "transforms.a.field: required",
        ),
        (
            {"transforms": "a", "transforms.a.type": "InsertField$Value"},
            "transforms.a: No field insertion configured",
        ),
        (
            {"transforms": "a,a", "transforms.a.type": "Filter"},
            "transforms: Duplicate alias provided.",
        ),
        (
            {"transforms": "a", "transforms.a.type": "Filter", "transforms.a.predicate": "p"},
            "transforms.a.predicate: unknown predicate 'p' (predicates: none)",
        ),
        (
            {"transforms": "a", "transforms.a.type": "Filter", "transforms.a.negate": "true"},
            "transforms.a.negate: negate needs a predicate",
        ),
        (
            {
                "transforms": "a",
                "transforms.a.type": "Filter",
                "transforms.a.predicate": "p",
                "transforms.a.negate": "yes",
                "predicates": "p",
                "predicates.p.type": "RecordIsTombstone",
            },
            "transforms.a.negate: must be true or false, not 'yes'",
        ),
        ({"predicates": "p"}, "predicates.p.type: required"),
        (
            {"predicates": "p", "predicates.p.type": "IsBig"},
            "predicates.p.type: unknown predicate 'IsBig'",
        ),
        ({"predicates": "p", "predicates.p.type": "HasHeaderKey"}, "predicates.p.name: required"),
    ],
)
def test_chain_config_errors_name_the_key(config: dict[str, Any], message: str) -> None:
    with raises(ConfigError, message):
        chain(config)


def test_chain_accepts_lists_and_closes_every_plugin_once() -> None:
    closed: list[str] = []

    class Tracking(Transformation):
        """Records its close."""

        def apply(self, record: Any) -> Any:
            return record

        def close(self) -> None:
            closed.append("t")

    steps = chain(
        {
            "transforms": ["a", "b"],
            "transforms.a.type": "Filter",
            "transforms.a.predicate": "p",
            "transforms.b.type": "Filter",
            "transforms.b.predicate": "p",
            "transforms.b.negate": True,
            "predicates": ["p"],
            "predicates.p.type": "RecordIsTombstone",
        }
    )
    assert steps.apply(record(None)) is None  # a: tombstone dropped
    assert steps.apply(record("v")) is None  # b: not a tombstone, negated: dropped
    steps.stages[0].transformation = Tracking()
    steps.close()
    assert closed == ["t"]
