"""Debezium's column filters and masks: which columns reach the change events, and how.

Keys (Debezium's; each value is a comma-separated list of regexes matched against the whole
``<schema>.<table>.<column>`` name):

``column.include.list`` / ``column.exclude.list``
    the columns kept in (or left out of) the ``before``/``after`` images and their schema;
    setting both is refused, as Debezium does.
``column.mask.with.<n>.chars``
    a character column's value becomes ``n`` ``*`` (``0``: the empty string).
``column.mask.hash.<algorithm>.with.salt.<salt>``
    a character column's value becomes the lower-case hex digest of ``algorithm`` (a Java
    ``MessageDigest`` name: ``MD5``, ``SHA-1``, ``SHA-256``, ``SHA-512/256``, ``SHA3-256``…)
    over the salt's UTF-8 bytes followed by the value as Java serializes a ``String``
    (``ObjectOutputStream``: stream header, ``TC_STRING``, length, modified UTF-8) — Debezium's
    V1 hashing, byte for byte; cut to the column's length (``varchar(n)``, ``char(n)``).
``column.mask.hash.v2.<algorithm>.with.salt.<salt>``
    the same over the value's plain UTF-8 bytes (Debezium's V2: the same digest as any other
    system computing ``hash(salt + value)``).
``column.truncate.to.<n>.chars``
    string (and bytes) values longer than ``n`` are cut to ``n``.

As in Debezium: the key keeps the primary key's columns unfiltered and unmasked (a key column
in ``column.exclude.list`` still appears in the key), null stays null, and the value schema's
field of a masked column carries the parameter ``masked=true`` (truncated:
``truncateLength=<n>``). Unlike Debezium, which applies the first matching rule with the
truncation rules first, a mask always wins over a truncation (a value meant to be masked is
never emitted), and a mask that matches a column that is not a character column (text,
varchar, char, name) fails the task naming it — Debezium passes such values through unmasked.

>>> rules = ColumnRules.parse({"column.exclude.list": "public.users.ssn",
...     "column.mask.with.3.chars": r"public\\.users\\.email"})
>>> rules.keeps("public", "users", "ssn"), rules.keeps("public", "users", "email")
(False, True)
>>> rule = rules.rule("public", "users", "email")
>>> rule.apply("ada@example.com"), rule.parameters
('***', (('masked', 'true'),))
>>> hash_value("SHA-256", "salt", "ada", version=2)[:16]
'9acd843da0a60261'
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sluice.errors import ConfigError

__all__ = ["CHARACTER_TYPES", "ColumnRule", "ColumnRules", "column_problems", "hash_value"]

CHARACTER_TYPES = frozenset({25, 1043, 1042, 19, 18})
"""Type OIDs of PostgreSQL's character columns (text, varchar, bpchar, name, "char")."""

_TRUNCATE = re.compile(r"column\.truncate\.to\.(\d+)\.chars")
_MASK = re.compile(r"column\.mask\.with\.(\d+)\.chars")
_HASH_V2 = re.compile(r"column\.mask\.hash\.v2\.([^.]+)\.with\.salt\.(.+)", re.DOTALL)
_HASH = re.compile(r"column\.mask\.hash\.([^.]+)\.with\.salt\.(.+)", re.DOTALL)

_DIGESTS = {
    "MD5": "md5",
    "SHA": "sha1",
    "SHA1": "sha1",
    "SHA-1": "sha1",
    "SHA-224": "sha224",
    "SHA-256": "sha256",
    "SHA-384": "sha384",
    "SHA-512": "sha512",
    "SHA-512/224": "sha512_224",
    "SHA-512/256": "sha512_256",
    "SHA3-224": "sha3_224",
    "SHA3-256": "sha3_256",
    "SHA3-384": "sha3_384",
    "SHA3-512": "sha3_512",
}
"""Java ``MessageDigest`` names (case does not matter, as in Java) → :mod:`hashlib` names."""


def _java_string(value: str) -> bytes:
    """``value`` as ``ObjectOutputStream.writeObject`` writes a ``String`` (whole stream)."""
    encoded = bytearray()
    units = value.encode("utf-16-be")
    for index in range(0, len(units), 2):
        unit = (units[index] << 8) | units[index + 1]
        if 0x0001 <= unit <= 0x007F:
            encoded.append(unit)
        elif unit <= 0x07FF:
            encoded += bytes((0xC0 | (unit >> 6), 0x80 | (unit & 0x3F)))
        else:
            encoded += bytes(
                (0xE0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3F), 0x80 | (unit & 0x3F))
            )
    header = b"\xac\xed\x00\x05"
    if len(encoded) <= 0xFFFF:
        return header + b"\x74" + len(encoded).to_bytes(2, "big") + bytes(encoded)
    return header + b"\x7c" + len(encoded).to_bytes(8, "big") + bytes(encoded)


