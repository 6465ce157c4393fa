"""Configs and plugins as Kafka Connect's REST API shows them (``ConfigInfos``, ``PluginInfo``).

Every connector has the settings of :data:`COMMON` (Kafka's ``ConnectorConfig``, group
``Common``) and the ``errors.*`` ones (group ``Error Handling``) besides its own ``CONFIG``;
:func:`config_infos` validates them all, plus what the task runners would refuse later
(converters, transforms, a sink without topics) and answers the body
of ``PUT /connector-plugins/{plugin}/config/validate``. Values of ``password`` settings, of
keys that look secret (:func:`~.config_providers.is_sensitive`) and of keys the
deployment marked secret are shown as ``[hidden]``, there and wherever the API shows a config
(:func:`masked`).

>>> from sluice.connect.api.connector import SourceConnector
>>> class Demo(SourceConnector):
...     CONFIG = ConfigDef().define("token", "password", doc="API token.")
...     def start(self, config): pass
...     def task_class(self): pass
...     def task_configs(self, max_tasks): return []
>>> infos = config_infos(Demo, {"connector.class": "Demo", "name": "d", "token": "s3cret"})
>>> infos["error_count"], [c["value"]["value"] for c in infos["configs"]][-1]
(0, '[hidden]')
>>> masked({"name": "d", "token": "s3cret", "db.password": "x"}, secret_keys(Demo))
{'name': 'd', 'token': '[hidden]', 'db.password': '[hidden]'}
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

from sluice.connect.api.config_def import ConfigDef, ConfigValue, at_least
from sluice.connect.api.connector import Connector, SinkConnector
from sluice.connect.converters import CONVERTERS, converter_from
from sluice.connect.deploy.validate import COMMON_CONFIG
from sluice.connect.runtime.config_providers import (
    HIDDEN,
    is_sensitive,
    placeholder_keys,
    resolve_config,
)
from sluice.connect.runtime.plugins import plugin_type
from sluice.connect.transforms import TransformChain
from sluice.connect.transforms.registry import (
    PREDICATES,
    PREDICATES_PACKAGE,
    TRANSFORMS,
    TRANSFORMS_PACKAGE,
)
from sluice.errors import ConfigError

__all__ = [
    "COMMON",
    "class_name",
    "config_infos",
    "invalid_config_message",
    "masked",
    "plugin_infos",
    "secret_keys",
    "text",
]


def _non_empty(name: str, value: Any) -> None:
    if not str(value).strip():
        raise ValueError("must not be empty")


COMMON = (
    ConfigDef()
    .define(
        "name",
        "string",
        doc="Globally unique name of the connector.",
        importance="high",
        validator=_non_empty,
    )
    .define(
        "connector.class",
        "class",
        doc="Alias, Kafka class name or dotted path of the connector class.",
        importance="high",
        validator=_non_empty,
    )
    .define(
        "tasks.max",
        "int",
        1,
        doc="Maximum number of tasks of the connector.",
        validator=at_least(1),
        importance="high",
    )
    .define("key.converter", "class", None, doc="Converter of record keys.", importance="low")
    .define("value.converter", "class", None, doc="Converter of record values.", importance="low")
    .define("transforms", "list", [], doc="Aliases of the transformations.", importance="low")
    .define("predicates", "list", [], doc="Aliases of the predicates.", importance="low")
)
"""The settings every connector has."""


def text(value: Any) -> str | None:
    """A config value as Kafka's REST API shows it: a string (or null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def secret_keys(cls: type[Connector] | None) -> set[str]:
    """The settings of ``cls`` (and :data:`COMMON`) whose values are never shown."""
    definition = COMMON if cls is None else COMMON.merge(cls.CONFIG)
    return {key.name for key in definition.keys.values() if key.type == "password"}


def _secret(key: str, secrets: Collection[str]) -> bool:
    return key in secrets or is_sensitive(key)


def masked(config: Mapping[str, Any], secrets: Collection[str] = ()) -> dict[str, Any]:
    """``config`` as text; values of ``secrets`` and of keys that look secret are hidden."""
    return {
        k: HIDDEN if v is not None and _secret(k, secrets) else text(v) for k, v in config.items()
    }


