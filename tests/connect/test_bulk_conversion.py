"""The converters' bulk methods (``from_connect_all``, ``to_connect_all``) give exactly what
converting one value at a time gives, or raise where it would."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.connect.api.data import Schema
from sluice.connect.api.errors import ConverterError
from sluice.connect.converters import (
    ByteArrayConverter,
    Converter,
    StringConverter,
    converter_from,
)

ENCODINGS = ["utf-8", "latin-1", "ascii", "utf-16", "cp1252"]
texts = st.one_of(st.text(), st.sampled_from(["", "\n", "a\nb", "\r", "é", "\x00"]))
values = st.lists(st.one_of(texts, st.none(), st.integers(), st.booleans()), max_size=20)
datas = st.lists(
    st.one_of(st.binary(max_size=12), st.none(), st.sampled_from([b"\n", b"\xff", b"a\nb"])),
    max_size=20,
)


def _one_by_one_from(converter: Converter, values: list[Any]) -> Any:
    try:
        return [converter.from_connect("t", None, value) for value in values]
    except Exception as error:
        return type(error)


def _one_by_one_to(converter: Converter, datas: list[bytes | None]) -> Any:
    try:
        pairs = [converter.to_connect("t", data) for data in datas]
    except Exception as error:
        return type(error)
    return [schema for schema, _ in pairs], [value for _, value in pairs]


@pytest.mark.parametrize("encoding", ENCODINGS)
@given(values=values)
def test_string_from_connect_all_is_from_connect_of_each(encoding: str, values: list[Any]) -> None:
    converter = converter_from("string", {"converter.encoding": encoding}, is_key=False)
    expected = _one_by_one_from(converter, values)
    try:
        got: Any = converter.from_connect_all("t", None, values)
    except Exception as error:
        got = type(error)
    assert got == expected


@pytest.mark.parametrize("encoding", ENCODINGS)
@given(datas=datas)
def test_string_to_connect_all_is_to_connect_of_each(
    encoding: str, datas: list[bytes | None]
) -> None:
    converter = converter_from("string", {"converter.encoding": encoding}, is_key=False)
    expected = _one_by_one_to(converter, datas)
    try:
        result = converter.to_connect_all("t", datas)
        assert result is not None
        schema, got_values = result
        got: Any = [schema] * len(datas), got_values
    except ConverterError:
        got = ConverterError
    assert got == expected


@given(datas=datas)
def test_bytes_to_connect_all_is_to_connect_of_each(datas: list[bytes | None]) -> None:
    converter = ByteArrayConverter()
    result = converter.to_connect_all("t", datas)
    assert result is not None
    assert ([result[0]] * len(datas), result[1]) == _one_by_one_to(converter, datas)


def test_a_string_converter_subclass_is_converted_its_own_way() -> None:
    class Upper(StringConverter):
        def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
            return None if value is None else str(value).upper().encode()

        def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
            return None, None if data is None else bytes(data).decode().upper()

    converter = Upper()
    assert converter.from_connect_all("t", None, ["a", "b"]) == [b"A", b"B"]
    assert converter.to_connect_all("t", [b"a"]) is None  # the runner goes record by record


def test_json_has_no_bulk_reading() -> None:
    converter = converter_from("json", {}, is_key=False)
    assert converter.to_connect_all("t", [b'{"schema": null, "payload": 1}']) is None
    assert converter.from_connect_all("t", None, [1, None]) == [
        converter.from_connect("t", None, 1),
        None,
    ]
