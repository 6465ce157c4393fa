"""Java ``SimpleDateFormat`` patterns (``yyyy-MM-dd'T'HH:mm:ss.SSSZ``), always in UTC.

Kafka's TimestampConverter and TimestampRouter take such patterns; this module formats and parses
epoch milliseconds with them. Letters: ``G y M L d D E u a H k K h m s S z Z X``; text in single
quotes is literal (``''`` is a quote). Parsing reads from the start of the text and ignores what
follows the pattern, as ``DateFormat.parse`` does; a two-digit year lands in 1969–2068.

>>> fmt = JavaDateFormat("yyyyMMdd HH:mm:ss.SSS 'UTC'")
>>> fmt.format(1_700_000_000_123)
'20231114 22:13:20.123 UTC'
>>> fmt.parse('20231114 22:13:20.123 UTC')
1700000000123
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from sluice.connect.api.logical import datetime_to_millis, millis_to_datetime

__all__ = ["JavaDateFormat"]

_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|[^A-Za-z']+")
_MONTHS = [dt.date(2001, m, 1).strftime("%B") for m in range(1, 13)]
_DAYS = [dt.date(2001, 1, d).strftime("%A") for d in range(1, 8)]  # 2001-01-01 was a Monday
_NUMERIC = set("yMLdDuHkKhmsS")


def _pad(number: int, count: int) -> str:
    return f"{number:0{count}d}"


def _text(value: str, count: int) -> str:
    return value if count >= 4 else value[:3]


_FORMATTERS: dict[str, Callable[[dt.datetime, int], str]] = {
    "G": lambda d, n: "AD" if d.year > 0 else "BC",
    "y": lambda d, n: _pad(d.year % 100, 2) if n == 2 else _pad(d.year, n),
    "M": lambda d, n: _pad(d.month, n) if n < 3 else _text(_MONTHS[d.month - 1], n),
    "L": lambda d, n: _pad(d.month, n) if n < 3 else _text(_MONTHS[d.month - 1], n),
    "d": lambda d, n: _pad(d.day, n),
    "D": lambda d, n: _pad(d.timetuple().tm_yday, n),
    "E": lambda d, n: _text(_DAYS[d.weekday()], n),
    "u": lambda d, n: _pad(d.isoweekday(), n),
    "a": lambda d, n: "AM" if d.hour < 12 else "PM",
    "H": lambda d, n: _pad(d.hour, n),
    "k": lambda d, n: _pad(d.hour or 24, n),
    "K": lambda d, n: _pad(d.hour % 12, n),
    "h": lambda d, n: _pad(d.hour % 12 or 12, n),
    "m": lambda d, n: _pad(d.minute, n),
    "s": lambda d, n: _pad(d.second, n),
    "S": lambda d, n: _pad(d.microsecond // 1000, n),
    "z": lambda d, n: "Coordinated Universal Time" if n >= 4 else "UTC",
    "Z": lambda d, n: "+0000",
    "X": lambda d, n: "Z",
}

_ZONE = (
    r"(?P<{}>Z|[+-]\d{{2}}:?(?:\d{{2}})?|UTC|GMT(?:[+-]\d{{1,2}}:?\d{{2}})?"
    r"|Coordinated Universal Time)"
)


class JavaDateFormat:
    """A ``SimpleDateFormat`` pattern in UTC; ``ValueError`` for letters it does not know."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._tokens: list[tuple[str, int] | str] = []  # (letter, count) or literal text
        position = 0
        while position < len(pattern):
            match = _TOKEN.match(pattern, position)
            assert match is not None
            text = match.group(0)
            position = match.end()
            if text.startswith("'"):
                if text != "'":
                    self._tokens.append("'" if text == "''" else text[1:-1].replace("''", "'"))
                    continue
                raise ValueError(f"Unterminated quote in pattern {pattern!r}")
            if match.group(1):
                if text[0] not in _FORMATTERS:
                    raise ValueError(f"Illegal pattern character '{text[0]}'")
                self._tokens.append((text[0], len(text)))
            else:
                self._tokens.append(text)
        self._regex = re.compile(self._parse_regex(), re.IGNORECASE)

    def format(self, millis: int) -> str:
        """Epoch milliseconds as text."""
        moment = millis_to_datetime(millis)
        return "".join(
            token if isinstance(token, str) else _FORMATTERS[token[0]](moment, token[1])
            for token in self._tokens
        )

    def _parse_regex(self) -> str:
        parts = []
        for i, token in enumerate(self._tokens):
            if isinstance(token, str):
                parts.append(re.escape(token))
                continue
            letter, count = token
            group = f"{letter}{i}"
            after = self._tokens[i + 1] if i + 1 < len(self._tokens) else ""
            adjacent = not isinstance(after, str) and after[0] in _NUMERIC
            if letter in "ML" and count >= 3:
                parts.append(f"(?P<{group}>[A-Za-z]+)")
            elif letter in _NUMERIC:
                width = 2 if letter == "y" and count == 2 else count
                parts.append(f"(?P<{group}>\\d{{{width}}})" if adjacent else f"(?P<{group}>\\d+)")
            elif letter in "zZX":
                parts.append(_ZONE.format(group))
            else:  # G, E, a: words
                parts.append(f"(?P<{group}>[A-Za-z]+)")
        return "".join(parts)

    def parse(self, text: str) -> int:
        """Text as epoch milliseconds; ``ValueError`` when it does not match the pattern."""
        match = self._regex.match(text)
        if match is None:
            raise ValueError(f"value ({text}) does not match pattern ({self.pattern})")
        fields = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
        pm: bool | None = None
        offset = dt.timedelta(0)
        for i, token in enumerate(self._tokens):
            if isinstance(token, str):
                continue
            letter, count = token
            value = match.group(f"{letter}{i}")
            if letter in "ML" and count >= 3:
                months = [m.lower() for m in _MONTHS]
                short = [m[:3] for m in months]
                name = value.lower()
                if name not in months and name not in short:
                    raise ValueError(f"value ({text}) has an unknown month {value!r}")
                fields["M"] = (months.index(name) if name in months else short.index(name)) + 1
            elif letter == "a":
                pm = value.upper() == "PM"
            elif letter in "zZX":
                offset = _offset(value)
            elif letter in _NUMERIC:
                number = int(value)
                if letter == "y" and count == 2 and len(value) == 2:
                    number += 2000 if number < 69 else 1900
                key = {"L": "M", "k": "H", "K": "H", "h": "H"}.get(letter, letter)
                if (letter, number) in (("k", 24), ("h", 12)):
                    number = 0
                fields[key] = number
        if pm is not None and fields["H"] < 12 and pm:
            fields["H"] += 12
        try:
            day = dt.datetime(fields["y"], fields["M"], fields["d"], tzinfo=dt.UTC)
        except ValueError as error:
            raise ValueError(f"value ({text}) is not a valid date: {error}") from None
        moment = day + dt.timedelta(
            hours=fields["H"], minutes=fields["m"], seconds=fields["s"], milliseconds=fields["S"]
        )
        return datetime_to_millis(moment - offset)


def _offset(zone: str) -> dt.timedelta:
    zone = zone.upper()
    if zone in ("Z", "UTC", "GMT", "COORDINATED UNIVERSAL TIME"):
        return dt.timedelta(0)
    digits = zone.removeprefix("GMT").replace(":", "")
    sign = -1 if digits[0] == "-" else 1
    hours, minutes = (digits[1:-2], digits[-2:]) if len(digits) > 3 else (digits[1:], "0")
    return sign * dt.timedelta(hours=int(hours), minutes=int(minutes))
