"""The built-in transformations and predicates by Kafka's class names.

Names are accepted in full (``org.apache.kafka.connect.transforms.InsertField$Value``,
``org.apache.kafka.connect.transforms.predicates.TopicNameMatches``) or short
(``InsertField$Value``, ``TopicNameMatches``); a dotted Python path (``package.module.Class``)
loads a custom :class:`~sluice.connect.api.transform.Transformation` or
:class:`~sluice.connect.api.transform.Predicate`.

>>> transform_class("org.apache.kafka.connect.transforms.Cast$Key").__name__
'CastKey'
>>> predicate_class("HasHeaderKey").__name__
'HasHeaderKey'
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import TypeVar

from sluice.connect.api.transform import Predicate, Transformation
from sluice.connect.transforms.cast import CastKey, CastValue
from sluice.connect.transforms.fields import (
    InsertFieldKey,
    InsertFieldValue,
    MaskFieldKey,
    MaskFieldValue,
    ReplaceFieldKey,
    ReplaceFieldValue,
    ValueToKey,
)
from sluice.connect.transforms.filter import Filter
from sluice.connect.transforms.headers import (
    DropHeaders,
    HeaderFromKey,
    HeaderFromValue,
    InsertHeader,
)
from sluice.connect.transforms.metadata import SetSchemaMetadataKey, SetSchemaMetadataValue
from sluice.connect.transforms.nesting import (
    ExtractFieldKey,
    ExtractFieldValue,
    FlattenKey,
    FlattenValue,
    HoistFieldKey,
    HoistFieldValue,
)
from sluice.connect.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from sluice.connect.transforms.routing import RegexRouter
from sluice.connect.transforms.timestamps import (
    TimestampConverterKey,
    TimestampConverterValue,
    TimestampRouter,
)
from sluice.errors import ConfigError

__all__ = ["PREDICATES", "TRANSFORMS", "predicate_class", "transform_class"]

TRANSFORMS_PACKAGE = "org.apache.kafka.connect.transforms."
PREDICATES_PACKAGE = "org.apache.kafka.connect.transforms.predicates."

TRANSFORMS: dict[str, type[Transformation]] = {
    "Cast$Key": CastKey,
    "Cast$Value": CastValue,
    "DropHeaders": DropHeaders,
    "ExtractField$Key": ExtractFieldKey,
    "ExtractField$Value": ExtractFieldValue,
    "Filter": Filter,
    "Flatten$Key": FlattenKey,
    "Flatten$Value": FlattenValue,
    "HeaderFrom$Key": HeaderFromKey,
    "HeaderFrom$Value": HeaderFromValue,
    "HoistField$Key": HoistFieldKey,
    "HoistField$Value": HoistFieldValue,
    "InsertField$Key": InsertFieldKey,
    "InsertField$Value": InsertFieldValue,
    "InsertHeader": InsertHeader,
    "MaskField$Key": MaskFieldKey,
    "MaskField$Value": MaskFieldValue,
    "RegexRouter": RegexRouter,
    "ReplaceField$Key": ReplaceFieldKey,
    "ReplaceField$Value": ReplaceFieldValue,
    "SetSchemaMetadata$Key": SetSchemaMetadataKey,
    "SetSchemaMetadata$Value": SetSchemaMetadataValue,
    "TimestampConverter$Key": TimestampConverterKey,
    "TimestampConverter$Value": TimestampConverterValue,
    "TimestampRouter": TimestampRouter,
    "ValueToKey": ValueToKey,
}
"""Built-in transformations by Kafka's short class name."""

PREDICATES: dict[str, type[Predicate]] = {
    "HasHeaderKey": HasHeaderKey,
    "RecordIsTombstone": RecordIsTombstone,
    "TopicNameMatches": TopicNameMatches,
}
"""Built-in predicates by Kafka's short class name."""

T = TypeVar("T")


def _load(name: str, base: type[T], what: str, known: dict[str, type[T]]) -> type[T]:
    module, _, attribute = name.replace(":", ".").rpartition(".")
    candidate = None
    if module and not module.startswith("org.apache.kafka."):
        try:
            candidate = getattr(importlib.import_module(module), attribute, None)
        except ImportError:
            candidate = None
    if isinstance(candidate, type) and issubclass(candidate, base):
        return candidate
    raise ConfigError(f"unknown {what} {name!r} (built in: {', '.join(sorted(known))})")


PLUGIN_TRANSFORMS = "sluice.transforms"
"""The entry-point group under which plugins register transformations by name (a connector
package's own SMTs: Debezium's ``io.debezium.transforms.ExtractNewRecordState``…)."""


def _plugin(name: str, base: type[T]) -> type[T] | None:
    for entry in entry_points(group=PLUGIN_TRANSFORMS):
        if entry.name == name:
            loaded = entry.load()
            if isinstance(loaded, type) and issubclass(loaded, base):
                return loaded
    return None


def transform_class(name: str) -> type[Transformation]:
    """The transformation class for a Kafka class name, a short name, a name registered by a
    plugin (entry points ``sluice.transforms``) or a Python path."""
    name = name.strip()
    found = TRANSFORMS.get(name.removeprefix(TRANSFORMS_PACKAGE))
    base: type[Transformation] = Transformation  # type: ignore[type-abstract]
    return found or _plugin(name, base) or _load(name, base, "transformation", TRANSFORMS)


def predicate_class(name: str) -> type[Predicate]:
    """The predicate class for a Kafka class name, a short name or a Python path."""
    name = name.strip()
    found = PREDICATES.get(name.removeprefix(PREDICATES_PACKAGE))
    base: type[Predicate] = Predicate  # type: ignore[type-abstract]
    return found or _load(name, base, "predicate", PREDICATES)
