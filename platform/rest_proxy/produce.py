"""API v3's produce: ``POST /v3/clusters/{cluster_id}/topics/{topic_name}/records``.

The body is one JSON record or several, one after another (Confluent's streaming mode,
"concatenated JSON", usually sent with ``Transfer-Encoding: chunked``)::

    {"partition_id": 0,                              # optional: the partitioner chooses
     "headers": [{"name": "h", "value": "aGk="}],    # values base64 (or null)
     "key": {"type": "STRING", "data": "k"},
     "value": {"type": "JSON", "data": {"n": 1}},
     "timestamp": "2024-01-02T03:04:05.000Z"}        # optional

A key or value has a ``type`` (``BINARY``, ``JSON``, ``STRING``, ``AVRO``, ``JSONSCHEMA``,
``PROTOBUF``) and ``data``; a schema'd one names its schema by ``schema``, ``schema_id``,
``schema_version``, ``subject`` and ``subject_name_strategy`` (:mod:`sluice.rest_proxy.schemas`);
with any of these and no ``type``, the schema's type is used; with none, ``BINARY``.

Each record is answered, in order, with its delivery report::

    {"error_code": 200, "cluster_id": "...", "topic_name": "t", "partition_id": 0,
     "offset": 42, "timestamp": "2024-01-02T03:04:05.000Z",
     "key": {"type": "STRING", "size": 1}, "value": {"type": "JSON", "size": 7}}

or ``{"error_code": n, "message": "..."}``. A request of exactly one record (not chunked) is
answered with that record's HTTP status (a 404 for an unknown topic, 400 for a bad body, 422 for
data that do not fit their schema); a stream is answered 200 with one result per record
(separated by CRLF), written as the records are delivered.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.concurrency import run_in_threadpool

from sluice.rest_proxy.delivery import OutRecord, send
from sluice.rest_proxy.errors import (
    BAD_REQUEST,
    PARTITION_NOT_FOUND,
    SERIALIZATION,
    RestError,
)
from sluice.rest_proxy.formats import EmbeddedFormat, encode_plain
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.schemas import STRATEGIES, SchemaRequest, SchemaSerdes

__all__ = [
    "Part",
    "Producing",
    "RecordRequest",
    "iso_timestamp",
    "json_batches",
    "json_values",
    "parse_record",
    "parse_timestamp",
]

_RECORD_FIELDS = {"partition_id", "headers", "key", "value", "timestamp"}
_DATA_FIELDS = {
    "type",
    "data",
    "schema",
    "schema_id",
    "schema_version",
    "subject",
    "subject_name_strategy",
}
_WHITESPACE = " \t\n\r"


def _bad(message: str) -> RestError:
    return RestError(BAD_REQUEST, message)


@dataclass(slots=True)
class Part:
    """A key or a value of a request: its data and what says how to encode it; ``plain`` is
    its plain format, or ``None`` when it goes through the registry."""

    data: Any
    schema: SchemaRequest
    plain: EmbeddedFormat | None


def _plain_of(schema: SchemaRequest) -> EmbeddedFormat | None:
    fmt = schema.fmt
    if fmt is None:
        hinted = (
            schema.schema is not None
            or schema.schema_id is not None
            or schema.schema_version is not None
            or schema.subject is not None
            or schema.strategy is not None
        )
        return None if hinted else EmbeddedFormat.BINARY
    return None if fmt.needs_schema else fmt


@dataclass(slots=True)
class RecordRequest:
    """One record of a v3 produce request."""

    partition: int | None
    headers: list[tuple[str, bytes | None]]
    key: Part | None
    value: Part | None
    timestamp_ms: int | None


def parse_timestamp(text: Any) -> int:
    """Epoch milliseconds of an ISO-8601 instant.

    >>> parse_timestamp("1970-01-01T00:00:01.5Z")
    1500
    """
    if not isinstance(text, str):
        raise _bad("timestamp must be an ISO-8601 string, e.g. 2024-01-02T03:04:05.000Z")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise _bad(f"timestamp {text!r} is not an ISO-8601 instant") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return round(moment.timestamp() * 1000)


@functools.lru_cache(maxsize=1024)
def iso_timestamp(ms: int) -> str:
    """An epoch-milliseconds timestamp as Confluent writes an ``Instant``.

    >>> iso_timestamp(1500)
    '1970-01-01T00:00:01.500Z'
    """
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


_INT64_MAX = 2**63 - 1


def _int(value: Any, name: str, *, minimum: int = 0) -> int:
    """A 64-bit integer at least ``minimum`` (a larger one is a bad request; one the cluster
    has no such partition or schema of is the caller's 404)."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _INT64_MAX:
        raise _bad(f"{name} must be an integer from {minimum} to {_INT64_MAX}")
    return value


def _string(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise _bad(f"{name} must be a non-empty string")
    return value


_TYPE_AND_DATA = frozenset({"type", "data"})
_PLAIN_TYPES = {
    name: (SchemaRequest(fmt=fmt), fmt)
    for fmt in EmbeddedFormat
    if not fmt.needs_schema
    for name in (fmt.value, fmt.value.lower())
}


def _part(value: Any, name: str) -> Part | None:
    if value is None:
        return None
    if type(value) is dict and value.keys() <= _TYPE_AND_DATA:
        kind = value.get("type")
        if type(kind) is str and kind in _PLAIN_TYPES:  # the usual case, made quick
            request, plain = _PLAIN_TYPES[kind]
            return Part(value.get("data"), request, plain)
    if not isinstance(value, dict):
        raise _bad(f"{name} must be an object with 'type' and 'data'")
    if not value.keys() <= _DATA_FIELDS:
        raise _bad(f"{name}: unknown field(s) {', '.join(sorted(set(value) - _DATA_FIELDS))}")
    fmt: EmbeddedFormat | None = None
    if value.get("type") is not None:
        try:
            fmt = EmbeddedFormat.parse(_string(value["type"], f"{name}.type"))
        except ValueError as error:
            raise _bad(f"{name}.type: {error}") from None
    strategy = value.get("subject_name_strategy")
    if strategy is not None:
        strategy = _string(strategy, f"{name}.subject_name_strategy").upper()
        if strategy not in STRATEGIES:
            raise _bad(f"{name}.subject_name_strategy must be one of {', '.join(STRATEGIES)}")
    schema = value.get("schema")
    if schema is not None and not isinstance(schema, str):
        schema = json.dumps(schema)  # an Avro or JSON schema given as JSON rather than text
    request = SchemaRequest(
        fmt=fmt,
        schema=schema,
        schema_id=None
        if value.get("schema_id") is None
        else _int(value["schema_id"], f"{name}.schema_id"),
        schema_version=None
        if value.get("schema_version") is None
        else _int(value["schema_version"], f"{name}.schema_version", minimum=-1),
        subject=None
        if value.get("subject") is None
        else _string(value["subject"], f"{name}.subject"),
        strategy=strategy,
    )
    if (
        fmt is not None
        and not fmt.needs_schema
        and (request.schema or request.schema_id is not None or request.schema_version is not None)
    ):
        raise _bad(f"{name}: a {fmt.value} {name} takes no schema")
    return Part(value.get("data"), request, _plain_of(request))


def parse_record(obj: Any) -> RecordRequest:
    """A v3 produce record from its JSON (400 for anything else).

    >>> parse_record({"value": {"type": "STRING", "data": "x"}}).value.data
    'x'
    """
    if not isinstance(obj, dict):
        raise _bad("A produce request is a JSON object")
    if not obj.keys() <= _RECORD_FIELDS:
        raise _bad(f"Unknown field(s) {', '.join(sorted(set(obj) - _RECORD_FIELDS))}")
    partition = obj.get("partition_id")
    if partition is not None:
        partition = _int(partition, "partition_id")
    headers: list[tuple[str, bytes | None]] = []
    raw_headers = obj.get("headers")
    if raw_headers is not None:
        if not isinstance(raw_headers, list):
            raise _bad("headers must be a list of {name, value}")
        for header in raw_headers:
            if not isinstance(header, dict) or not isinstance(header.get("name"), str):
                raise _bad('each header is {"name": string, "value": base64 or null}')
            value = header.get("value")
            if value is not None:
                if not isinstance(value, str):
                    raise _bad("a header's value must be a base64 string or null")
                try:
                    value = base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    raise _bad(f"header {header['name']!r}: value is not valid base64") from None
            headers.append((header["name"], value))
    timestamp = obj.get("timestamp")
    return RecordRequest(
        partition=partition,
        headers=headers,
        key=_part(obj.get("key"), "key"),
        value=_part(obj.get("value"), "value"),
        timestamp_ms=None if timestamp is None else parse_timestamp(timestamp),
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _text_values(data: bytes, ended: bool) -> tuple[list[Any], bytes, RestError | None]:
    """The general parser: values of ``data`` by the standard library's ``raw_decode``, the
    bytes left over (an unfinished value), and the error that ends the stream if any."""
    try:
        text = data.decode("utf-8")
        tail = b""
    except UnicodeDecodeError as error:
        if ended or error.start < len(data) - 3:
            return [], b"", _bad(f"Error processing JSON: the body is not UTF-8 ({error.reason})")
        text, tail = data[: error.start].decode("utf-8"), data[error.start :]  # a split character
    values: list[Any] = []
    position = 0
    while True:
        while position < len(text) and text[position] in _WHITESPACE:
            position += 1
        if position >= len(text):
            return values, tail, None
        try:
            value, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError as error:
            if ended:
                return (
                    values,
                    b"",
                    _bad(f"Error processing JSON: {error.msg} at character {error.pos}"),
                )
            return values, text[position:].encode("utf-8") + tail, None  # wait for more of it
        except (ValueError, RecursionError) as error:
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
            return values, b"", _bad(f"Error processing JSON: {reason}")
        if text[end - 1] not in ']}"el':  # a number: only white space or the end ends it
            if end < len(text) and text[end] not in _WHITESPACE:
                if ended:
                    return (
                        values,
                        b"",
                        _bad(
                            f"Error processing JSON: unexpected {text[end]!r} "
                            f"after a number at character {end}"
                        ),
                    )
                return values, text[position:].encode("utf-8") + tail, None  # "1" + ".5"?
            if end == len(text) and not ended and not tail:
                return values, text[position:].encode("utf-8"), None  # it may go on
        position = end
        values.append(value)


_INEXACT = float(2**63)
"""orjson reads an integer beyond -2**63 … 2**64 - 1 as a float of at least this magnitude."""


def _maybe_inexact(value: Any) -> bool:
    """Whether orjson's ``value`` holds a float as large as an integer it cannot hold (such
    a line is read again by the exact parser; ordinary floats such as 12.5 are not).

    >>> _maybe_inexact({"v": {"data": [1, 2.5, "x"]}}), _maybe_inexact([1.8446744073709552e19])
    (False, True)
    """
    kind = type(value)
    if kind is dict:
        items = value.values()
    elif kind is list:
        items = value
    else:
        return kind is float and not -_INEXACT < value < _INEXACT
    for item in items:
        kind = type(item)
        if kind is str or kind is int or item is None or kind is bool:
            continue
        if _maybe_inexact(item):
            return True
    return False


def _values(data: bytes, ended: bool) -> tuple[list[Any], bytes, RestError | None]:
    """The values of ``data``: whole lines by orjson (the usual one record a line), the rest —
    several values on a line, a value over several lines, a line not yet ended, a line with an
    integer orjson cannot hold exactly — by :func:`_text_values`."""
    values: list[Any] = []
    position = 0
    size = len(data)
    loads = orjson.loads
    while position < size:
        newline = data.find(b"\n", position)
        if newline == -1:
            if not ended:
                break
            newline = size
        line = data[position:newline]
        try:
            value = loads(line)
        except orjson.JSONDecodeError:
            if line.strip():
                break
        else:
            if _maybe_inexact(value):
                break  # orjson read an integer past 64 bits as a float: the exact parser reads it
            values.append(value)
        position = newline + 1
    if position >= size:
        return values, b"", None
    more, rest, failure = _text_values(data[position:], ended)
    return values + more, rest, failure


def json_values(body: bytes) -> tuple[list[Any], RestError | None]:
    """The JSON values of a whole body of concatenated JSON, and the 400 error that ended it
    early if one did.

    >>> json_values(b'{"a": 1}\\n{"b": 2} [3]')
    ([{'a': 1}, {'b': 2}, [3]], None)
    >>> json_values(b'{"a": 1} {"b"')[1].status
    400
    """
    values, _, failure = _values(body, True)
    return values, failure


async def json_batches(chunks: AsyncIterator[bytes]) -> AsyncIterator[list[Any]]:
    """The JSON values of a byte stream of concatenated JSON, in lists of those that became
    whole with each chunk; a value that cannot parse once the stream has ended raises a 400
    :class:`RestError` (after the values before it)."""
    pending = b""
    ended = False
    while True:
        values, pending, failure = _values(pending, ended)
        if values:
            yield values
        if failure is not None:
            raise failure
        if ended:
            return
        try:
            pending += await anext(chunks)
        except StopAsyncIteration:
            ended = True


class Producing:
    """Turns v3 record requests into produced records and their results."""

    def __init__(self, pool: ClientPool, serdes: SchemaSerdes) -> None:
        self.pool = pool
        self.serdes = serdes

    def _encode(self, topic: str, is_key: bool, part: Part) -> tuple[bytes | None, dict[str, Any]]:
        """A part's bytes and its entry in the result (type, size, schema)."""
        plain = part.plain
        if plain is not None:
            data = encode_plain(plain, part.data)
            return data, {"type": plain.value, "size": 0 if data is None else len(data)}
        registered = self.serdes.resolve(topic, is_key, part.schema)
        if part.schema.fmt is not None and part.schema.fmt is not registered.fmt:
            raise RestError(
                SERIALIZATION,
                f"the schema is {registered.fmt.value}, the request says {part.schema.fmt.value}",
            )
        data = None
        if part.data is not None:
            data = self.serdes.serialize(topic, is_key, registered, part.data)
        return data, {
            "type": registered.fmt.value,
            "size": 0 if data is None else len(data),
            "subject": registered.subject,
            "schema_id": registered.schema_id,
            "schema_version": registered.version,
        }

    def needs_registry(self, record: RecordRequest) -> bool:
        """Whether encoding ``record`` may ask the registry (and so must run off the loop)."""
        key, value = record.key, record.value
        return (key is not None and key.plain is None) or (
            value is not None and value.plain is None
        )

    def encode(
        self, topic: str, partitions: int, record: RecordRequest
    ) -> tuple[OutRecord, dict[str, Any]]:
        """The record to produce and the key/value part of its result."""
        if record.partition is not None and record.partition >= partitions:
            raise RestError(
                PARTITION_NOT_FOUND, f"Partition {record.partition} of {topic} not found."
            )
        info: dict[str, Any] = {}
        key = value = None
        if record.key is not None:
            key, info["key"] = self._encode(topic, True, record.key)
        if record.value is not None:
            value, info["value"] = self._encode(topic, False, record.value)
        out = OutRecord(key, value, record.partition, record.headers or None, record.timestamp_ms)
        return out, info

    async def produce(
        self, cluster_id: str, topic: str, values: list[Any]
    ) -> list[bytes | RestError]:
        """Produce the records of ``values`` (JSON); for each, its result as compact JSON
        bytes, or the :class:`RestError` that it met."""
        partitions = await self.pool.partitions_soon(topic)
        records: list[OutRecord] = []
        infos: list[bytes | RestError] = []  # a record's key/value result fields, or its error
        for value in values:
            try:
                quick = _plain_record(value, partitions)
                if quick is not None:
                    records.append(quick[0])
                    infos.append(quick[1])
                    continue
                record = parse_record(value)
                if self.needs_registry(record):
                    out, fields = await run_in_threadpool(self.encode, topic, partitions, record)
                else:
                    out, fields = self.encode(topic, partitions, record)
                records.append(out)
                infos.append(b"," + orjson.dumps(fields)[1:-1] if fields else b"")
            except RestError as error:
                infos.append(error)
        reports = iter(await send(self.pool, topic, records))
        head = b'{"error_code":200,"cluster_id":%s,"topic_name":%s,"partition_id":' % (
            orjson.dumps(cluster_id),
            orjson.dumps(topic),
        )
        results: list[bytes | RestError] = []
        for info in infos:
            if isinstance(info, RestError):
                results.append(info)
                continue
            report = next(reports)
            if isinstance(report, RestError):
                results.append(report)
                continue
            results.append(
                b'%s%d,"offset":%d,"timestamp":"%s"%s}'
                % (head, report.partition, report.offset, _iso_bytes(report.timestamp_ms), info)
            )
        return results


_QUICK_FIELDS = frozenset({"partition_id", "key", "value"})


def _quick_binary(data: Any) -> bytes | None:
    if type(data) is str:
        try:
            return binascii.a2b_base64(data, strict_mode=True)
        except (binascii.Error, ValueError):
            pass
    return encode_plain(EmbeddedFormat.BINARY, data)  # None, or the error that it names


def _quick_string(data: Any) -> bytes | None:
    if type(data) is str:
        return data.encode("utf-8", "surrogatepass")
    return encode_plain(EmbeddedFormat.STRING, data)


_QUICK_ENCODERS: dict[EmbeddedFormat, Callable[[Any], bytes | None]] = {
    EmbeddedFormat.BINARY: _quick_binary,
    EmbeddedFormat.STRING: _quick_string,
    EmbeddedFormat.JSON: functools.partial(encode_plain, EmbeddedFormat.JSON),
}
_QUICK_PARTS = {
    name: (
        _QUICK_ENCODERS[fmt],
        b',"key":{"type":"%s","size":' % fmt.value.encode(),
        b',"value":{"type":"%s","size":' % fmt.value.encode(),
    )
    for name, (_, fmt) in _PLAIN_TYPES.items()
}
"""A plain ``type``'s encoder (no enum in the loop: a member's look-up costs ~0.3 µs) and
the start of its key's and value's result fields."""


def _plain_record(obj: Any, partitions: int) -> tuple[OutRecord, bytes] | None:
    """The usual record made quick: only ``partition_id`` (one the topic has), and a key and
    a value of a plain format given by ``type`` and ``data`` alone; the record to produce and
    its key/value result fields. ``None`` for any other (:func:`parse_record` reads it, and
    says what is wrong with it)."""
    if type(obj) is not dict or not obj.keys() <= _QUICK_FIELDS:
        return None
    partition = obj.get("partition_id")
    if partition is not None and (type(partition) is not int or not 0 <= partition < partitions):
        return None
    key_part = obj.get("key")
    key_quick = None
    if key_part is not None:
        if type(key_part) is not dict or not key_part.keys() <= _TYPE_AND_DATA:
            return None
        kind = key_part.get("type")
        key_quick = _QUICK_PARTS.get(kind) if type(kind) is str else None
        if key_quick is None:
            return None
    value_part = obj.get("value")
    value_quick = None
    if value_part is not None:
        if type(value_part) is not dict or not value_part.keys() <= _TYPE_AND_DATA:
            return None
        kind = value_part.get("type")
        value_quick = _QUICK_PARTS.get(kind) if type(kind) is str else None
        if value_quick is None:
            return None
    info = b""
    key = value = None
    if key_quick is not None:
        key = key_quick[0](key_part.get("data"))  # type: ignore[union-attr]
        info = key_quick[1] + _size(0 if key is None else len(key))
    if value_quick is not None:
        value = value_quick[0](value_part.get("data"))  # type: ignore[union-attr]
        info += value_quick[2] + _size(0 if value is None else len(value))
    return OutRecord(key, value, partition), info


@functools.lru_cache(maxsize=4096)
def _size(size: int) -> bytes:
    return b"%d}" % size


@functools.lru_cache(maxsize=1024)
def _iso_bytes(ms: int) -> bytes:
    return iso_timestamp(ms).encode()
