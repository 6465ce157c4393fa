"""Reading deployment files into :class:`ConnectorSpec` objects (the format: the package docs)."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sluice.connect.deploy.spec import STATES, ConnectorSpec, DeploymentError, State
from sluice.connect.runtime.config_providers import HIDDEN, SecretResolver
from sluice.errors import ConfigError
from sluice.yaml_positions import Entry, compose, entries, is_null, line, text

__all__ = ["STRUCTURED_KEYS", "from_nodes", "load", "loads"]

STRUCTURED_KEYS = (
    "name",
    "class",
    "tasks_max",
    "state",
    "config",
    "transforms",
    "predicates",
    "errors",
)
"""The keys of a connector in the structured form."""

_STRUCTURED_ONLY = ("class", "config", "tasks_max")
_ALIASED = ("transforms", "predicates")
_MISSING_CLASS = "missing: name the connector class with class: (or Kafka's connector.class:)"


def load(
    path: Path, *, environ: Mapping[str, str] | None = None, resolve: bool = True
) -> list[ConnectorSpec]:
    """The connectors of a YAML file, or of every ``*.yaml``/``*.yml`` file of a folder.

    A folder's files are read in name order; hidden files (``.name.yaml``, editors' temporary
    files) are skipped. Either every connector loads or :class:`DeploymentError` lists every
    problem, each at its ``file:line: key:``. ``environ`` (default ``os.environ``) serves
    ``${env:...}``. With ``resolve=False`` placeholders are checked but kept as written, for a
    worker to resolve (``sluice connect apply``).
    """
    problems: list[ConfigError] = []
    specs: list[ConnectorSpec] = []
    for file in _files(path, problems):
        try:
            source_text = file.read_text(encoding="utf-8")
        except OSError as error:
            problems.append(ConfigError(f"cannot read: {error.strerror}", source=str(file)))
            continue
        except UnicodeDecodeError:
            problems.append(ConfigError("cannot read: not UTF-8 text", source=str(file)))
            continue
        specs += _read(source_text, str(file), file.parent, environ, problems, resolve)
    return _checked(specs, problems)


def loads(
    source_text: str,
    source: str = "<string>",
    *,
    base: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[ConnectorSpec]:
    """The connectors of YAML text; ``source`` names it in errors, ``base`` anchors
    ``${file:...}`` paths (default: the current folder)."""
    problems: list[ConfigError] = []
    specs = _read(source_text, source, base or Path("."), environ, problems, True)
    return _checked(specs, problems)


def from_nodes(
    nodes: list[Node], source: str, base: Path, problems: list[ConfigError]
) -> list[ConnectorSpec]:
    """The connectors of YAML nodes already composed (``sluice up`` keeps them inline in its
    own file): each node is one connector; problems are added to ``problems``. Placeholders
    are checked and kept, for the worker to resolve."""
    resolver = SecretResolver(base, os.environ, substitute=False)
    specs = []
    for node in nodes:
        if not isinstance(node, MappingNode):
            message = "expected a connector (a mapping of its settings)"
            problems.append(ConfigError(message, source=source, line=line(node)))
            continue
        spec = _Connector(source, resolver, node).build(problems)
        if spec is not None:
            specs.append(spec)
    return specs


def _files(path: Path, problems: list[ConfigError]) -> list[Path]:
    if path.is_dir():
        found = [
            file
            for file in path.iterdir()
            if file.suffix in (".yaml", ".yml") and not file.name.startswith(".") and file.is_file()
        ]
        return sorted(found, key=lambda file: file.name)
    if path.exists():
        return [path]
    problems.append(ConfigError("no such file or folder", source=str(path)))
    return []


def _checked(specs: list[ConnectorSpec], problems: list[ConfigError]) -> list[ConnectorSpec]:
    seen: dict[str, ConnectorSpec] = {}
    for spec in specs:
        first = seen.setdefault(spec.name, spec)
        if first is not spec:
            message = f"duplicate connector name {spec.name!r} (also at {first.where('name')})"
            problems.append(spec.error("name", message))
    if problems:
        raise DeploymentError(problems)
    return specs


def _read(
    source_text: str,
    source: str,
    base: Path,
    environ: Mapping[str, str] | None,
    problems: list[ConfigError],
    resolve: bool,
) -> list[ConnectorSpec]:
    try:
        documents = compose(source_text, source)
    except ConfigError as error:
        problems.append(error)
        return []
    resolver = SecretResolver(base, os.environ if environ is None else environ, substitute=resolve)
    specs = []
    for document in documents:
        for node in _connector_nodes(document, source, problems):
            spec = _Connector(source, resolver, node).build(problems)
            if spec is not None:
                specs.append(spec)
    return specs


def _connector_nodes(document: Node, source: str, problems: list[ConfigError]) -> list[MappingNode]:
    """A document's connector mappings: itself, the items of a list, or of ``connectors:``."""
    items: list[Node] = [document]
    if isinstance(document, SequenceNode):
        items = list(document.value)
    elif isinstance(document, MappingNode):
        keys = [key.value for key, _ in document.value if isinstance(key, ScalarNode)]
        if "connectors" in keys:
            items = []
            for entry in entries(document, source, problems):
                if entry.key != "connectors":
                    message = "unknown key; beside connectors: there can be nothing"
                    problems.append(
                        ConfigError(message, key=entry.key, source=source, line=entry.line)
                    )
                elif isinstance(entry.value, SequenceNode):
                    items = list(entry.value.value)
                elif not is_null(entry.value):
                    message = "must be a list of connectors"
                    problems.append(
                        ConfigError(message, key=entry.key, source=source, line=entry.line)
                    )
    connectors = []
    for item in items:
        if isinstance(item, MappingNode):
            connectors.append(item)
        else:
            message = "expected a connector (a mapping of its settings)"
            problems.append(ConfigError(message, source=source, line=line(item)))
    return connectors