def _runtime_problems(cls: type[Connector], config: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """What the task runners would refuse: converters, transforms, a sink without topics."""
    for prefix in ("key.converter", "value.converter"):
        if config.get(prefix):
            settings = {
                k[len(prefix) + 1 :]: v for k, v in config.items() if k.startswith(prefix + ".")
            }
            try:
                converter_from(str(config[prefix]), settings, prefix == "key.converter")
            except Exception as error:
                yield prefix, str(getattr(error, "reason", error))
    try:
        TransformChain.from_config(config).close()
    except Exception as error:
        yield str(getattr(error, "key", None) or "transforms"), str(getattr(error, "reason", error))
    if issubclass(cls, SinkConnector) and "topics" not in cls.CONFIG.keys:
        topics = str(config.get("topics", "")).strip()
        regex = str(config.get("topics.regex", "")).strip()
        if topics and regex:
            yield (
                "topics.regex",
                "topics and topics.regex are mutually exclusive options, but both are set",
            )
        elif not topics and not regex:
            yield "topics", "must configure one of topics or topics.regex"


_GROUPS = (("Common", COMMON), ("Error Handling", COMMON_CONFIG))
_UNDECLARED = {"type": "STRING", "required": False, "default_value": None, "importance": "LOW"}


def _resolved(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``config`` with its placeholders resolved as the worker will resolve them, and the
    problem of each key whose placeholder cannot be (that key keeps its placeholder)."""
    resolved, problems = dict(config), {}
    for key in placeholder_keys(config):
        try:
            resolved.update(resolve_config({key: config[key]}))
        except ConfigError as error:
            problems[key] = error.reason
    return resolved, problems


def config_infos(
    cls: type[Connector], config: Mapping[str, Any], secrets: Collection[str] = ()
) -> dict[str, Any]:
    """Kafka's ``ConfigInfos``: ``{"name", "error_count", "groups", "configs"}``.

    The framework's settings come first (groups ``Common`` and ``Error Handling``), then the
    connector's own (no group); ``secrets`` adds keys whose values are hidden.
    """
    own = cls.CONFIG.keys
    secrets = {*secrets, *placeholder_keys(config)}  # their values, once resolved, are secret
    config, unresolved = _resolved(config)
    groups: dict[str, tuple[str | None, int]] = {}  # framework key -> (group, order in the group)
    values: dict[str, ConfigValue] = {}
    described: dict[str, dict[str, Any]] = {}
    for group_name, definition in _GROUPS:
        keys = [name for name in definition.keys if name not in own]
        groups.update((name, (group_name, order)) for order, name in enumerate(keys, 1))
        values.update((v.name, v) for v in definition.validate(config) if v.name in keys)
        described.update((d["name"], d) for d in definition.describe())
    values.update((v.name, v) for v in cls().validate(config))
    described.update((d["name"], d) for d in cls.CONFIG.describe())
    for key, error in [*_runtime_problems(cls, config), *unresolved.items()]:
        values.setdefault(key, ConfigValue(key, config.get(key))).errors.append(error)
    secrets = {*secrets, *secret_keys(cls)}
    configs = []
    for value in values.values():
        group, order = groups.get(value.name, (None, -1))
        shown = text(value.value)
        if shown is not None and _secret(value.name, secrets):
            shown = HIDDEN
        declared = described.get(value.name) or {
            "name": value.name,
            **_UNDECLARED,
            "documentation": "",
        }
        configs.append(
            {
                "definition": {
                    **declared,
                    "group": group,
                    "order": order,
                    "width": "NONE",
                    "display_name": value.name,
                    "dependents": [],
                },
                "value": {
                    "name": value.name,
                    "value": shown,
                    "recommended_values": list(value.recommended_values),
                    "errors": list(value.errors),
                    "visible": value.visible,
                },
            }
        )
    return {
        "name": str(config.get("connector.class", "")),
        "error_count": sum(len(v.errors) for v in values.values()),
        "groups": [group for group, _ in _GROUPS],
        "configs": configs,
    }


def invalid_config_message(infos: Mapping[str, Any]) -> str:
    """Kafka's message for a config that ``infos`` (:func:`config_infos`) found invalid."""
    problems = "".join(
        f"\n{c['value']['name']}: {error}"
        for c in infos["configs"]
        for error in c["value"]["errors"]
    )
    return (
        f"Connector configuration is invalid and contains the following "
        f"{infos['error_count']} error(s):{problems}\nYou can also find the above list of "
        "errors at the endpoint `/connector-plugins/{connectorType}/config/validate`"
    )


def class_name(cls: type) -> str:
    """The dotted path of a class, as the REST API names plugins."""
    return f"{cls.__module__}.{cls.__qualname__}"


def plugin_infos(
    connectors: Iterable[type[Connector]], connectors_only: bool, version: str
) -> list[dict[str, Any]]:
    """Kafka's ``PluginInfo`` list: the connectors, then (unless ``connectors_only``) the
    built-in transformations, predicates and converters under Kafka's class names."""
    found = [
        {"class": class_name(cls), "type": plugin_type(cls), "version": cls().version()}
        for cls in connectors
    ]
    if connectors_only:
        return found
    for package, names, kind in (
        (TRANSFORMS_PACKAGE, sorted(TRANSFORMS), "transformation"),
        (PREDICATES_PACKAGE, sorted(PREDICATES), "predicate"),
        ("", sorted(n for n in CONVERTERS if "." in n), "converter"),
    ):
        found += [{"class": package + n, "type": kind, "version": version} for n in names]
    return found
