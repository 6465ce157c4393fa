"""``TransformChain``: a connector's transformations, built from Kafka's flat settings.

The settings are Kafka Connect's own::

    transforms=addSource,onlyOrders
    transforms.addSource.type=org.apache.kafka.connect.transforms.InsertField$Value
    transforms.addSource.static.field=source
    transforms.addSource.static.value=shop
    transforms.addSource.predicate=isOrder
    transforms.addSource.negate=false
    predicates=isOrder
    predicates.isOrder.type=org.apache.kafka.connect.transforms.predicates.TopicNameMatches
    predicates.isOrder.pattern=orders.*

Transformations run in the order of ``transforms``; one guarded by a predicate applies only to the
records the predicate matches (or, with ``negate=true``, does not match); the others pass through.
A transformation that returns None drops the record and ends the chain. Bad settings raise
:class:`~sluice.errors.ConfigError` naming the full key (``transforms.addSource.static.value``);
a failure while transforming raises :class:`~sluice.connect.TransformError` naming the alias.

>>> from sluice.connect.api.data import ConnectRecord
>>> chain = TransformChain.from_config({
...     "transforms": "route",
...     "transforms.route.type": "RegexRouter",
...     "transforms.route.regex": "(.*)",
...     "transforms.route.replacement": "copy-$1",
... })
>>> chain.apply(ConnectRecord("orders", 0, None, None, None, {"id": 1})).topic
'copy-orders'
>>> TransformChain.from_config({"transforms": "x", "transforms.x.type": "Cast$Value"})
Traceback (most recent call last):
  ...
sluice.errors.ConfigError: transforms.x.spec: required
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sluice.connect.api.data import ConnectRecord
from sluice.connect.api.errors import TransformError
from sluice.connect.api.transform import Predicate, R, Transformation
from sluice.connect.transforms.registry import predicate_class, transform_class
from sluice.errors import ConfigError

__all__ = ["TransformChain", "TransformStage"]

_STAGE_KEYS = frozenset(["type", "predicate", "negate"])


@dataclass
class TransformStage:
    """One transformation of a chain, with the predicate that guards it."""

    alias: str
    transformation: Transformation
    predicate: Predicate | None = None
    negate: bool = False

    def applies_to(self, record: ConnectRecord) -> bool:
        """Whether the transformation should run on ``record``."""
        return self.predicate is None or self.predicate.test(record) != self.negate


class TransformChain:
    """Transformations applied in order (Kafka's ``TransformationChain``)."""

    def __init__(self, stages: Sequence[TransformStage] = ()) -> None:
        self.stages = list(stages)

    def __len__(self) -> int:
        return len(self.stages)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TransformChain:
        """Build and configure the chain from a connector's settings (see the module docs)."""
        predicates: dict[str, Predicate] = {}
        for alias in _aliases(config, "predicates"):
            prefix = f"predicates.{alias}."
            predicate = _plugin(config, prefix, predicate_class)()
            _configure(predicate, config, prefix)
            predicates[alias] = predicate
        stages = []
        for alias in _aliases(config, "transforms"):
            prefix = f"transforms.{alias}."
            transformation = _plugin(config, prefix, transform_class)()
            guard = config.get(prefix + "predicate")
            predicate = None
            if guard is not None and str(guard).strip():
                predicate = predicates.get(str(guard).strip())
                if predicate is None:
                    defined = ", ".join(predicates) or "none"
                    raise ConfigError(
                        f"unknown predicate {guard!r} (predicates: {defined})",
                        key=prefix + "predicate",
                    )
            negate = _boolean(config, prefix + "negate")
            if negate and predicate is None:
                raise ConfigError("negate needs a predicate", key=prefix + "negate")
            _configure(transformation, config, prefix)
            stages.append(TransformStage(alias, transformation, predicate, negate))
        return cls(stages)

    def apply(self, record: R) -> R | None:
        """``record`` after every stage, or None when a stage dropped it."""
        current: R | None = record
        for stage in self.stages:
            if current is None:
                return None
            try:
                if stage.applies_to(current):
                    current = stage.transformation.apply(current)
            except Exception as error:
                name = type(stage.transformation).__name__
                raise TransformError(f"transforms.{stage.alias} ({name}): {error}") from error
        return current

    def close(self) -> None:
        """Close every transformation and predicate."""
        closed: set[int] = set()
        for stage in self.stages:
            for plugin in (stage.transformation, stage.predicate):
                if plugin is not None and id(plugin) not in closed:
                    closed.add(id(plugin))
                    plugin.close()


def _aliases(config: Mapping[str, Any], key: str) -> list[str]:
    raw = config.get(key)
    if raw is None:
        return []
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    aliases = [text for item in items if (text := str(item).strip())]
    if len(set(aliases)) != len(aliases):
        raise ConfigError("Duplicate alias provided.", key=key)
    return aliases


def _plugin(config: Mapping[str, Any], prefix: str, lookup: Any) -> Any:
    name = config.get(prefix + "type")
    if name is None or not str(name).strip():
        raise ConfigError("required", key=prefix + "type")
    try:
        return lookup(str(name))
    except ConfigError as error:
        raise ConfigError(error.reason, key=prefix + "type") from None


def _configure(plugin: Transformation | Predicate, config: Mapping[str, Any], prefix: str) -> None:
    own = {
        key[len(prefix) :]: value
        for key, value in config.items()
        if key.startswith(prefix) and key[len(prefix) :] not in _STAGE_KEYS
    }
    try:
        plugin.configure(own)
    except ConfigError as error:
        key = prefix + error.key if error.key else prefix.rstrip(".")
        raise ConfigError(error.reason, key=key) from None


def _boolean(config: Mapping[str, Any], key: str) -> bool:
    raw = config.get(key, False)
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"must be true or false, not {raw!r}", key=key)
    return text == "true"
