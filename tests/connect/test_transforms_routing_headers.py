"""TimestampRouter, RegexRouter, Filter and the header transformations.

Expected values are written out by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from sluice.connect.api.data import (
    Field,
    Header,
    Schema,
    Struct,
)
from sluice.connect.api.errors import TransformError
from sluice.errors import ConfigError
from tests.connect.transform_helpers import (
    PERSON,
    apply,
    make,
    person,
    raises,
    record,
)

# --- TimestampRouter and RegexRouter ------------------------------------------------------------


def test_timestamp_router() -> None:
    out = apply("TimestampRouter", {}, record("v"))
    assert (out.topic, out.kafka_partition, out.value) == ("orders-20231114", 3, "v")
    custom = {"topic.format": "${timestamp}.${topic}", "timestamp.format": "yyyy-MM"}
    assert apply("TimestampRouter", custom, record("v")).topic == "2023-11.orders"
    with raises(TransformError, "Timestamp missing on record: orders"):
        make("TimestampRouter").apply(record("v", timestamp=None))
    with raises(ConfigError, "timestamp.format: Illegal pattern character 'b'"):
        make("TimestampRouter", {"timestamp.format": "bb"})


def test_regex_router() -> None:
    config = {"regex": "(.*)-(staging|prod)", "replacement": "$2.$1"}
    assert apply("RegexRouter", config, record("v", topic="orders-prod")).topic == "prod.orders"
    untouched = record("v", topic="orders-prod-eu")
    assert make("RegexRouter", config).apply(untouched) is untouched
    named = {"regex": "(?<app>[a-z]+)_(?<n>\\d+)", "replacement": "${app}-v$2 \\$"}
    assert apply("RegexRouter", named, record("v", topic="shop_12")).topic == "shop-v12 $"
    # $12 reads as group 1 then "2" when there is no group 12, as in Java.
    assert (
        apply("RegexRouter", {"regex": "(a)", "replacement": "$12"}, record("v", topic="a")).topic
        == "a2"
    )


def test_regex_router_config_errors() -> None:
    with raises(ConfigError, "regex: invalid regex '(unclosed'"):
        make("RegexRouter", {"regex": "(unclosed", "replacement": "x"})
    with raises(ConfigError, "replacement: No group 2"):
        make("RegexRouter", {"regex": "(a)", "replacement": "$2"})
    with raises(ConfigError, "replacement: No group with name {x}"):
        make("RegexRouter", {"regex": "(a)", "replacement": "${x}"})
    with raises(ConfigError, "replacement: required"):
        make("RegexRouter", {"regex": "a"})


# --- Filter and the header transformations ------------------------------------------------------


def test_filter_drops_everything() -> None:
    assert make("org.apache.kafka.connect.transforms.Filter").apply(record("v")) is None


def test_header_from_schemaless() -> None:
    existing: list[Header] = [("h0", b"x")]
    value = {"id": 7, "name": "Ada", "city": "Paris"}
    config = {"fields": "id,name", "headers": "x-id,x-name", "operation": "copy"}
    copied = apply("HeaderFrom$Value", config, record(value, headers=existing))
    assert copied.value == value
    assert copied.headers == [("h0", b"x"), ("x-id", 7), ("x-name", "Ada")]
    moved = apply("HeaderFrom$Value", {**config, "operation": "move"}, record(value))
    assert (moved.value, moved.headers) == ({"city": "Paris"}, [("x-id", 7), ("x-name", "Ada")])
    key = apply("HeaderFrom$Key", {**config, "operation": "move"}, record("v", key={"id": 1}))
    assert (key.key, key.value, key.headers) == ({}, "v", [("x-id", 1), ("x-name", None)])


def test_header_from_with_schema() -> None:
    config = {"fields": "name", "headers": "who", "operation": "move"}
    out = apply("HeaderFrom$Value", config, record(person(), PERSON))
    remaining = Schema.struct([Field("id", Schema("int64"))], name="com.example.Person")
    assert (out.value_schema, out.value) == (remaining, Struct(remaining, {"id": 7}))
    assert out.headers == [("who", "Ada")]
    copied = apply("HeaderFrom$Value", {**config, "operation": "copy"}, record(person(), PERSON))
    assert (copied.value_schema, copied.value, copied.headers) == (
        PERSON,
        person(),
        [("who", "Ada")],
    )
    with raises(TransformError, "nope is not a valid field name"):
        make("HeaderFrom$Value", {**config, "fields": "nope"}).apply(record(person(), PERSON))


def test_header_from_config_errors() -> None:
    with raises(ConfigError, "headers: 'fields' config must have the same number of elements"):
        make("HeaderFrom$Value", {"fields": "a,b", "headers": "h", "operation": "copy"})
    with raises(ConfigError, "operation: must be one of move, copy, not 'cut'"):
        make("HeaderFrom$Value", {"fields": "a", "headers": "h", "operation": "cut"})


@pytest.mark.parametrize(
    ("literal", "value"),
    [("42", 42), ("-1.5", -1.5), ("true", True), ("FALSE", False), ("hello world", "hello world")],
)
def test_insert_header(literal: str, value: Any) -> None:
    out = apply(
        "InsertHeader", {"header": "h", "value.literal": literal}, record("v", headers=[("a", 1)])
    )
    assert out.headers == [("a", 1), ("h", value)]


def test_insert_header_config_errors() -> None:
    with raises(ConfigError, "header: required"):
        make("InsertHeader", {"value.literal": "x"})
    with raises(ConfigError, "value.literal: required"):
        make("InsertHeader", {"header": "h"})


def test_drop_headers() -> None:
    headers: list[Header] = [("a", 1), ("b", 2), ("a", 3), ("c", 4)]
    out = apply("DropHeaders", {"headers": "a,c"}, record("v", headers=headers))
    assert out.headers == [("b", 2)]
    with raises(ConfigError, "headers: Empty list"):
        make("DropHeaders", {"headers": ""})
