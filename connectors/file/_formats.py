"""Reading a whole spooled file as records: CSV with a header, JSON lines, or lines.

:func:`read_records` yields ``(schema, value)`` per record and raises :class:`ParseError` with
the 1-based line number at the first thing it cannot read.

- ``csv``: the first row names the columns; each later row becomes a :class:`Struct` of optional
  strings (blank rows are skipped; a row with another number of fields is an error).
- ``json``: each non-blank line is one JSON value (schemaless).
- ``line``: each line is a string (``\\n`` or ``\\r\\n`` removed); a last line without newline
  counts (the file is complete).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "people.csv")
>>> with open(path, "w") as f: _ = f.write("id,name\\n1,Ada\\n2,Alan\\n")
>>> [value.values for _, value in read_records(path, "csv")]
[{'id': '1', 'name': 'Ada'}, {'id': '2', 'name': 'Alan'}]
>>> with open(path, "w") as f: _ = f.write('{"a": 1}\\n{"a": \\n')
>>> list(read_records(path, "json"))
Traceback (most recent call last):
...
sluice.connectors.file._formats.ParseError: line 2: malformed JSON: unexpected end of data: ...
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

import orjson

from sluice.connect import Field, Schema, Struct

__all__ = ["FORMATS", "ParseError", "read_records"]

FORMATS = ("csv", "json", "line")
STRING = Schema("string")


class ParseError(ValueError):
    """A spooled file cannot be read; ``line`` is where (1-based)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


def read_records(
    path: str, format: str, encoding: str = "utf-8", separator: str = ","
) -> Iterator[tuple[Schema | None, Any]]:
    """The records of the file at ``path``; see the module docstring."""
    if format == "csv":
        yield from _csv(path, encoding, separator)
        return
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as error:
                raise ParseError(number, f"not {encoding} text ({error.reason})") from None
            text = text.removesuffix("\n").removesuffix("\r")
            if format == "line":
                yield STRING, text
            elif text.strip():
                try:
                    yield None, orjson.loads(text)
                except orjson.JSONDecodeError as error:
                    raise ParseError(number, f"malformed JSON: {error}") from None


def _header(names: list[str]) -> Schema:
    seen: set[str] = set()
    for column, name in enumerate(names, 1):
        if not name:
            raise ParseError(1, f"column {column} of the header has no name")
        if name in seen:
            raise ParseError(1, f"column {name!r} appears twice in the header")
        seen.add(name)
    return Schema.struct([Field(name, Schema("string", optional=True)) for name in names])


def _csv(path: str, encoding: str, separator: str) -> Iterator[tuple[Schema | None, Any]]:
    with open(path, newline="", encoding=encoding) as handle:
        reader = csv.reader(handle, delimiter=separator, strict=True)
        try:
            names = next(reader, None)
            if names is None:
                return
            schema = _header(names)
            for row in reader:
                if not row:
                    continue
                if len(row) != len(names):
                    raise ParseError(
                        reader.line_num, f"{len(row)} fields, the header has {len(names)}"
                    )
                yield schema, Struct(schema, dict(zip(names, row, strict=True)))
        except csv.Error as error:
            raise ParseError(reader.line_num, f"malformed CSV: {error}") from None
        except UnicodeDecodeError as error:
            raise ParseError(reader.line_num + 1, f"not {encoding} text ({error.reason})") from None
