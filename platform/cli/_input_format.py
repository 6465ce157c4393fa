r"""``sluice produce --format``: how each input line splits into a record, like ``rpk``'s ``-f``.

The format is the mirror of ``sluice consume --format``: what ``consume -f FMT`` prints,
``produce -f FMT`` reads back. Tokens: ``%k`` key, ``%v`` value, ``%T`` timestamp (ms since the
epoch), ``%p`` partition, ``%h`` headers (``k=v,k2=v2``; a name without ``=`` has a null value),
``%%`` a percent sign; ``\t``, ``\n``, ``\\`` … escapes. Text between tokens is a separator: a
token's field ends at the first occurrence of the text that follows it, the last token takes
the rest of the line. The line ending is not part of the line, so a trailing ``\n`` in the
format is allowed and means nothing. Without ``%k`` a record has no key; without ``%v`` its
value is null (a tombstone).

>>> parse = compile_input_format(r"%k\t%v")
>>> parse(b"alice\t{\"amount\": 1}")
(b'alice', b'{"amount": 1}', None, None, None)
>>> compile_input_format("%T %h %v")(b"1700000000000 a=1,b 42")
(None, b'42', None, 1700000000000, [('a', b'1'), ('b', None)])
>>> compile_input_format("%k:%v")(b"no separator here")
Traceback (most recent call last):
...
sluice.cli._input_format.LineError: no ':' after the key
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import typer

from sluice.cli._common import split_format, unescape

__all__ = ["Fields", "LineError", "Parser", "compile_input_format", "key_separator_format"]

Headers = list[tuple[str, str | bytes | None]]
Fields = tuple[bytes | None, bytes | None, int | None, int | None, Headers | None]
"""key, value, partition, timestamp (ms), headers — ``None`` where the format has no token."""
Parser = Callable[[bytes], Fields]

_NAMES = {"k": "key", "v": "value", "T": "timestamp", "p": "partition", "h": "headers"}


class LineError(ValueError):
    """A line does not match the format; the message says what was missing."""


def key_separator_format(separator: str) -> str:
    r"""The format that ``--key-separator SEP`` stands for: ``%kSEP%v``.

    >>> key_separator_format(":"), key_separator_format("%")
    ('%k:%v', '%k%%%v')
    """
    return f"%k{separator.replace('%', '%%')}%v"


def _parts(text: str) -> list[str | bytes]:
    """The format as tokens (one-letter ``str``) and separators (``bytes``)."""
    text = unescape(text)
    if text.endswith("\n"):
        text = text[:-1]
    if "\n" in text:
        raise typer.BadParameter(
            r"a record is one line: \n may only end the format", param_hint="--format"
        )
    parts = split_format(text, _NAMES, "when producing: %k %v %T %p %h %%")
    tokens = [part for part in parts if isinstance(part, str)]
    for before, after in itertools.pairwise(parts):
        if isinstance(before, str) and isinstance(after, str):
            raise typer.BadParameter(
                f"%{before} and %{after} need a separator between them", param_hint="--format"
            )
    for token in tokens:
        if tokens.count(token) > 1:
            raise typer.BadParameter(f"%{token} appears twice", param_hint="--format")
    if not tokens:
        raise typer.BadParameter("the format has no token (%k, %v …)", param_hint="--format")
    return parts


def _number(token: str, raw: bytes) -> int:
    try:
        number = int(raw)
    except ValueError:
        text = raw.decode(errors="replace")
        raise LineError(f"{_NAMES[token]} {text!r} is not a number") from None
    if number < 0:
        raise LineError(f"{_NAMES[token]} {number} is negative")
    return number


def _headers(raw: bytes) -> Headers:
    headers: Headers = []
    for item in raw.split(b",") if raw else ():
        name, sep, value = item.partition(b"=")
        headers.append((name.decode(errors="replace"), value if sep else None))
    return headers


def compile_input_format(text: str) -> Parser:
    """A function from a line (without its ending) to the record's fields; it raises
    :class:`LineError` for a line that does not match. A bad format is a usage error."""
    parts = _parts(text)
    if parts == ["v"]:  # the default: the line is the value
        return lambda line: (None, line, None, None, None)
    head = parts[0] if isinstance(parts[0], bytes) else b""
    tail = parts[-1] if isinstance(parts[-1], bytes) else b""
    body = parts[1 if head else 0 : len(parts) - 1 if tail else len(parts)]
    steps: list[tuple[str, bytes | None]] = []  # token, separator that ends its field
    for i, part in enumerate(body):
        if isinstance(part, str):
            after = body[i + 1] if i + 1 < len(body) else None
            steps.append((part, after if isinstance(after, bytes) else None))

    def parse(line: bytes) -> Fields:
        if head:
            if not line.startswith(head):
                raise LineError(f"the line does not start with {head.decode()!r}")
            line = line[len(head) :]
        if tail:
            if not line.endswith(tail):
                raise LineError(f"the line does not end with {tail.decode()!r}")
            line = line[: len(line) - len(tail)]
        key: bytes | None = None
        value: bytes | None = None
        partition: int | None = None
        timestamp: int | None = None
        headers: Headers | None = None
        at = 0
        for token, separator in steps:
            if separator is None:
                raw = line[at:]
            else:
                end = line.find(separator, at)
                if end < 0:
                    raise LineError(f"no {separator.decode()!r} after the {_NAMES[token]}")
                raw = line[at:end]
                at = end + len(separator)
            if token == "k":
                key = raw
            elif token == "v":
                value = raw
            elif token == "h":
                headers = _headers(raw)
            elif token == "p":
                partition = _number(token, raw)
            else:
                timestamp = _number(token, raw)
        return key, value, partition, timestamp, headers

    return parse
