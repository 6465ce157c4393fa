"""The proxy's request parsing without a broker: concatenated JSON streams, v3 produce records,
embedded formats, v2 consumer settings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.rest_proxy.consumers import InstanceConfig
from sluice.rest_proxy.errors import RestError
from sluice.rest_proxy.formats import EmbeddedFormat, decode_plain, encode_plain
from sluice.rest_proxy.produce import (
    Producing,
    _plain_record,
    json_batches,
    json_values,
    parse_record,
)


async def _chunks(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _values(parts: list[bytes]) -> list[Any]:
    async def collect() -> list[Any]:
        found: list[Any] = []
        async for batch in json_batches(_chunks(parts)):
            found.extend(batch)
        return found

    return asyncio.run(collect())


def test_concatenated_json_split_anywhere_gives_every_value() -> None:
    body = '{"a": 1}\n{"b": "é"} [1, 2]\r\n"s"'.encode()
    expected = [{"a": 1}, {"b": "é"}, [1, 2], "s"]
    for cut in range(len(body) + 1):
        assert _values([body[:cut], body[cut:]]) == expected, cut


@given(
    st.lists(
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(),
            lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        ),
        max_size=5,
    ),
    st.integers(min_value=1, max_value=7),
    st.sampled_from([" ", "\n", "\r\n", ""]),
    st.sampled_from([None, 1]),
)
def test_any_values_survive_any_chunking(
    values: list[Any], size: int, separator: str, indent: int | None
) -> None:
    import json

    # values glued with nothing between them still parse when each ends itself (not numbers)
    texts = [json.dumps(v, indent=indent) for v in values]
    if not separator:
        texts = [f"[{t}]" for t in texts]
        values = [[v] for v in values]
    body = separator.join(texts).encode()
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    assert _values(parts) == values


def test_nan_and_infinity_are_not_json() -> None:
    with pytest.raises(RestError) as caught:
        _values([b'{"value": NaN}'])
    assert caught.value.status == 400


def test_a_broken_value_is_a_400_after_the_values_before_it() -> None:
    seen: list[Any] = []

    async def collect() -> None:
        async for batch in json_batches(_chunks([b'{"a": 1} {"b": '])):
            seen.extend(batch)

    with pytest.raises(RestError) as caught:
        asyncio.run(collect())
    assert seen == [{"a": 1}]
    assert caught.value.error_code == 400 and "Error processing JSON" in caught.value.message


def test_a_body_that_is_not_utf8_is_a_400() -> None:
    with pytest.raises(RestError) as caught:
        _values([b'"\xff"'])
    assert caught.value.status == 400


def test_a_record_with_every_field() -> None:
    record = parse_record(
        {
            "partition_id": 1,
            "headers": [{"name": "h", "value": "aGk="}, {"name": "n", "value": None}],
            "key": {"type": "STRING", "data": "k"},
            "value": {"type": "AVRO", "schema_id": 3, "data": {"a": 1}},
            "timestamp": "2024-01-02T03:04:05.250Z",
        }
    )
    assert record.partition == 1
    assert record.headers == [("h", b"hi"), ("n", None)]
    assert record.key is not None and record.key.plain is EmbeddedFormat.STRING
    assert record.value is not None and record.value.plain is None
    assert record.value.schema.schema_id == 3
    assert record.timestamp_ms == 1704164645250


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ([], "JSON object"),
        ({"partition_id": -1}, "partition_id"),
        ({"partition_id": "0"}, "partition_id"),
        ({"key": "x"}, "key must be an object"),
        ({"value": {"type": "XML", "data": ""}}, "unknown embedded format"),
        ({"value": {"type": "BINARY", "data": "", "schema_id": 1}}, "takes no schema"),
        ({"value": {"data": 1, "colour": "red"}}, "unknown field"),
        ({"headers": {"h": "v"}}, "headers"),
        ({"headers": [{"name": "h", "value": "%%%"}]}, "base64"),
        ({"timestamp": 5}, "ISO-8601"),
        ({"timestamp": "yesterday"}, "ISO-8601"),
        ({"surprise": 1}, "Unknown field"),
        ({"value": {"subject_name_strategy": "MINE"}}, "subject_name_strategy"),
    ],
)
def test_bad_records_are_400_saying_what_is_wrong(body: Any, words: str) -> None:
    with pytest.raises(RestError) as caught:
        parse_record(body)
    assert caught.value.error_code == 400
    assert words in caught.value.message, caught.value.message


def test_plain_formats_round_trip() -> None:
    assert encode_plain(EmbeddedFormat.STRING, "héllo") == "héllo".encode()
    assert encode_plain(EmbeddedFormat.JSON, [1, "a"]) == b'[1,"a"]'
    assert decode_plain(EmbeddedFormat.JSON, b'{"x": null}') == {"x": None}
    assert encode_plain(EmbeddedFormat.BINARY, None) is None
    with pytest.raises(RestError) as caught:
        encode_plain(EmbeddedFormat.BINARY, "not base64!")
    assert caught.value.error_code == 42206


@pytest.mark.parametrize(
    "body",
    [
        {"format": "xml"},
        {"auto.offset.reset": "middle"},
        {"auto.commit.enable": "maybe"},
        {"fetch.min.bytes": "lots"},
        {"consumer.request.timeout.ms": -5},
        {"max.poll.records": 5},
        {"name": ""},
    ],
)
def test_bad_consumer_settings_are_42204(body: dict[str, Any]) -> None:
    with pytest.raises(RestError) as caught:
        InstanceConfig.parse(body)
    assert caught.value.error_code == 42204 and caught.value.status == 422


def test_consumer_settings_are_read() -> None:
    config = InstanceConfig.parse(
        {
            "name": "c1",
            "format": "avro",
            "auto.offset.reset": "smallest",
            "auto.commit.enable": "false",
            "fetch.min.bytes": "1",
            "consumer.request.timeout.ms": 500,
        }
    )
    assert config == InstanceConfig("c1", "avro", "earliest", False, 1, 500)


def test_integers_past_64_bits_stay_exact() -> None:
    """orjson would read -2**63 - 1 as a float; such lines go to the exact parser (Hypothesis
    found it in a clean-clone CI run)."""
    body = (
        b'{"value": {"type": "JSON", "data": -9223372036854775809}}\n{"n": 18446744073709551616}\n'
    )
    values, failure = json_values(body)
    assert failure is None
    assert values == [
        {"value": {"type": "JSON", "data": -9223372036854775809}},
        {"n": 18446744073709551616},
    ]


_plain_parts = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["BINARY", "binary", "STRING", "JSON", "XML", 3])},
        optional={
            "data": st.one_of(
                st.none(),
                st.sampled_from(["aGk=", "", "not base64!", "aGk", "héllo"]),
                st.integers(),
                st.lists(st.integers(), max_size=2),
            )
        },
    ),
    st.fixed_dictionaries({"data": st.just("aGk=")}),
    st.just("x"),
)
_records = st.fixed_dictionaries(
    {},
    optional={
        "partition_id": st.one_of(st.integers(-1, 3), st.just(True), st.just("0")),
        "key": _plain_parts,
        "value": _plain_parts,
        "timestamp": st.just("2024-01-02T03:04:05Z"),
    },
)


def _general(record: Any, partitions: int) -> tuple[Any, bytes] | RestError:
    producing = Producing(cast(Any, None), cast(Any, None))
    try:
        out, fields = producing.encode("t", partitions, parse_record(record))
    except RestError as error:
        return error
    return out, b"," + orjson.dumps(fields)[1:-1] if fields else b""


@given(_records)
def test_the_quick_path_answers_as_the_general_one(record: dict[str, Any]) -> None:
    """The usual records skip parse_record (produce's hot path): whatever it takes, it must
    encode as the general path does, and refuse with the same code and message."""
    expected = _general(record, 2)
    try:
        quick = _plain_record(record, 2)
    except RestError as error:
        assert isinstance(expected, RestError), (record, error.message)
        assert (error.error_code, error.message) == (expected.error_code, expected.message)
        return
    if quick is None:
        return  # the general path reads it
    assert not isinstance(expected, RestError), (record, expected.message)
    assert quick == expected, record


def test_the_quick_path_takes_the_usual_records() -> None:
    usual = {"key": {"type": "STRING", "data": "k"}, "value": {"type": "BINARY", "data": "aGk="}}
    quick = _plain_record(usual, 1)
    assert quick is not None and quick == _general(usual, 1)
    assert quick[1] == b',"key":{"type":"STRING","size":1},"value":{"type":"BINARY","size":2}'
