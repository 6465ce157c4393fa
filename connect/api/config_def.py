"""Connector settings declared as Kafka's ``ConfigDef``: types, defaults, validators, docs.

A connector's :class:`ConfigDef` parses the string-valued config a user wrote into typed values
and, for the REST API's ``config/validate``, reports every problem per key at once.

>>> definition = (ConfigDef()
...     .define("file", "string", doc="File to read.")
...     .define("batch.size", "int", 2000, doc="Lines per poll.", validator=at_least(1)))
>>> definition.parse({"file": "/tmp/in.txt"})
{'file': '/tmp/in.txt', 'batch.size': 2000}
>>> definition.parse({"batch.size": "0"})
Traceback (most recent call last):
...
sluice.errors.ConfigError: file: missing required configuration (File to read.)
>>> [(v.name, v.errors) for v in definition.validate({"file": "x", "batch.size": "zero"})]
[('file', []), ('batch.size', ["invalid value 'zero' for an int"])]

Keys of the implementation a connector mirrors (Debezium's, Confluent's) that it does not
implement are declared with :meth:`ConfigDef.refuse`: a config that sets one is refused naming
the key, never accepted and silently ignored. A value that is what the connector does anyway
(the documented default, usually) may be allowed:

>>> definition = definition.refuse("dialect.name", origin="Confluent's JDBC source",
...     allowed=("",)).refuse("connection.*", origin="Confluent's JDBC source")
>>> try:
...     definition.parse({"file": "x", "dialect.name": "OracleDatabaseDialect"})
... except ConfigError as error:
...     print(error.key, "-", error.reason[:63])
dialect.name - a key of Confluent's JDBC source that Sluice does not implement
>>> definition.parse({"file": "x", "dialect.name": ""})["file"]
'x'
>>> [v.name for v in definition.validate({"file": "x", "connection.loginTimeout": "10"})][-1]
'connection.loginTimeout'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sluice.errors import ConfigError

__all__ = [
    "NO_DEFAULT",
    "ConfigDef",
    "ConfigKey",
    "ConfigValue",
    "RefusedKey",
    "at_least",
    "one_of",
]

ConfigType = Literal["string", "int", "long", "double", "boolean", "list", "password", "class"]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""The default of a required setting."""

Validator = Callable[[str, Any], None]
"""``validator(name, value)`` raises ``ValueError`` with the reason when a value is wrong."""


@dataclass(frozen=True)
class ConfigKey:
    """One setting."""

    name: str
    type: ConfigType
    default: Any = NO_DEFAULT
    doc: str = ""
    validator: Validator | None = None
    importance: Literal["high", "medium", "low"] = "medium"

    @property
    def required(self) -> bool:
        """Whether the setting has no default."""
        return self.default is NO_DEFAULT


@dataclass(frozen=True)
class RefusedKey:
    """A key of another implementation's documented set that the connector does not implement.

    ``name`` is a key, or a prefix ending in ``*`` (``connection.*``: every key that starts
    with ``connection.`` and is not declared). A value in ``allowed`` (compared without case or
    surrounding blanks) is what the connector does anyway and passes.
    """

    name: str
    origin: str
    allowed: tuple[str, ...] = ()
    hint: str = ""

    def matches(self, key: str) -> bool:
        """Whether ``key`` is this key (or under this prefix)."""
        if self.name.endswith("*"):
            return key.startswith(self.name[:-1])
        return key == self.name

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is refused (None: it is allowed)."""
        text = "" if value is None else str(value).strip().lower()
        if any(text == choice.lower() for choice in self.allowed):
            return None
        only = ""
        if self.allowed:
            shown = " or ".join(repr(choice) for choice in self.allowed)
            only = f" (only {shown} is accepted: what Sluice does)"
        hint = f"; {self.hint}" if self.hint else ""
        return f"a key of {self.origin} that Sluice does not implement{only}{hint}; remove it"


@dataclass
class ConfigValue:
    """The REST API's view of one setting after validation."""

    name: str
    value: Any
    errors: list[str] = field(default_factory=list)
    recommended_values: list[str] = field(default_factory=list)
    visible: bool = True