def hash_value(algorithm: str, salt: str, value: str, *, version: int) -> str:
    """Debezium's pseudonym of ``value``: hex digest of salt then value (see module doc)."""
    digest = hashlib.new(_DIGESTS[algorithm.upper()])
    digest.update(salt.encode())
    digest.update(_java_string(value) if version == 1 else value.encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class ColumnRule:
    """What happens to the values of the columns one key's regexes match."""

    key: str
    patterns: tuple[re.Pattern[str], ...]
    kind: str  # "mask", "hash" or "truncate"
    length: int = 0  # mask: number of *; truncate: the limit
    algorithm: str = ""
    salt: str = ""
    version: int = 1

    def matches(self, name: str) -> bool:
        """Whether the column ``schema.table.column`` is one of this rule's."""
        return any(pattern.fullmatch(name) for pattern in self.patterns)

    @property
    def parameters(self) -> tuple[tuple[str, str], ...]:
        """Schema parameters Debezium adds to a field this rule changes."""
        if self.kind == "truncate":
            return (("truncateLength", str(self.length)),)
        return (("masked", "true"),)

    def apply(self, value: Any, column_length: int = -1) -> Any:
        """The value to emit instead of ``value`` (not None)."""
        if self.kind == "mask":
            return "*" * self.length
        if self.kind == "hash":
            hashed = hash_value(self.algorithm, self.salt, str(value), version=self.version)
            return hashed[:column_length] if column_length > 0 else hashed
        if isinstance(value, str | bytes) and len(value) > self.length:
            return value[: self.length]
        return value

    def mapper(self, column_length: int) -> Callable[[Any], Any]:
        """:meth:`apply` for a column of ``column_length`` characters (-1: unlimited)."""
        return lambda value: self.apply(value, column_length)


def _patterns(key: str, value: Any) -> tuple[re.Pattern[str], ...]:
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    patterns = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        try:
            patterns.append(re.compile(item))
        except re.error as error:
            raise ConfigError(f"invalid regular expression {item!r}: {error}", key=key) from None
    return tuple(patterns)


def _rule(key: str, value: Any) -> ColumnRule | None:
    """The rule of a ``column.mask.*`` / ``column.truncate.*`` key (None: not such a key)."""
    if not key.startswith(("column.mask.", "column.truncate.")):
        return None
    patterns = _patterns(key, value)
    if match := _TRUNCATE.fullmatch(key):
        if int(match.group(1)) < 1:
            raise ConfigError("the length must be a positive integer", key=key)
        return ColumnRule(key, patterns, "truncate", int(match.group(1)))
    if match := _MASK.fullmatch(key):
        return ColumnRule(key, patterns, "mask", int(match.group(1)))
    for pattern, version in ((_HASH_V2, 2), (_HASH, 1)):
        if match := pattern.fullmatch(key):
            algorithm, salt = match.groups()
            if algorithm.upper() not in _DIGESTS:
                known = ", ".join(sorted({*_DIGESTS} - {"SHA", "SHA1"}))
                raise ConfigError(f"unknown hash algorithm {algorithm!r} (one of {known})", key=key)
            return ColumnRule(key, patterns, "hash", 0, algorithm, salt, version)
    raise ConfigError(
        "not one of Debezium's column.mask.with.<n>.chars, column.mask.hash[.v2].<algorithm>"
        ".with.salt.<salt>, column.truncate.to.<n>.chars",
        key=key,
    )


@dataclass(frozen=True)
class ColumnRules:
    """The column filters and masks of one connector (see the module docstring)."""

    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()
    masks: tuple[ColumnRule, ...] = ()  # masks and hashes, in config order
    truncations: tuple[ColumnRule, ...] = ()

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ColumnRules:
        """The rules of a connector config; a :class:`ConfigError` names a bad key."""
        include = _patterns("column.include.list", config.get("column.include.list", ""))
        exclude = _patterns("column.exclude.list", config.get("column.exclude.list", ""))
        if include and exclude:
            raise ConfigError(
                "column.include.list and column.exclude.list cannot both be set",
                key="column.exclude.list",
            )
        rules = [rule for key, value in config.items() if (rule := _rule(key, value))]
        return cls(
            include,
            exclude,
            tuple(r for r in rules if r.kind != "truncate"),
            tuple(r for r in rules if r.kind == "truncate"),
        )

    @property
    def empty(self) -> bool:
        """Whether no rule is set (every column kept as it is)."""
        return not (self.include or self.exclude or self.masks or self.truncations)

    def keeps(self, schema: str, table: str, column: str) -> bool:
        """Whether the column is in the events' values."""
        name = f"{schema}.{table}.{column}"
        if self.include:
            return any(p.fullmatch(name) for p in self.include)
        return not any(p.fullmatch(name) for p in self.exclude)

    def rule(self, schema: str, table: str, column: str) -> ColumnRule | None:
        """The rule applied to the column's values: the first matching mask, else the first
        matching truncation (None: the values pass unchanged)."""
        name = f"{schema}.{table}.{column}"
        for rule in (*self.masks, *self.truncations):
            if rule.matches(name):
                return rule
        return None


def column_problems(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(key, message)`` of what :meth:`ColumnRules.parse` refuses, for ``validate`` (the
    regexes of the declared ``column.*.list`` keys are checked by their own validators)."""
    problems = []
    for key, value in config.items():
        try:
            _rule(key, value)
        except ConfigError as error:
            problems.append((error.key or key, error.reason))
    if (
        str(config.get("column.include.list", "")).strip()
        and str(config.get("column.exclude.list", "")).strip()
    ):
        problems.append(
            (
                "column.exclude.list",
                "column.include.list and column.exclude.list cannot both be set",
            )
        )
    return problems
