"""Every predicate, on its own and guarding a transformation with and without ``negate``."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sluice.connect.api.data import ConnectRecord, Header, SinkRecord
from sluice.connect.transforms import PREDICATES, Predicate, TransformChain, predicate_class
from sluice.errors import ConfigError


def raises(kind: type[Exception], text: str) -> pytest.RaisesContext[Exception]:
    """``pytest.raises`` for an exception whose message contains ``text``."""
    return pytest.raises(kind, match=re.escape(text))


def record(
    topic: str = "orders", value: Any = "v", headers: list[Header] | None = None
) -> ConnectRecord:
    return ConnectRecord(topic, 0, None, "k", None, value, 1, headers or [])


def make(name: str, config: dict[str, Any] | None = None) -> Predicate:
    predicate = predicate_class(name)()
    predicate.configure(config or {})
    return predicate


def test_topic_name_matches_the_whole_name() -> None:
    matches = make("TopicNameMatches", {"pattern": "orders-(eu|us)"})
    assert matches.test(record("orders-eu"))
    assert matches.test(record("orders-us"))
    assert not matches.test(record("orders-eu-archive")), "a prefix match is not a match"
    assert not matches.test(record("old-orders-eu"))
    named = make("TopicNameMatches", {"pattern": "(?<region>eu|us)\\.orders"})
    assert named.test(record("eu.orders"))
    assert not named.test(record("euXorders"))


def test_topic_name_matches_config_errors() -> None:
    with raises(ConfigError, "pattern: required"):
        make("TopicNameMatches")
    with raises(ConfigError, "pattern: String must be non-empty"):
        make("TopicNameMatches", {"pattern": " "})
    with raises(ConfigError, "pattern: invalid regex '[a-'"):
        make("TopicNameMatches", {"pattern": "[a-"})


def test_has_header_key() -> None:
    has = make("HasHeaderKey", {"name": "trace"})
    assert has.test(record(headers=[("a", 1), ("trace", None)]))
    assert has.test(record(headers=[("trace", b"1"), ("trace", b"2")]))
    assert not has.test(record(headers=[("Trace", b"1")])), "header keys are case-sensitive"
    assert not has.test(record())
    with raises(ConfigError, "name: required"):
        make("HasHeaderKey")


def test_record_is_tombstone() -> None:
    tombstone = make("RecordIsTombstone")
    assert tombstone.test(record(value=None))
    assert not tombstone.test(record(value=""))
    assert not tombstone.test(record(value={}))
    sink = SinkRecord("t", 0, None, None, None, None, 1, [], kafka_offset=5)
    assert tombstone.test(sink), "a null key does not matter, only the value"


@pytest.mark.parametrize("short", sorted(PREDICATES))
def test_every_kafka_predicate_name_resolves(short: str) -> None:
    full = predicate_class(f"org.apache.kafka.connect.transforms.predicates.{short}")
    assert full is predicate_class(short) is PREDICATES[short]
    assert full.__doc__
    assert all(key.doc for key in full.CONFIG)


def test_unknown_predicate_names() -> None:
    with raises(ConfigError, "unknown predicate 'org.apache.kafka.connect.transforms.Filter'"):
        predicate_class("org.apache.kafka.connect.transforms.Filter")
    with raises(ConfigError, "unknown predicate 'sluice.connect.transforms.filter.Filter'"):
        predicate_class("sluice.connect.transforms.filter.Filter")
    path = "sluice.connect.transforms.predicates.HasHeaderKey"
    assert predicate_class(path) is PREDICATES["HasHeaderKey"]


GUARDED = [
    ("TopicNameMatches", {"pattern": "orders"}, record("orders"), record("users")),
    ("HasHeaderKey", {"name": "h"}, record(headers=[("h", 1)]), record()),
    ("RecordIsTombstone", {}, record(value=None), record(value="v")),
]


@pytest.mark.parametrize(("name", "config", "matching", "other"), GUARDED)
@pytest.mark.parametrize("negate", [False, True])
def test_predicate_guards_a_transform(
    name: str,
    config: dict[str, Any],
    matching: ConnectRecord,
    other: ConnectRecord,
    negate: bool,
) -> None:
    settings: dict[str, Any] = {
        "transforms": "drop",
        "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
        "transforms.drop.predicate": "p",
        "transforms.drop.negate": str(negate).lower(),
        "predicates": "p",
        "predicates.p.type": f"org.apache.kafka.connect.transforms.predicates.{name}",
    }
    settings.update({f"predicates.p.{key}": value for key, value in config.items()})
    chain = TransformChain.from_config(settings)
    dropped, kept = (other, matching) if negate else (matching, other)
    assert chain.apply(dropped) is None
    assert chain.apply(kept) is kept