def _parse(key: ConfigKey, raw: Any) -> Any:
    kind = key.type
    if raw is None:
        return None
    if kind in ("string", "password", "class"):
        return str(raw).strip() if isinstance(raw, str) else str(raw)
    if kind in ("int", "long"):
        article = "an" if kind == "int" else "a"
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise ValueError(f"invalid value {raw!r} for {article} {kind}")
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"invalid value {raw!r} for {article} {kind}") from None
    if kind == "double":
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"invalid value {raw!r} for a double") from None
    if kind == "boolean":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise ValueError(f"invalid value {raw!r} for a boolean (true or false)")
    if kind == "list":
        if isinstance(raw, list | tuple):
            return [str(item).strip() for item in raw]
        return [item.strip() for item in str(raw).split(",") if item.strip()]
    raise ValueError(f"unknown config type {kind}")


class ConfigDef:
    """Settings of a connector (or worker); build with :meth:`define`."""

    def __init__(self) -> None:
        self.keys: dict[str, ConfigKey] = {}
        self.refused: list[RefusedKey] = []

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        *,
        doc: str = "",
        validator: Validator | None = None,
        importance: Literal["high", "medium", "low"] = "medium",
    ) -> ConfigDef:
        """Declare a setting; returns the definition (calls chain)."""
        self.keys[name] = ConfigKey(name, type, default, doc, validator, importance)
        return self

    def refuse(
        self, *names: str, origin: str, allowed: tuple[str, ...] = (), hint: str = ""
    ) -> ConfigDef:
        """Declare keys (or ``prefix*``) of ``origin``'s documented set that are not
        implemented: a config setting one (to a value not in ``allowed``) is refused naming it.
        Returns the definition (calls chain)."""
        self.refused += [RefusedKey(name, origin, allowed, hint) for name in names]
        return self

    def merge(self, other: ConfigDef) -> ConfigDef:
        """A definition with the settings of both (``other`` wins)."""
        merged = ConfigDef()
        merged.keys = {**self.keys, **other.keys}
        merged.refused = [*self.refused, *other.refused]
        return merged

    def refusals(self, config: Mapping[str, Any]) -> list[tuple[str, str]]:
        """``(key, message)`` of each key of ``config`` that a :meth:`refuse` declaration
        refuses (declared settings never are), in the config's order."""
        found = []
        for key, value in config.items():
            if key in self.keys:
                continue
            for refused in self.refused:
                if refused.matches(key):
                    problem = refused.problem(value)
                    if problem is not None:
                        found.append((key, problem))
                    break
        return found

    def _value(self, key: ConfigKey, config: Mapping[str, Any]) -> Any:
        if key.name not in config:
            if key.required:
                detail = f" ({key.doc})" if key.doc else ""
                raise ValueError(f"missing required configuration{detail}")
            return key.default
        value = _parse(key, config[key.name])
        if key.validator is not None and value is not None:
            key.validator(key.name, value)
        return value

    def parse(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Typed values of every declared setting; raises ConfigError naming the first bad key."""
        values = {}
        for key in self.keys.values():
            try:
                values[key.name] = self._value(key, config)
            except ValueError as error:
                raise ConfigError(str(error), key=key.name) from None
        for name, problem in self.refusals(config):
            raise ConfigError(problem, key=name)
        return values

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        """Every declared setting with its problems (none: it is fine)."""
        results = []
        for key in self.keys.values():
            try:
                value = self._value(key, config)
                results.append(ConfigValue(key.name, value))
            except ValueError as error:
                results.append(ConfigValue(key.name, config.get(key.name), [str(error)]))
        results += [
            ConfigValue(name, config[name], [problem]) for name, problem in self.refusals(config)
        ]
        return results

    def describe(self) -> list[dict[str, Any]]:
        """The settings as the REST API's ``GET /connector-plugins/{plugin}/config`` lists them."""
        return [
            {
                "name": key.name,
                "type": key.type.upper(),
                "required": key.required,
                "default_value": None if key.required else _text(key.default),
                "importance": key.importance.upper(),
                "documentation": key.doc,
            }
            for key in self.keys.values()
        ]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def at_least(minimum: float) -> Validator:
    """Values must be ``>= minimum``."""

    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise ValueError(f"must be at least {minimum}, got {value}")

    return check


def one_of(*choices: str) -> Validator:
    """Values must be one of ``choices``."""

    def check(name: str, value: Any) -> None:
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got {value!r}")

    return check
