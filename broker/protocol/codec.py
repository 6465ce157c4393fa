"""Requests in, responses out: the glue between frames and kio's generated message classes.

A request frame (after its 4-byte size) starts with the request header::

    api_key int16 | api_version int16 | correlation_id int32 | client_id nullable string
    [tagged fields, in flexible versions]

kio supplies every message class of every version; this module picks the class for a frame,
reads it, and writes responses (header v0 or v1 as the API's version requires, chosen by kio).
Readers and writers are built once per ``(api_key, version)`` and cached.

A big request's ``records`` (Produce) come out as views of the frame, not copies: kio's native
reader copies every ``bytes`` field, and a Produce request is mostly its records (up to ~1 MB).
Such requests are read by :class:`_ViewReader`, which walks kio's message classes field by field
with kio's own field readers and slices the records out of the frame. When the frame is writable
(the server receives into a ``bytearray``), so are the views, and the produce path patches each
batch's base offset in place before writing it to the log. Small requests, and arrays of small
batches, are read by kio as before (see :data:`VIEWS_FROM`).

Handlers write version-independent code with :func:`make`, which drops keyword arguments the
chosen version does not have and converts milliseconds to the ``timedelta``/``datetime``
values kio expects:

>>> from kio.schema.api_versions.v0.response import ApiVersionsResponse
>>> make(ApiVersionsResponse, error_code=0, api_keys=(), throttle_time=5)
ApiVersionsResponse(error_code=<ErrorCode.none: 0>, api_keys=())
"""

from __future__ import annotations

import datetime
import io
import struct
import types
import typing
from dataclasses import dataclass, fields, is_dataclass
from functools import cache
from typing import Any, TypeVar, cast

from kio._kio_native import (
    get_field_reader,
    read_compact_array_length,
    read_int32,
    read_legacy_array_length,
)
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_unsigned_varint
from kio.static.primitive import TZAware, i32Timedelta, i64Timedelta

from sluice.kio_compat import Reader, read_tagged_fields, tagged_readers

T = TypeVar("T")

_PREFIX = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")
_UTC = datetime.UTC


class MalformedRequestError(ValueError):
    """A frame that cannot be read as the request it claims to be."""


@dataclass(frozen=True, slots=True)
class RequestPrefix:
    """The first 8 bytes of every request header, readable for any API and version."""

    api_key: int
    api_version: int
    correlation_id: int


def read_prefix(frame: bytes | memoryview) -> RequestPrefix:
    if len(frame) < _PREFIX.size:
        raise MalformedRequestError(f"request of {len(frame)} bytes is shorter than a header")
    return RequestPrefix(*_PREFIX.unpack_from(frame, 0))


@cache
def _request_codec(api_key: int, version: int) -> tuple[Any, Any, type[Any], _ViewReader | None]:
    schema = load_request_schema(api_key, version)
    views = _ViewReader(schema) if _holds_records(schema) else None
    return entity_reader(schema.__header_schema__), entity_reader(schema), schema, views


def decode_request(frame: bytes | bytearray | memoryview, prefix: RequestPrefix) -> tuple[Any, Any]:
    """Read the header and body of a request whose version the caller checked is supported.

    Like Kafka, tolerates unknown tagged fields at every level of the body (librdkafka sends
    one in Metadata v9) and ignores bytes after the body. The ``records`` of big batches come
    out as memoryviews of ``frame`` (writable if ``frame`` is), which must not be used after the
    frame's buffer is reused; small ones as ``bytes``.
    """
    header_reader, body_reader, schema, views = _request_codec(prefix.api_key, prefix.api_version)
    # kio's native readers take read-only buffers only; a read-only view copies nothing
    readable = frame if isinstance(frame, bytes) else memoryview(frame).toreadonly()
    try:
        header, offset = header_reader(readable, 0)
        if views is not None and len(frame) >= VIEWS_FROM:
            body, _ = views.read(readable, memoryview(frame), offset)
        else:
            try:
                body, _ = body_reader(readable, offset)
            except KeyError:  # "Unknown tagged field tag", at any depth
                body, _ = _tolerant_reader(schema).read(readable, memoryview(readable), offset)
    except Exception as exc:  # kio raises several types on bad bytes; all mean the same here
        raise MalformedRequestError(
            f"API {prefix.api_key} v{prefix.api_version}: {type(exc).__name__}: {exc}"
        ) from None
    return header, body


# --- records as views of the frame --------------------------------------------------------

VIEWS_FROM = 32 * 1024
"""Average bytes per array item from which records are read as views (see :class:`_ViewReader`)."""

