"""``resolve_class``: a spec's connector class, and its config checked against the class."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping

from sluice.connect.api.config_def import ConfigDef
from sluice.connect.api.connector import Connector, SinkConnector
from sluice.connect.deploy.spec import ConnectorSpec, DeploymentError
from sluice.connect.transforms import TransformChain
from sluice.errors import ConfigError

__all__ = ["COMMON_CONFIG", "Lookup", "resolve_class"]

Lookup = Mapping[str, type[Connector]] | Callable[[str], type[Connector] | None]
"""Aliases and class names → connector classes, as a mapping or a function (None: unknown)."""


def _tolerance(name: str, value: str) -> None:
    if value.lower() not in ("none", "all"):
        raise ValueError(f"must be none or all, got {value!r}")


COMMON_CONFIG = (
    ConfigDef()
    .define("errors.tolerance", "string", "none", validator=_tolerance)
    .define("errors.retry.timeout", "long", 0)
    .define("errors.retry.delay.max.ms", "long", 60_000)
    .define("errors.log.enable", "boolean", False)
    .define("errors.log.include.messages", "boolean", False)
    .define("errors.deadletterqueue.topic.name", "string", "")
    .define("errors.deadletterqueue.topic.replication.factor", "int", 3)
    .define("errors.deadletterqueue.context.headers.enable", "boolean", False)
)
"""Kafka's settings common to every connector that :func:`resolve_class` checks as well."""


def resolve_class(
    spec: ConnectorSpec, lookup: Lookup, *, known: Iterable[str] | None = None
) -> type[Connector]:
    """The connector class of ``spec``, after checking ``spec.config`` against it.

    ``lookup`` maps a name to its class (a mapping, or a function returning None — or raising
    :class:`~sluice.errors.ConfigError` — for an unknown name); ``known`` lists the names to
    suggest (default: a mapping's keys). The config is checked with the connector's
    ``validate()`` (its ``CONFIG``), :data:`COMMON_CONFIG`, a sink's ``topics``/``topics.regex``
    rule and the transform chain. Raises :class:`DeploymentError`: an unknown class at the
    class's line, or every problem of the config, each at its own line.
    """
    name = spec.connector_class
    found: object = None
    if isinstance(lookup, Mapping):
        found = lookup.get(name)
        known = lookup.keys() if known is None else known
    else:
        try:
            found = lookup(name)
        except ConfigError as error:
            raise DeploymentError([spec.error("connector.class", error.reason)]) from None
    if found is None:
        raise DeploymentError([spec.error("connector.class", _unknown(name, known or ()))])
    if not (isinstance(found, type) and issubclass(found, Connector)):
        message = f"{name!r} is not a connector class (found {found!r})"
        raise DeploymentError([spec.error("connector.class", message)])
    problems = _problems(spec, found)
    if problems:
        raise DeploymentError(sorted(problems, key=lambda problem: problem.line or 0))
    return found


def _unknown(name: str, known: Iterable[str]) -> str:
    names = sorted(known)
    aliases = [alias for alias in names if "." not in alias] or names
    close = difflib.get_close_matches(name, names, 1)
    hint = f"; did you mean {close[0]}?" if close else ""
    listed = f"known: {', '.join(aliases)}; " if aliases else ""
    return f"unknown connector class {name!r}{hint} ({listed}or a dotted path module.Class)"


def _problems(spec: ConnectorSpec, cls: type[Connector]) -> list[ConfigError]:
    problems = []
    config = dict(spec.config)
    try:
        values = cls().validate(config)
    except Exception as error:  # a plugin's bug, still reported where the class is named
        failed = f"{cls.__name__}.validate failed: {type(error).__name__}: {error}"
        return [spec.error("connector.class", failed)]
    common = [
        value for value in COMMON_CONFIG.validate(config) if value.name not in cls.CONFIG.keys
    ]
    for value in [*values, *common]:
        problems += [spec.error(value.name, message) for message in value.errors]
    if issubclass(cls, SinkConnector) and "topics" not in cls.CONFIG.keys:
        topics, regex = config.get("topics", "").strip(), config.get("topics.regex", "").strip()
        if topics and regex:
            message = "topics and topics.regex are mutually exclusive options, but both are set"
            problems.append(spec.error("topics.regex", message))
        elif not topics and not regex:
            problems.append(spec.error("topics", "must configure one of topics or topics.regex"))
    try:
        TransformChain.from_config(config).close()
    except ConfigError as error:
        problems.append(spec.error(error.key or "transforms", error.reason))
    except Exception as error:  # a transformation that failed to configure in its own way
        problems.append(spec.error("transforms", f"{type(error).__name__}: {error}"))
    return problems
