"""Avro's binary encoding, compiled once per schema: the hot path of Sluice's Avro serde and
Connect's Avro converter.

Byte layout (the Avro 1.11 specification, "Binary Encoding")::

    null            nothing
    boolean         one byte, 0 or 1
    int, long       zig-zag varint: (n << 1) ^ (n >> 63), 7 bits a byte, low group first,
                    the high bit set on every byte but the last
    float, double   4 / 8 bytes, IEEE 754 little-endian
    bytes, string   a long length, then the bytes (a string's in UTF-8)
    fixed           its size of bytes
    enum            a long: the symbol's position
    union           a long: the branch's position, then the value of that branch
    array, map      blocks: a long count, that many items (a map's: string key then value), and
                    a last block of count 0; fastavro writes one block (a negative count, which
                    also gives the block's byte size, is read)
    record          its fields in order, nothing between them

:class:`AvroCodec` parses a schema with fastavro (``parse_schema``: names, defaults, logical
types checked as every Confluent Python client does) and generates Python source for it: a
record's fields are encoded inline (no call or type dispatch a field, varints of small numbers
from a table), arrays, maps and recursive records through functions of their own. Logical types
are converted with fastavro's own functions (``timestamp-millis`` ↔ aware ``datetime``,
``decimal`` ↔ ``Decimal``…). The generated code takes the common case only — a value whose Python
type is exactly the schema's (``int`` in range, ``float``, ``str``, ``bytes``, ``bool``, ``dict``
with every field, ``list``), and unions of ``null`` and one type — and hands anything else to
fastavro's ``schemaless_writer`` / ``schemaless_reader``, which then gives its result or its
error: the bytes are fastavro's (so confluent-kafka's ``AvroSerializer``'s) value for value,
as a Hypothesis round trip against fastavro on random schemas checks. A schema with a union of
several types is encoded by fastavro alone (its branch choice is fastavro's rule).

Not thread-safe to build; once built, a codec is only read (safe from any thread).

>>> codec = AvroCodec({"type": "record", "name": "P", "fields": [
...     {"name": "id", "type": "long"}, {"name": "tag", "type": ["null", "string"]}]})
>>> codec.encode({"id": -3, "tag": "a"})
b'\\x05\\x02\\x02a'
>>> codec.decode(b"\\x05\\x02\\x02a")
{'id': -3, 'tag': 'a'}
>>> codec.encode({"id": "three", "tag": None})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
TypeError: an integer is required on field id
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable
from typing import Any

from fastavro import parse_schema, schemaless_reader, schemaless_writer
from fastavro.logical_readers import LOGICAL_READERS
from fastavro.logical_writers import LOGICAL_WRITERS

__all__ = ["AvroCodec", "decode_long", "encode_long"]

Encoder = Callable[[Any], bytes]
Decoder = Callable[[bytes, int], Any]

_PRIMITIVES = frozenset(["null", "boolean", "int", "long", "float", "double", "bytes", "string"])
_INT_RANGE = {"int": (-(1 << 31), 1 << 31), "long": (-(1 << 63), 1 << 63)}
_TABLE_HALF = 1 << 13  # varints of -8192..8191 (one or two bytes) come from a table


class _Miss(Exception):  # noqa: N818 - not an error: a signal
    """The generated code does not take this value: fastavro does."""


_MISS = _Miss()


def _varint(z: int) -> bytes:
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_UNSIGNED = tuple(_varint(z) for z in range(1 << 14))  # the varints of 0..16383
_GROUPS = tuple(bytes(((k & 0x7F) | 0x80, (k >> 7) | 0x80)) for k in range(1 << 14))


def encode_long(n: int) -> bytes:
    """*n* as Avro's zig-zag varint (14 bits at a time, from tables).

    >>> encode_long(0), encode_long(-1), encode_long(64), encode_long(-65)
    (b'\\x00', b'\\x01', b'\\x80\\x01', b'\\x81\\x01')
    >>> encode_long(1 << 40) == _varint(1 << 41)
    True
    """
    z = (n << 1) ^ (n >> 63)
    if z < 0x4000:
        return _UNSIGNED[z]
    if z < 0x10000000:
        return _GROUPS[z & 0x3FFF] + _UNSIGNED[z >> 14]
    if z < 0x40000000000:  # 42 bits: timestamps in milliseconds
        return _GROUPS[z & 0x3FFF] + _GROUPS[(z >> 14) & 0x3FFF] + _UNSIGNED[z >> 28]
    parts = []
    while z >= 0x4000:
        parts.append(_GROUPS[z & 0x3FFF])
        z >>= 14
    parts.append(_UNSIGNED[z])
    return b"".join(parts)


def decode_long(data: bytes, pos: int) -> tuple[int, int]:
    """``(the zig-zag varint at pos, the offset after it)``.

    >>> decode_long(b"\\x81\\x01", 0)
    (-65, 2)
    """
    byte = data[pos]  # IndexError past the end
    z = byte & 0x7F
    shift = 7
    while byte > 0x7F:
        pos += 1
        byte = data[pos]
        z |= (byte & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise ValueError("Avro varint longer than 10 bytes")
    return (z >> 1) ^ -(z & 1), pos + 1


def _decode_size(data: bytes, pos: int) -> tuple[int, int]:
    """A length or position: a long that must not be negative."""
    n, pos = decode_long(data, pos)
    if n < 0:
        raise ValueError(f"negative Avro length {n}")
    return n, pos


_VARINTS = tuple(_UNSIGNED[(n << 1) ^ (n >> 63)] for n in range(-_TABLE_HALF, _TABLE_HALF))
_SMALL = tuple((b >> 1) ^ -(b & 1) for b in range(0x80))  # one-byte varints, by byte


class _Generator:
    """Python source for a parsed schema: encoders ``f(value) -> bytes`` and decoders
    ``f(data, pos) -> (value, pos)``, sharing one namespace."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named
        self.names: dict[str, Any] = {
            "MISS": _MISS,
            "T": _VARINTS,
            "G": _GROUPS,
            "U": _UNSIGNED,
            "S": _SMALL,
            "zz": encode_long,
            "rl": decode_long,
            "rs": _decode_size,
            "pack_f": struct.Struct("<f").pack,
            "pack_d": struct.Struct("<d").pack,
            "unpack_f": struct.Struct("<f").unpack_from,
            "unpack_d": struct.Struct("<d").unpack_from,
            "join": b"".join,
        }
        self.counter = 0
        self.recursive: dict[str, str] = {}  # record name -> function name (encoders)
        self.recursive_read: dict[str, str] = {}

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def constant(self, value: Any, prefix: str = "c") -> str:
        name = self.fresh(prefix)
        self.names[name] = value
        return name

    def resolve(self, node: Any) -> Any:
        if isinstance(node, str) and node not in _PRIMITIVES:
            return self.named[node]
        if isinstance(node, dict) and isinstance(node.get("type"), dict | list):
            return node["type"]
        return node

    def exec(self, lines: list[str], name: str) -> Any:
        exec("\n".join(lines), self.names)  # our own source: names are repr()s or generated
        return self.names[name]

    # -- encoding --------------------------------------------------------------------------

    def encoder(self, node: Any) -> Encoder:
        name = self.fresh("enc")
        lines = [f"def {name}(v):"]
        parts = self.emit(node, "v", lines, "    ", stack=())
        lines.append(f"    return join(({', '.join(parts)},))" if parts else "    return b''")
        encoder: Encoder = self.exec(lines, name)
        return encoder

    def emit(
        self, node: Any, var: str, lines: list[str], ind: str, stack: tuple[str, ...]
    ) -> list[str]:
        """Lines that check *var* and set the part variables whose bytes are its encoding."""
        node = self.resolve(node)
        kind = (
            node if isinstance(node, str) else node.get("type") if isinstance(node, dict) else None
        )
        if isinstance(node, list):
            return self.emit_union(node, var, lines, ind, stack)
        if isinstance(node, dict) and "logicalType" in node and kind in _PRIMITIVES | {"fixed"}:
            prepare = LOGICAL_WRITERS.get(f"{kind}-{node['logicalType']}")
            if prepare is not None:
                fn, schema = self.constant(prepare, "lw"), self.constant(node, "s")
                lines.append(f"{ind}{var} = {fn}({var}, {schema})")
        p = self.fresh("p")
        if kind == "null":
            lines.append(f"{ind}if {var} is not None: raise MISS")
            return []
        if kind == "boolean":
            lines.append(f"{ind}if {var} is True: {p} = b'\\x01'")
            lines.append(f"{ind}elif {var} is False: {p} = b'\\x00'")
            lines.append(f"{ind}else: raise MISS")
            return [p]
        if kind in _INT_RANGE:
            low, high = _INT_RANGE[kind]
            lines.append(f"{ind}if type({var}) is not int or not {low} <= {var} < {high}:")
            lines.append(f"{ind}    raise MISS")
            z = self.fresh("z")
            lines += [
                f"{ind}if -{_TABLE_HALF} <= {var} < {_TABLE_HALF}:",
                f"{ind}    {p} = T[{var} + {_TABLE_HALF}]",
                f"{ind}else:",  # two or three 14-bit groups inline (ids, timestamps), else a call
                f"{ind}    {z} = ({var} << 1) ^ ({var} >> 63)",
                f"{ind}    if {z} < 0x10000000:",
                f"{ind}        {p} = G[{z} & 0x3FFF] + U[{z} >> 14]",
                f"{ind}    elif {z} < 0x40000000000:",
                f"{ind}        {p} = G[{z} & 0x3FFF] + G[({z} >> 14) & 0x3FFF] + U[{z} >> 28]",
                f"{ind}    else:",
                f"{ind}        {p} = zz({var})",
            ]
            return [p]
        if kind in ("float", "double"):
            lines.append(f"{ind}if type({var}) is not float and type({var}) is not int:")
            lines.append(f"{ind}    raise MISS")
            lines.append(f"{ind}{p} = pack_{kind[0]}({var})")
            return [p]
        if kind in ("string", "bytes"):
            exact = "str" if kind == "string" else "bytes"
            lines.append(f"{ind}if type({var}) is not {exact}: raise MISS")
            body = self.fresh("b")
            lines.append(
                f"{ind}{body} = {var}.encode()" if kind == "string" else f"{ind}{body} = {var}"
            )
            lines.append(
                f"{ind}{p} = T[len({body}) + {_TABLE_HALF}] if len({body}) < {_TABLE_HALF}"
                f" else zz(len({body}))"
            )
            return [p, body]
        if kind == "fixed":
            lines.append(f"{ind}if type({var}) is not bytes or len({var}) != {int(node['size'])}:")
            lines.append(f"{ind}    raise MISS")
            return [var]
        if kind == "enum":
            symbols = {s: encode_long(i) for i, s in enumerate(node["symbols"])}
            table = self.constant(symbols, "en")
            lines.append(f"{ind}if type({var}) is not str: raise MISS")
            lines.append(f"{ind}{p} = {table}[{var}]")  # KeyError: fastavro's error
            return [p]
        if kind in ("array", "map"):
            fn = self.constant(None, "coll")
            self.names[fn] = self.collection_encoder(node)
            lines.append(f"{ind}{p} = {fn}({var})")
            return [p]
        if kind in ("record", "error"):
            full = node["name"]
            if full in stack:
                fn = self.record_function(full)
                lines.append(f"{ind}{p} = {fn}({var})")
                return [p]
            lines.append(f"{ind}if type({var}) is not dict: raise MISS")
            parts: list[str] = []
            for field in node["fields"]:
                f = self.fresh("f")
                lines.append(
                    f"{ind}{f} = {var}[{field['name']!r}]"
                )  # KeyError: fastavro's defaults
                parts += self.emit(field["type"], f, lines, ind, (*stack, full))
            return parts
        raise ValueError(f"Avro type {kind!r} is not known")

    def emit_union(
        self, branches: list[Any], var: str, lines: list[str], ind: str, stack: tuple[str, ...]
    ) -> list[str]:
        null = [i for i, b in enumerate(branches) if self.resolve(b) == "null"]
        other = [i for i in range(len(branches)) if i not in null]
        if len(branches) != 2 or len(null) != 1:
            raise _Miss  # several types: fastavro's branch choice, for the whole schema
        p = self.fresh("p")
        lines.append(f"{ind}if {var} is None:")
        lines.append(f"{ind}    {p} = {encode_long(null[0])!r}")
        lines.append(f"{ind}else:")
        parts = self.emit(branches[other[0]], var, lines, ind + "    ", stack)
        lines.append(f"{ind}    {p} = join(({encode_long(other[0])!r}, {', '.join(parts)}))")
        return [p]

    def collection_encoder(self, node: Any) -> Encoder:
        kind = node["type"]
        item = self.encoder(node["items"] if kind == "array" else node["values"])
        if kind == "array":

            def array(v: Any) -> bytes:
                if type(v) is not list:
                    raise _MISS
                if not v:
                    return b"\x00"
                return b"".join([encode_long(len(v)), *map(item, v), b"\x00"])

            return array

        def string(key: Any) -> bytes:
            if type(key) is not str:
                raise _MISS
            body = key.encode()
            return encode_long(len(body)) + body

        def map_(v: Any) -> bytes:
            if type(v) is not dict:
                raise _MISS
            if not v:
                return b"\x00"
            parts = [encode_long(len(v))]
            for key, value in v.items():
                parts.append(string(key))
                parts.append(item(value))
            parts.append(b"\x00")
            return b"".join(parts)

        return map_

    def record_function(self, full: str) -> str:
        found = self.recursive.get(full)
        if found is None:
            found = self.recursive[full] = self.fresh("rec")
            self.names[found] = None
            lines = [f"def {found}(v):"]
            parts = self.emit(self.named[full], "v", lines, "    ", stack=())
            lines.append(f"    return join(({', '.join(parts)},))" if parts else "    return b''")
            self.exec(lines, found)
        return found

    # -- decoding --------------------------------------------------------------------------

    def decoder(self, node: Any) -> Decoder:
        """``f(data, pos) -> (value, pos)``."""
        name = self.fresh("dec")
        lines = [f"def {name}(data, pos):"]
        value = self.read(node, lines, "    ", stack=())
        lines.append(f"    return {value}, pos")
        decoder: Decoder = self.exec(lines, name)
        return decoder

    def read_long(self, target: str, lines: list[str], ind: str, size: bool = False) -> None:
        b = self.fresh("x")
        lines.append(f"{ind}{b} = data[pos]")
        if size:  # a length or position: one byte of an even number (not negative)
            lines.append(f"{ind}if {b} < 128 and not {b} & 1:")
            lines.append(f"{ind}    {target} = {b} >> 1")
            lines.append(f"{ind}    pos += 1")
            lines.append(f"{ind}else:")
            lines.append(f"{ind}    {target}, pos = rs(data, pos)")
            return
        lines.append(f"{ind}if {b} < 128:")
        lines.append(f"{ind}    {target} = S[{b}]")
        lines.append(f"{ind}    pos += 1")
        lines.append(f"{ind}else:")
        lines.append(f"{ind}    {target}, pos = rl(data, pos)")

    def read(self, node: Any, lines: list[str], ind: str, stack: tuple[str, ...]) -> str:
        """Lines that read a value of *node* at ``pos``; returns the expression of the value."""
        node = self.resolve(node)
        kind = (
            node if isinstance(node, str) else node.get("type") if isinstance(node, dict) else None
        )
        v = self.fresh("v")
        if isinstance(node, list):
            null = [i for i, b in enumerate(node) if self.resolve(b) == "null"]
            if len(node) != 2 or len(null) != 1:
                raise _Miss
            index = self.fresh("i")
            self.read_long(index, lines, ind, size=True)
            lines.append(f"{ind}if {index} == {null[0]}:")
            lines.append(f"{ind}    {v} = None")
            lines.append(f"{ind}elif {index} == {1 - null[0]}:")
            inner = self.read(node[1 - null[0]], lines, ind + "    ", stack)
            lines.append(f"{ind}    {v} = {inner}")
            lines.append(f"{ind}else:")
            lines.append(f"{ind}    raise MISS")
            return v
        if kind == "null":
            return "None"
        if kind == "boolean":
            lines.append(f"{ind}{v} = data[pos] != 0")
            lines.append(f"{ind}pos += 1")
        elif kind in _INT_RANGE:
            self.read_long(v, lines, ind)
        elif kind in ("float", "double"):
            width = 4 if kind == "float" else 8
            lines.append(f"{ind}{v} = unpack_{kind[0]}(data, pos)[0]")
            lines.append(f"{ind}pos += {width}")
        elif kind in ("string", "bytes"):
            n = self.fresh("n")
            self.read_long(n, lines, ind, size=True)
            end = f"pos + {n}"
            if kind == "string":
                lines.append(f"{ind}{v} = data[pos:{end}].decode()")
            else:
                lines.append(f"{ind}{v} = data[pos:{end}]")
            lines.append(f"{ind}pos += {n}")
        elif kind == "fixed":
            size = int(node["size"])
            lines.append(f"{ind}{v} = data[pos:pos + {size}]")
            lines.append(f"{ind}pos += {size}")
        elif kind == "enum":
            symbols = self.constant(tuple(node["symbols"]), "sy")
            i = self.fresh("i")
            self.read_long(i, lines, ind, size=True)
            lines.append(f"{ind}{v} = {symbols}[{i}]")  # IndexError: fastavro's error
        elif kind in ("array", "map"):
            fn = self.constant(self.collection_decoder(node), "coll")
            lines.append(f"{ind}{v}, pos = {fn}(data, pos)")
        elif kind in ("record", "error"):
            full = node["name"]
            if full in stack:
                fn = self.record_reader(full)
                lines.append(f"{ind}{v}, pos = {fn}(data, pos)")
                return v
            items = []
            for field in node["fields"]:
                value = self.read(field["type"], lines, ind, (*stack, full))
                items.append(f"{field['name']!r}: {value}")
            lines.append(f"{ind}{v} = {{{', '.join(items)}}}")
        else:
            raise ValueError(f"Avro type {kind!r} is not known")
        if isinstance(node, dict) and "logicalType" in node:
            reader = LOGICAL_READERS.get(f"{kind}-{node['logicalType']}")
            if reader is not None:
                fn, schema = self.constant(reader, "lr"), self.constant(node, "s")
                lines.append(f"{ind}{v} = {fn}({v}, {schema}, None)")
        return v

    def collection_decoder(self, node: Any) -> Decoder:
        kind = node["type"]
        item = self.decoder(node["items"] if kind == "array" else node["values"])

        def blocks(data: bytes, pos: int) -> tuple[Any, int]:
            out: Any = [] if kind == "array" else {}
            while True:
                count, pos = decode_long(data, pos)
                if count == 0:
                    return out, pos
                if count < 0:
                    count = -count
                    _, pos = decode_long(data, pos)  # the block's size in bytes
                for _ in range(count):
                    if kind == "array":
                        value, pos = item(data, pos)
                        out.append(value)
                    else:
                        n, pos = _decode_size(data, pos)
                        key = data[pos : pos + n].decode()
                        value, pos = item(data, pos + n)
                        out[key] = value

        return blocks

    def record_reader(self, full: str) -> str:
        found = self.recursive_read.get(full)
        if found is None:
            found = self.recursive_read[full] = self.fresh("rrec")
            self.names[found] = None
            lines = [f"def {found}(data, pos):"]
            value = self.read(self.named[full], lines, "    ", stack=())
            lines.append(f"    return {value}, pos")
            self.exec(lines, found)
        return found