# (read-only frame for kio's readers, the frame to slice records from, offset) -> (value, size)
_ViewFieldReader = typing.Callable[[Any, memoryview, int], tuple[Any, int]]
# kio's own: (read-only frame, offset) -> (value, size)
_KioReader = Reader


def _entity_of_array(annotation: Any) -> type[Any] | None:
    """The message class of a ``tuple[Entity, ...]`` field, else None."""
    args = typing.get_args(annotation)
    if args and is_dataclass(args[0]) and isinstance(args[0], type):
        return args[0]
    return None


def _holds_records(schema: type[Any]) -> bool:
    """Whether a message class has a ``records`` field, at any depth."""
    for f in fields(schema):
        if f.metadata.get("kafka_type") == "records":
            return True
        if (entity := _entity_of_array(f.type)) is not None and _holds_records(entity):
            return True
    return False


class _ViewReader:
    """Reads one message class like kio's native reader, but ``records`` as frame views.

    Fields that hold no records (at any depth) are read by kio's own field readers, so only the
    path down to the records is walked here: for Produce, the request, its topics and their
    partitions. Unknown tagged fields are skipped at every level walked, as Kafka does
    (:func:`sluice.kio_compat.read_tagged_fields`, shared with :mod:`sluice.wire`).

    With ``views=False`` it is the tolerant reader that :func:`decode_request` falls back on
    when kio's reader meets a tagged field it does not know: every array of messages is walked
    (kio refuses unknown tags at any depth) and records are read as ``bytes`` by kio.

    Walking costs a few microseconds of Python per message where kio's native reader costs a
    fraction of one, plus a copy of the records (~0.1 us per KB here, twice: the produce path
    then copies ``bytes`` into a buffer it can patch). So an array whose items average fewer
    than :data:`VIEWS_FROM` bytes (judged from the bytes left in the frame) is read by kio
    whole, records copied: many small batches in one request stay as fast as before, a few big
    ones are not copied. Written by hand for the hot path; the plan is built once per message
    class and version.
    """

    def __init__(self, schema: type[Any], *, views: bool = True) -> None:
        self.schema = schema
        self.flexible = bool(schema.__flexible__)
        # (name, reader, whether the reader takes the writable frame too)
        self.plain: list[tuple[str, Any, bool]] = []
        self.tagged = tagged_readers(schema)
        for f in fields(schema):
            if f.metadata.get("tag") is not None:
                continue
            if views and f.metadata.get("kafka_type") == "records":
                self.plain.append((f.name, _records_field(self.flexible), True))
            elif (entity := _entity_of_array(f.type)) is not None and (
                _holds_records(entity) if views else self.flexible
            ):
                native = get_field_reader(schema, f, False, False) if views else None
                item = _ViewReader(entity, views=views)
                self.plain.append((f.name, _array_field(item, native, self.flexible), True))
            else:
                self.plain.append((f.name, get_field_reader(schema, f, False, False), False))

    def read(self, readable: Any, frame: memoryview, offset: int) -> tuple[Any, int]:
        """The message at ``offset`` and its size in bytes."""
        start = offset
        values: dict[str, Any] = {}
        for name, reader, takes_frame in self.plain:
            if takes_frame:
                values[name], size = reader(readable, frame, offset)
            else:
                values[name], size = reader(readable, offset)
            offset += size
        if self.flexible:
            offset = read_tagged_fields(readable, offset, self.tagged, values)
        return self.schema(**values), offset - start


def _records_field(flexible: bool) -> _ViewFieldReader:
    """Nullable bytes (int32 length, or unsigned varint length + 1 when flexible) as a view."""

    def read(readable: Any, frame: memoryview, offset: int) -> tuple[Any, int]:
        length: int
        if flexible:
            length, size = read_unsigned_varint(readable, offset)
            length -= 1
        else:
            length, size = read_int32(readable, offset)
        if length < 0:
            return None, size
        start = offset + size
        if start + length > len(frame):
            raise ValueError(f"records of {length} bytes run past the end of the request")
        return frame[start : start + length], size + length

    return read


def _array_field(item: _ViewReader, native: _KioReader | None, flexible: bool) -> _ViewFieldReader:
    """An array of messages (int32 count, or unsigned varint count + 1 when flexible): walked
    by ``item``, or read by kio's ``native`` reader (if given) when its items are small on
    average."""
    read_length = read_compact_array_length if flexible else read_legacy_array_length

    def read(readable: Any, frame: memoryview, offset: int) -> tuple[Any, int]:
        count, size = read_length(readable, offset)
        if count is None or count < 0:
            return None, size
        if native is not None and len(frame) - offset < count * VIEWS_FROM:
            return native(readable, offset)
        items = []
        end = offset + size
        for _ in range(count):
            value, size = item.read(readable, frame, end)
            items.append(value)
            end += size
        return tuple(items), end - offset

    return read