def _closest_key(key: str) -> str | None:
    """The structured key that ``key`` was probably meant to be (dotted keys: Kafka's)."""
    if key.lower().endswith("class"):
        return "class"
    if "." in key:
        underscored = key.replace(".", "_").lower()
        return underscored if underscored in STRUCTURED_KEYS else None
    close = difflib.get_close_matches(key.lower(), STRUCTURED_KEYS, 1, 0.6)
    return close[0] if close else None


class _Connector:
    """Builds one connector's flat config, collecting its problems."""

    def __init__(self, source: str, resolver: SecretResolver, node: MappingNode) -> None:
        self.source = source
        self.resolver = resolver
        self.node = node
        self.values: dict[str, str] = {}
        self.lines: dict[str, int] = {}
        self.labels: dict[str, str] = {}
        self.secrets: set[str] = set()
        self.problems: list[ConfigError] = []
        self.misspelt: set[str] = set()
        """Structured keys that an unknown key was probably meant to be."""

    def problem(self, key: str | None, message: str, at: int) -> None:
        self.problems.append(ConfigError(message, key=key, source=self.source, line=at))

    def build(self, problems: list[ConfigError]) -> ConnectorSpec | None:
        found = entries(self.node, self.source, self.problems)
        keys = {entry.key for entry in found}
        structured = bool(keys.intersection(_STRUCTURED_ONLY)) or not (
            "connector.class" in keys or any("." in key for key in keys)
        )
        state: State | None = "running"
        if structured and "connector.class" in keys:
            for entry in found:
                if entry.key in _STRUCTURED_ONLY:
                    message = "mixes the structured form with Kafka's flat connector.class:"
                    self.problem(entry.key, message, entry.line)
            problems += self.problems
            return None
        if structured:
            state = self.structured(found)
        else:
            for entry in found:
                if entry.key == "state":
                    state = self.state(entry)
                else:
                    self.flatten(entry.key, entry.value, entry.line)
        spec = self.finish(state, structured)
        problems += sorted(self.problems, key=lambda problem: problem.line or 0)
        return spec

    def structured(self, found: list[Entry]) -> State | None:
        by_key = {entry.key: entry for entry in found}
        for entry in found:
            if entry.key not in STRUCTURED_KEYS:
                close = _closest_key(entry.key)
                hint = f"did you mean {close}?" if close else "connector settings go under config:"
                listed = ", ".join(STRUCTURED_KEYS)
                self.problem(entry.key, f"unknown key; {hint} (the keys are {listed})", entry.line)
                if close:
                    self.misspelt.add(close)
        config = by_key.get("config")
        if config is not None and not is_null(config.value):
            if isinstance(config.value, MappingNode):
                self.flatten("", config.value, config.line)
            else:
                self.problem("config", "must be a mapping of Kafka Connect settings", config.line)
        if "name" in by_key:
            name = self.scalar(by_key["name"])
            if name is not None and "name" in self.values and self.values["name"] != name:
                message = f"differs from config's name at line {self.lines['name']}"
                self.problem("name", message, by_key["name"].line)
            elif name is not None and "name" not in self.values:
                self.put("name", name, by_key["name"].line)
        for key, flat in (("class", "connector.class"), ("tasks_max", "tasks.max")):
            if key in by_key and (value := self.scalar(by_key[key])) is not None:
                self.put(flat, value, by_key[key].line, label=key)
        for key in ("transforms", "predicates", "errors"):
            part = by_key.get(key)
            if part is None or is_null(part.value):
                continue
            if key == "errors" and not isinstance(part.value, MappingNode):
                message = "must be a mapping (tolerance:, log.enable:, deadletterqueue:, …)"
                self.problem(key, message, part.line)
            else:
                self.flatten(key, part.value, part.line)
        return self.state(by_key["state"]) if "state" in by_key else "running"

    def state(self, entry: Entry) -> State | None:
        value = self.scalar(entry)
        for state in STATES:
            if value is not None and value.lower() == state:
                return state
        if value is not None:
            self.problem("state", f"must be running, paused or stopped, not {value!r}", entry.line)
        return None

    def finish(self, state: State | None, structured: bool) -> ConnectorSpec | None:
        reported = {problem.key for problem in self.problems} | self.misspelt
        name = self.values.get("name")
        if name is None and "name" not in reported:
            self.problem("name", "missing: every connector needs a name", line(self.node))
        elif name is not None and (not name.strip() or re.search(r"[\x00-\x1f\x7f]", name)):
            message = "must be non-empty text without control characters"
            self.problem("name", message, self.lines["name"])
        class_key = "class" if structured else "connector.class"
        if "connector.class" not in self.values and class_key not in reported:
            self.problem(class_key, _MISSING_CLASS, line(self.node))
        tasks_max = 1
        raw = self.values.setdefault("tasks.max", "1")
        if re.fullmatch(r"\s*[0-9]+\s*", raw) and int(raw) >= 1:
            tasks_max = int(raw)
        else:
            shown = HIDDEN if "tasks.max" in self.secrets else repr(raw)
            label = self.labels.get("tasks.max", "tasks.max")
            self.problem(
                label, f"must be a whole number of at least 1, not {shown}", self.lines["tasks.max"]
            )
        if self.problems or name is None or state is None:
            return None
        config = {key: self.values[key] for key in ("name", "connector.class")}
        config["tasks.max"] = str(tasks_max)
        config.update((key, value) for key, value in self.values.items() if key not in config)
        return ConnectorSpec(
            name=name,
            connector_class=self.values["connector.class"],
            tasks_max=tasks_max,
            state=state,
            config=config,
            source=self.source,
            line=line(self.node),
            key_lines=dict(self.lines),
            secret_keys=frozenset(self.secrets),
            labels=dict(self.labels),
        )

    def put(self, key: str, value: str, at: int, label: str | None = None) -> None:
        """Set one flat key, resolving its placeholders."""
        label = label or key
        if key in self.values:
            first = self.labels.get(key, key)
            also = f" as {first}" if first != label else ""
            self.problem(label, f"set twice (also{also} at line {self.lines[key]})", at)
            return
        try:
            value, secret = self.resolver.resolve(value)
        except ValueError as error:
            self.problem(label, str(error), at)
            return
        self.values[key], self.lines[key] = value, at
        if label != key:
            self.labels[key] = label
        if secret:
            self.secrets.add(key)

    def scalar(self, entry: Entry) -> str | None:
        """A structured key's single value (None after reporting a problem)."""
        if not isinstance(entry.value, ScalarNode):
            self.problem(entry.key, "must be a single value, not a list or mapping", entry.line)
            return None
        return self.text(entry.key, entry.value, entry.line)

    def text(self, key: str, node: ScalarNode, at: int) -> str | None:
        try:
            value = text(node)
        except ValueError as error:
            self.problem(key, str(error), at)
            return None
        if value is None:
            self.problem(key, "has no value (write '' for an empty one)", at)
        return value

    def flatten(self, key: str, node: Node, at: int) -> None:
        """Add ``node`` under ``key``: mappings join keys with dots, lists join with commas."""
        if key in _ALIASED and (
            isinstance(node, MappingNode)
            or (
                isinstance(node, SequenceNode)
                and any(isinstance(i, MappingNode) for i in node.value)
            )
        ):
            self.aliased(key, node, at)
        elif isinstance(node, MappingNode):
            prefix = f"{key}." if key else ""
            for entry in entries(node, self.source, self.problems, prefix):
                self.flatten(prefix + entry.key, entry.value, entry.line)
        elif isinstance(node, SequenceNode):
            items = []
            for item in node.value:
                if not isinstance(item, ScalarNode):
                    self.problem(key, "a list may hold only plain values", line(item))
                    return
                value = self.text(key, item, line(item))
                if value is None:
                    return
                if "," in value:
                    self.problem(key, "a list item contains a comma; write one string", line(item))
                    return
                items.append(value)
            self.put(key, ",".join(items), at)
        elif isinstance(node, ScalarNode) and (value := self.text(key, node, at)) is not None:
            self.put(key, value, at)

    def aliased(self, key: str, node: MappingNode | SequenceNode, at: int) -> None:
        """``transforms``/``predicates`` as a list of ``{name: alias, type: ..., ...}`` or as a
        mapping ``alias: {type: ..., ...}``: Kafka's alias list plus ``key.alias.setting``."""
        aliases: dict[str, int] = {}
        settings: list[tuple[str, list[Entry]]] = []
        if isinstance(node, SequenceNode):
            for item in node.value:
                if not isinstance(item, MappingNode):
                    message = "write every item as a mapping with name: and type:"
                    self.problem(key, message, line(item))
                    continue
                found = entries(item, self.source, self.problems, f"{key}.")
                named = [entry for entry in found if entry.key == "name"]
                if not named:
                    self.problem(key, "an item has no name: (its alias)", line(item))
                    continue
                alias = self.scalar(Entry(f"{key}.name", named[0].value, named[0].line))
                if alias is not None and self.alias(key, alias, named[0].line, aliases):
                    settings.append((alias, [entry for entry in found if entry.key != "name"]))
        else:
            for entry in entries(node, self.source, self.problems, f"{key}."):
                if not isinstance(entry.value, MappingNode):
                    message = "must be a mapping of settings (type: ...)"
                    self.problem(f"{key}.{entry.key}", message, entry.line)
                elif self.alias(key, entry.key, entry.line, aliases):
                    found = entries(entry.value, self.source, self.problems, f"{key}.{entry.key}.")
                    settings.append((entry.key, found))
        self.put(key, ",".join(aliases), at)
        for alias, found in settings:
            for entry in found:
                self.flatten(f"{key}.{alias}.{entry.key}", entry.value, entry.line)

    def alias(self, key: str, alias: str, at: int, aliases: dict[str, int]) -> bool:
        if not alias or re.search(r"[\s,]", alias):
            self.problem(key, f"alias {alias!r} must be non-empty, without spaces or commas", at)
        elif alias in aliases:
            self.problem(key, f"duplicate alias {alias!r} (first at line {aliases[alias]})", at)
        else:
            aliases[alias] = at
            return True
        return False
