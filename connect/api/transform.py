"""What every transformation and predicate shares: the base classes and their settings.

A transformation declares its settings in ``CONFIG`` (Kafka's ``ConfigDef``), receives them in
:meth:`Transformation.configure` with the ``transforms.<alias>.`` prefix removed, and turns one
record into another (or into ``None``, which drops it) in :meth:`Transformation.apply`. Records are
never modified in place: a transformation returns ``record.new_record(...)``.

>>> class Upper(Transformation):
...     '''Upper-cases a string value.'''
...     CONFIG = (ConfigKey("suffix", "string", "Appended after upper-casing.", default=""),)
...     def setup(self, settings: Settings) -> None:  # noqa: B027 - an optional hook
...         self.suffix = settings.string("suffix")
...     def apply(self, record):
...         return record.new_record(value=record.value.upper() + self.suffix)
>>> from sluice.connect.api.data import ConnectRecord
>>> upper = Upper()
>>> upper.configure({"suffix": "!"})
>>> upper.apply(ConnectRecord("t", 0, None, None, None, "hi")).value
'HI!'
>>> Upper().configure({"suffix": None, "other": 1})  # unknown keys are ignored, as in Kafka
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeVar

from sluice.connect.api.data import ConnectRecord, Field, Schema, SinkRecord, Struct
from sluice.connect.api.errors import TransformError
from sluice.errors import ConfigError

__all__ = [
    "REPLACE_NULL",
    "REQUIRED",
    "ConfigKey",
    "KeyOrValueTransformation",
    "Predicate",
    "R",
    "SchemaCache",
    "Settings",
    "Transformation",
    "compile_java_regex",
    "copy_schema_basics",
    "parse_config",
    "require_map",
    "require_sink_record",
    "require_struct",
    "struct_value",
    "type_name",
]

R = TypeVar("R", bound=ConnectRecord)
"""The record type a transformation receives and returns (source or sink record)."""


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""The default of a setting that has none: leaving it out is an error."""

ConfigType = Literal["string", "list", "boolean", "int"]


@dataclass(frozen=True)
class ConfigKey:
    """One setting, as Kafka's ``ConfigDef.define`` declares it.

    ``type`` is ``string`` (trimmed), ``list`` (comma-separated, items trimmed, empty items
    dropped), ``boolean`` (``true``/``false``, any case) or ``int``; ``choices`` limits a string.
    """

    name: str
    type: ConfigType
    doc: str
    default: Any = REQUIRED
    choices: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        """Whether the setting has no default."""
        return self.default is REQUIRED


class Settings:
    """Parsed settings with typed accessors (see :func:`parse_config`)."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = dict(values)

    def string(self, key: str) -> str:
        """A string setting that has a value."""
        value = self.values[key]
        if not isinstance(value, str):
            raise ConfigError("required", key=key)
        return value

    def optional_string(self, key: str) -> str | None:
        """A string setting whose default is none."""
        value = self.values[key]
        return value if isinstance(value, str) else None

    def list(self, key: str) -> list[str]:
        """A list setting."""
        return list(self.values[key] or [])

    def boolean(self, key: str) -> bool:
        """A boolean setting."""
        return bool(self.values[key])

    def integer(self, key: str) -> int:
        """An int setting."""
        return int(self.values[key])


def parse_config(keys: Sequence[ConfigKey], config: Mapping[str, Any]) -> Settings:
    """Check and convert ``config`` against ``keys``; :class:`ConfigError` names the bad key."""
    values: dict[str, Any] = {}
    for key in keys:
        raw = config.get(key.name)
        if raw is None:
            if key.required:
                raise ConfigError("required", key=key.name)
            values[key.name] = key.default
            continue
        values[key.name] = _convert(key, raw)
    return Settings(values)


def _convert(key: ConfigKey, raw: Any) -> Any:
    if key.type == "list":
        items = raw.split(",") if isinstance(raw, str) else raw
        if not isinstance(items, list | tuple):
            raise ConfigError(f"must be a comma-separated list, not {raw!r}", key=key.name)
        return [text for item in items if (text := str(item).strip())]
    if key.type == "boolean":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text not in ("true", "false"):
            raise ConfigError(f"must be true or false, not {raw!r}", key=key.name)
        return text == "true"
    if key.type == "int":
        try:
            return int(str(raw).strip())
        except ValueError:
            raise ConfigError(f"must be an integer, not {raw!r}", key=key.name) from None
    text = str(raw).strip()
    if key.choices and text not in key.choices:
        raise ConfigError(f"must be one of {', '.join(key.choices)}, not {text!r}", key=key.name)
    return text


REPLACE_NULL = ConfigKey(
    "replace.null.with.default",
    "boolean",
    "Whether a null field that has a default value is replaced by the default.",
    default=True,
)
"""The ``replace.null.with.default`` setting several of Kafka's transformations share."""


class Transformation(ABC):
    """A single message transform (Kafka's ``Transformation``).

    Subclasses declare ``CONFIG``, read their settings in :meth:`setup` and implement
    :meth:`apply`. The worker calls :meth:`configure` once, then :meth:`apply` for every record,
    then :meth:`close`. Data that a transformation cannot handle raises
    :class:`~sluice.connect.TransformError`.
    """

    CONFIG: ClassVar[tuple[ConfigKey, ...]] = ()

    def configure(self, config: Mapping[str, Any]) -> None:
        """Validate ``config`` against ``CONFIG`` and hand the result to :meth:`setup`."""
        self.setup(parse_config(self.CONFIG, config))

    def setup(self, settings: Settings) -> None:  # noqa: B027 - an optional hook
        """Keep the parsed settings; raise ``ConfigError(message, key=...)`` for bad ones."""

    @abstractmethod
    def apply(self, record: R) -> R | None:
        """The transformed record, or None to drop it."""

    def close(self) -> None:  # noqa: B027 - an optional hook
        """Release what :meth:`configure` acquired."""