_TOLERANT: dict[type[Any], _ViewReader] = {}


def _tolerant_reader(schema: type[Any]) -> _ViewReader:
    if (reader := _TOLERANT.get(schema)) is None:
        reader = _TOLERANT[schema] = _ViewReader(schema, views=False)
    return reader


@cache
def _response_codec(api_key: int, version: int) -> tuple[Any, Any, Any]:
    schema = load_response_schema(api_key, version)
    header_schema = schema.__header_schema__
    return entity_writer(header_schema), entity_writer(schema), header_schema


def encode_response(api_key: int, version: int, correlation_id: int, response: Any) -> bytes:
    """A full response frame: size, response header, body."""
    header_writer, body_writer, header_schema = _response_codec(api_key, version)
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    header_writer(buf, header_schema(correlation_id=correlation_id))
    body_writer(buf, response)
    view = buf.getbuffer()
    _SIZE.pack_into(view, 0, len(view) - 4)
    del view
    return buf.getvalue()


# --- building messages --------------------------------------------------------------------

_Converter = typing.Callable[[Any], Any]


def _to_timedelta(value: Any) -> Any:
    return datetime.timedelta(milliseconds=value) if isinstance(value, int) else value


def _to_datetime(value: Any) -> Any:
    """ms → datetime; a negative value (Kafka's -1, "unknown") → None for a nullable field."""
    if isinstance(value, int):
        return None if value < 0 else datetime.datetime.fromtimestamp(value / 1000, tz=_UTC)
    return value


def _to_required_datetime(value: Any) -> Any:
    """ms → datetime for a field that cannot be null: -1 stays -1 ms on the wire."""
    if isinstance(value, int):
        return datetime.datetime.fromtimestamp(value / 1000, tz=_UTC)
    return value


def _to_error_code(value: Any) -> Any:
    return (
        ErrorCode(value) if isinstance(value, int) and not isinstance(value, ErrorCode) else value
    )


def _converter(annotation: Any) -> _Converter | None:
    options = (
        typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    )
    for option in options:
        if option in (i32Timedelta, i64Timedelta):
            return _to_timedelta
        if option is TZAware:
            return _to_datetime if type(None) in options else _to_required_datetime
        if option is ErrorCode:
            return _to_error_code
    return None


_Plan = tuple[frozenset[str], dict[str, _Converter]]
_PLANS: dict[type[Any], _Plan] = {}


def _plan(cls: type[Any]) -> _Plan:
    """The field names of a message class and the converters its fields need (cached)."""
    if (plan := _PLANS.get(cls)) is not None:
        return plan
    names: set[str] = set()
    converters: dict[str, _Converter] = {}
    for f in fields(cls):
        names.add(f.name)
        if (conv := _converter(f.type)) is not None:
            converters[f.name] = conv
    plan = _PLANS[cls] = frozenset(names), converters
    return plan


def make(cls: type[T], **values: Any) -> T:
    """Build ``cls`` from the values it has fields for; ms ints become timedeltas/datetimes."""
    names, converters = _plan(cls)
    kwargs = {}
    for name, value in values.items():
        if name in names:
            conv = converters.get(name)
            kwargs[name] = conv(value) if conv is not None else value
    return cls(**kwargs)


def has_field(cls: type[Any], name: str) -> bool:
    """Whether this version of a message has field ``name``."""
    return name in _plan(cls)[0]


def millis(value: datetime.timedelta | int) -> int:
    """A kio timedelta (or plain int) as integer milliseconds."""
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)


def nested(schema: type[Any], *path: str) -> type[Any]:
    """The class of a nested field: ``nested(MetadataResponse, "topics", "partitions")``.

    Returns ``type(None)`` when this version has no such field. Cached per schema and path.
    """
    key = (schema, path)
    if (cls := _NESTED.get(key)) is None:
        cls = _NESTED[key] = _nested(schema, path)
    return cls


_NESTED: dict[tuple[type[Any], tuple[str, ...]], type[Any]] = {}


def _nested(schema: type[Any], path: tuple[str, ...]) -> type[Any]:
    cls: Any = schema
    for name in path:
        annotation = next((f.type for f in fields(cls) if f.name == name), None)
        if annotation is None:
            return type(None)
        while typing.get_args(annotation) and not is_dataclass(annotation):
            annotation = typing.get_args(annotation)[0]
        cls = annotation
    return cast(type[Any], cls)