class AvroCodec:
    """Avro's binary encoding of one schema (see the module docstring): ``encode`` and
    ``decode`` give fastavro's ``schemaless_writer`` / ``schemaless_reader`` results.

    *schema* is the schema's text or its JSON form; *named* maps full names to the schemas
    this one refers to (a registry's references), as fastavro's ``parse_schema`` takes them.
    """

    def __init__(
        self, schema: str | dict[str, Any] | list[Any], named: dict[str, Any] | None = None
    ) -> None:
        parsed_from: Any = schema
        if isinstance(schema, str) and schema.lstrip()[:1] in ("{", "[", '"'):
            parsed_from = json.loads(schema)  # the text of a schema, not a type's name
        self.schema: Any = parse_schema(parsed_from, named_schemas=named or {})
        """fastavro's parsed schema."""
        names = dict(named or {})
        if isinstance(self.schema, dict):
            names.update(self.schema.get("__named_schemas", {}))
        generator = _Generator(names)
        self._fast_encode: Encoder | None
        self._fast_decode: Decoder | None
        try:
            self._fast_encode = generator.encoder(self.schema)
            self._fast_decode = generator.decoder(self.schema)
        except _Miss:  # a union of several types
            self._fast_encode = self._fast_decode = None
        self.compiled = self._fast_encode is not None
        """Whether values go through generated code (else through fastavro alone)."""
        self._buffer = io.BytesIO()

    def encode(self, datum: Any) -> bytes:
        """The Avro binary encoding of *datum* (fastavro's error when it is not a value of
        the schema)."""
        fast = self._fast_encode
        if fast is not None:
            try:
                return fast(datum)
            except Exception:  # not the common case: fastavro decides
                pass
        return self._slow_encode(datum)

    def encode_exact(self, datum: Any) -> bytes | None:
        """The encoding of *datum* if the generated code takes it as it is, else ``None`` (no
        fastavro fallback: what it would accept — defaults for missing fields, a union branch
        by tuple — is left to the caller)."""
        fast = self._fast_encode
        if fast is None:
            return None
        try:
            return fast(datum)
        except Exception:  # whatever it is, the caller's fallback
            return None

    def _slow_encode(self, datum: Any) -> bytes:
        buffer = io.BytesIO()
        schemaless_writer(buffer, self.schema, datum)
        return buffer.getvalue()

    def decode(self, data: bytes, offset: int = 0, reader: Any = None) -> Any:
        """The value encoded in *data* from *offset* on (bytes after it are ignored, as
        fastavro does). *reader* is fastavro's parsed reader schema, for schema resolution."""
        fast = self._fast_decode
        if fast is not None and reader is None:
            try:
                value, end = fast(data, offset)
                if end <= len(data):
                    return value
            except Exception:  # bad bytes: fastavro's error
                pass
        buffer = io.BytesIO(data)
        buffer.seek(offset)
        return schemaless_reader(buffer, self.schema, reader)