class Predicate(ABC):
    """A condition on a record that guards a transformation (Kafka's ``Predicate``)."""

    CONFIG: ClassVar[tuple[ConfigKey, ...]] = ()

    def configure(self, config: Mapping[str, Any]) -> None:
        """Validate ``config`` against ``CONFIG`` and hand the result to :meth:`setup`."""
        self.setup(parse_config(self.CONFIG, config))

    def setup(self, settings: Settings) -> None:  # noqa: B027 - an optional hook
        """Keep the parsed settings."""

    @abstractmethod
    def test(self, record: ConnectRecord) -> bool:
        """Whether ``record`` matches."""

    def close(self) -> None:  # noqa: B027 - an optional hook
        """Release what :meth:`configure` acquired."""


class KeyOrValueTransformation(Transformation):
    """A transformation with Kafka's ``$Key`` and ``$Value`` variants: it works on one side.

    Subclasses for each side set ``SIDE``; the logic reads :meth:`operating_schema` and
    :meth:`operating_value` and builds the result with :meth:`updated`.
    """

    SIDE: ClassVar[Literal["key", "value"]] = "value"

    def operating_schema(self, record: ConnectRecord) -> Schema | None:
        """The schema of the side this transformation works on."""
        return record.key_schema if self.SIDE == "key" else record.value_schema

    def operating_value(self, record: ConnectRecord) -> Any:
        """The key or the value."""
        return record.key if self.SIDE == "key" else record.value

    def updated(self, record: R, schema: Schema | None, value: Any, **changes: Any) -> R:
        """A copy of ``record`` with a new schema and value on this side (and ``changes``)."""
        if self.SIDE == "key":
            changes.update(key_schema=schema, key=value)
        else:
            changes.update(value_schema=schema, value=value)
        return record.new_record(**changes)  # type: ignore[no-any-return]


class SchemaCache:
    """Updated schemas by original schema (by identity; schemas may hold unhashable defaults)."""

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._entries: dict[int, tuple[Schema, Schema]] = {}

    def get(self, schema: Schema) -> Schema | None:
        """The updated schema cached for ``schema``."""
        entry = self._entries.get(id(schema))
        return entry[1] if entry is not None and entry[0] is schema else None

    def put(self, schema: Schema, updated: Schema) -> Schema:
        """Remember ``updated`` for ``schema``; returns ``updated``."""
        if len(self._entries) >= self._size:
            self._entries.clear()
        self._entries[id(schema)] = (schema, updated)
        return updated


def type_name(value: Any) -> str:
    """The Python type of ``value`` for messages (``null`` for None)."""
    return "null" if value is None else type(value).__name__


def require_map(value: Any, purpose: str) -> dict[str, Any]:
    """``value`` if it is a dict, else :class:`TransformError` (Kafka's ``requireMap``)."""
    if not isinstance(value, dict):
        raise TransformError(
            f"Only Map objects supported in absence of schema for [{purpose}], "
            f"found: {type_name(value)}"
        )
    return value


def require_struct(value: Any, purpose: str) -> Struct:
    """``value`` if it is a Struct, else :class:`TransformError` (Kafka's ``requireStruct``)."""
    if not isinstance(value, Struct):
        raise TransformError(
            f"Only Struct objects supported for [{purpose}], found: {type_name(value)}"
        )
    return value


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    """``record`` if it came from Kafka (it has an offset), else :class:`TransformError`."""
    if not isinstance(record, SinkRecord):
        raise TransformError(
            f"Only SinkRecord supported for [{purpose}], found: {type(record).__name__}"
        )
    return record


def struct_value(struct: Struct, field: Field, replace_null_with_default: bool = True) -> Any:
    """A field's value; a null becomes the field's default when ``replace_null_with_default``."""
    value = struct.values.get(field.name)
    if value is None and replace_null_with_default:
        return field.schema.default
    return value


def copy_schema_basics(
    schema: Schema, type: str = "struct", fields: Sequence[Field] = ()
) -> Schema:
    """A schema of ``type`` with ``schema``'s name, version, doc and parameters (Kafka's
    ``SchemaUtil.copySchemaBasics``: optionality and default are not copied)."""
    return Schema(
        type,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters=schema.parameters,
        fields=tuple(fields),
        key_schema=schema.key_schema if type == "map" else None,
        value_schema=schema.value_schema if type in ("array", "map") else None,
    )


_NAMED_GROUP = re.compile(r"(?<!\\)\(\?<([A-Za-z][A-Za-z0-9]*)>")


def compile_java_regex(pattern: str, key: str) -> re.Pattern[str]:
    """Compile a Java regular expression (``(?<name>...)`` groups included) for ``key``."""
    try:
        return re.compile(_NAMED_GROUP.sub(r"(?P<\1>", pattern))
    except re.error as error:
        raise ConfigError(f"invalid regex {pattern!r}: {error}", key=key) from None
