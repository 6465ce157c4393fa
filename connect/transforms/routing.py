"""``RegexRouter``: rename topics with a regular expression, as Kafka's ``RegexRouter`` does.

When ``regex`` matches the whole topic name, the topic becomes ``replacement``, where ``$1`` (or
``${name}``) stands for a captured group and a backslash escapes the next character (Java's
``Matcher.replaceFirst``). Other topics pass unchanged. ``regex`` is a Java regular expression;
``(?<name>...)`` groups work.

>>> from sluice.connect.api.data import ConnectRecord
>>> router = RegexRouter()
>>> router.configure({"regex": "(.*)-(staging|prod)", "replacement": "$2.$1"})
>>> router.apply(ConnectRecord("orders-prod", 0, None, None, None, "x")).topic
'prod.orders'
"""

from __future__ import annotations

import re

from sluice.connect.api.transform import (
    ConfigKey,
    R,
    Settings,
    Transformation,
    compile_java_regex,
)
from sluice.errors import ConfigError

__all__ = ["RegexRouter", "java_replacement"]


def java_replacement(replacement: str, pattern: re.Pattern[str]) -> list[str | int | tuple[str]]:
    """``replacement`` in Java's syntax as literal text, group numbers and ``(name,)`` groups;
    ``ValueError`` for a reference the pattern cannot satisfy."""
    parts: list[str | int | tuple[str]] = []
    i, n = 0, len(replacement)
    while i < n:
        char = replacement[i]
        if char == "\\":
            if i + 1 >= n:
                raise ValueError("character to be escaped is missing")
            parts.append(replacement[i + 1])
            i += 2
        elif char == "$":
            i += 1
            if i < n and replacement[i] == "{":
                end = replacement.find("}", i)
                name = replacement[i + 1 : end] if end > 0 else ""
                if not name or name not in pattern.groupindex:
                    raise ValueError(f"No group with name {{{name}}}")
                parts.append((name,))
                i = end + 1
            elif i < n and replacement[i].isdigit():
                number = int(replacement[i])
                i += 1
                while i < n and replacement[i].isdigit():
                    wider = number * 10 + int(replacement[i])
                    if wider > pattern.groups:
                        break
                    number, i = wider, i + 1
                if number > pattern.groups:
                    raise ValueError(f"No group {number}")
                parts.append(number)
            else:
                raise ValueError("Illegal group reference")
        else:
            parts.append(char)
            i += 1
    return parts


def _expand(parts: list[str | int | tuple[str]], match: re.Match[str]) -> str:
    return "".join(
        part
        if isinstance(part, str)
        else match.group(part if isinstance(part, int) else part[0]) or ""
        for part in parts
    )


class RegexRouter(Transformation):
    """Update the topic with a regular expression and replacement (Kafka's ``RegexRouter``)."""

    CONFIG = (
        ConfigKey("regex", "string", "Regular expression to use for matching."),
        ConfigKey("replacement", "string", "Replacement string."),
    )

    def setup(self, settings: Settings) -> None:
        self.regex = compile_java_regex(settings.string("regex"), "regex")
        try:
            self.replacement = java_replacement(settings.string("replacement"), self.regex)
        except ValueError as error:
            raise ConfigError(str(error), key="replacement") from None

    def apply(self, record: R) -> R:
        match = self.regex.fullmatch(record.topic)
        if match is None:
            return record
        topic: str = _expand(self.replacement, match)
        updated: R = record.new_record(topic=topic)
        return updated
