"""Reading a ``sluice.yaml`` into a :class:`~sluice.up.spec.Deployment`, checked whole.

Every problem is collected and reported at once as a
:class:`~sluice.connect.deploy.DeploymentError`, each at ``file:line: key: message``, before
anything starts. Paths written in the file (``app:``, a connector ``path:``) are relative to
the file's folder; connector settings are passed to the worker as written.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "sluice.yaml").write_text("topics:\\n  - name: orders\\n    partitions: zero\\n")
>>> try:
...     load(folder / "sluice.yaml")
... except DeploymentError as error:
...     print(error.line, error.key, error.reason)
3 topics[0].partitions must be a whole number >= 1, not 'zero'
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sluice.connect.deploy import ConnectorSpec, DeploymentError, from_nodes
from sluice.connect.deploy import load as load_connectors
from sluice.errors import ConfigError
from sluice.up.security_section import SecuritySection
from sluice.up.spec import (
    EMBEDDED_ZOOKEEPER,
    RESTART_POLICIES,
    BrokerNode,
    BrokerSpec,
    ConnectSpec,
    Deployment,
    ProgramKind,
    ProgramSpec,
    RestartPolicy,
    RestProxySpec,
    SchemaRegistrySpec,
    SchemaSpec,
    TopicSpec,
)
from sluice.yaml_positions import Entry, compose, entries, is_null, line, text

__all__ = ["load"]

_SECTIONS = (
    "broker",
    "topics",
    "connect",
    "connectors",
    "streams",
    "processes",
    "security",
    "schema_registry",
    "rest_proxy",
)
_BROKER = (
    "listen",
    "data_dir",
    "config",
    "metrics",
    "bootstrap_servers",
    "brokers",
    "zookeeper",
    "zookeeper_listen",
    "rebalance_on_add",
)
_NODE = ("id", "listen", "data_dir", "rack", "metrics")
# set for each broker of a cluster by `sluice up` itself
_PER_BROKER = ("broker.id", "node.id", "zookeeper.connect", "listeners", "log.dirs", "log.dir")
_TOPIC = ("name", "partitions", "replication_factor", "config", "key_schema", "value_schema")
_SCHEMA = ("file", "type")
_SCHEMA_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}
_CONNECT = ("rest", "group", "config", "metrics")
_REGISTRY = ("listen", "group", "topic")
_REST_PROXY = ("listen",)
_PROGRAM = ("name", "app", "module", "args", "instances", "environment", "restart")
_STREAMS = (*_PROGRAM, "application_id", "metrics", "config")
_DEFAULT_RESTART: dict[ProgramKind, RestartPolicy] = {"streams": "always", "process": "on-failure"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ADDRESS = re.compile(r"(?P<host>[^\s:]*|\[[0-9a-fA-F:]+\]):(?P<port>\d{1,5})")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")

T = TypeVar("T")


def load(path: Path) -> Deployment:
    """The deployment of ``path``; raises DeploymentError listing every problem."""
    reader = _Reader(path)
    deployment = reader.read()
    if reader.problems:
        # in the order of the file (a connector file named by path: after it)
        order = sorted(reader.problems, key=lambda p: (p.source != str(path), p.line or 0))
        raise DeploymentError(order)
    assert deployment is not None
    return deployment


class _Reader:
    """Walks the file's nodes, building the parts and collecting problems."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.source = str(path)
        self.base = path.parent
        self.problems: list[ConfigError] = []

    def problem(self, key: str | None, message: str, at: int | None) -> None:
        self.problems.append(ConfigError(message, key=key, source=self.source, line=at))

    def read(self) -> Deployment | None:
        try:
            source_text = self.path.read_text(encoding="utf-8")
        except OSError as error:
            self.problem(None, f"cannot read: {error.strerror}", None)
            return None
        except UnicodeDecodeError:
            self.problem(None, "cannot read: not UTF-8 text", None)
            return None
        try:
            documents = compose(source_text, self.source)
        except ConfigError as error:
            self.problems.append(error)
            return None
        if len(documents) != 1 or not isinstance(documents[0], MappingNode):
            at = line(documents[1]) if len(documents) > 1 else None
            self.problem(None, "expected one mapping of broker:, topics:, connect:, …", at)
            return None
        sections = self.mapping(documents[0], "", _SECTIONS)
        broker = self.section(sections, "broker", self.broker) or BrokerSpec()
        topics = self.section(sections, "topics", lambda e: self.items(e, self.topic)) or ()
        connectors = self.section(sections, "connectors", self.connectors) or ()
        connect = self.section(sections, "connect", self.connect)
        if connect is None and connectors and "connect" not in sections:
            connect = ConnectSpec()
        elif connectors and connect is None:
            self.problem("connect", "connectors need a Connect worker", sections["connect"].line)
        programs: list[ProgramSpec] = []
        kinds: tuple[tuple[ProgramKind, str], ...] = (
            ("streams", "streams"),
            ("process", "processes"),
        )
        for kind, key in kinds:
            entry = sections.get(key)
            if entry is not None and not is_null(entry.value):
                programs += self.items(entry, self.program(kind)) or ()
        self.unique([(p.name, "program", p.line) for p in programs], "streams/processes")
        self.unique([(t.name, "topic", t.line) for t in topics], "topics")
        security = self.section(sections, "security", SecuritySection(self).read)
        registry = self.section(sections, "schema_registry", self.schema_registry)
        proxy = self.section(sections, "rest_proxy", self.rest_proxy)
        if registry is None and "schema_registry" in sections:
            registry = SchemaRegistrySpec()  # `schema_registry:` alone: the defaults
        declaring = [t for t in topics if t.schemas()]
        if declaring and registry is None:
            self.problem(
                "topics",
                f"topic {declaring[0].name} declares a schema: add a schema_registry: section "
                "to register it in",
                declaring[0].line,
            )
        if proxy is None and "rest_proxy" in sections:
            proxy = RestProxySpec()
        return Deployment(
            self.path,
            broker,
            tuple(topics),
            connect,
            connectors,
            tuple(programs),
            security,
            registry,
            proxy,
        )

    # -- sections -------------------------------------------------------------------------
    def section(
        self, sections: dict[str, Entry], key: str, build: Callable[[Entry], T | None]
    ) -> T | None:
        entry = sections.get(key)
        if entry is None or is_null(entry.value):
            return None
        return build(entry)

    def broker(self, entry: Entry) -> BrokerSpec | None:
        keys = self.mapping(entry.value, "broker.", _BROKER)
        if not keys and not isinstance(entry.value, MappingNode):
            return None
        if "bootstrap_servers" in keys:
            for other in keys.keys() - {"bootstrap_servers"}:
                message = "an external broker (bootstrap_servers:) takes nothing else"
                self.problem(f"broker.{other}", message, keys[other].line)
            servers = self.scalar(keys["bootstrap_servers"], "broker.bootstrap_servers")
            return BrokerSpec(bootstrap_servers=servers) if servers else None
        listen = self.address(keys.get("listen"), "broker.listen") or BrokerSpec.listen
        data_dir = self.scalar(keys.get("data_dir"), "broker.data_dir")
        spec = BrokerSpec(
            listen=listen,
            data_dir=Path(data_dir) if data_dir else BrokerSpec.data_dir,
            config=self.settings(keys.get("config"), "broker.config"),
            metrics=self.address(keys.get("metrics"), "broker.metrics"),
        )
        zookeeper = self.scalar(keys.get("zookeeper"), "broker.zookeeper")
        if zookeeper is None:
            for key in ("brokers", "zookeeper_listen", "rebalance_on_add"):
                if key in keys:
                    message = (
                        "a cluster needs zookeeper: (embedded, or HOST:PORT[/CHROOT] of an "
                        "existing ensemble)"
                    )
                    self.problem(f"broker.{key}", message, keys[key].line)
            return spec
        zookeeper_listen = self.address(keys.get("zookeeper_listen"), "broker.zookeeper_listen")
        if zookeeper != EMBEDDED_ZOOKEEPER:
            if zookeeper_listen is not None:
                message = "only an embedded ZooKeeper (zookeeper: embedded) listens here"
                self.problem("broker.zookeeper_listen", message, keys["zookeeper_listen"].line)
            if _ADDRESS.match(zookeeper.split(",")[0]) is None:
                message = f"must be embedded or HOST:PORT[,HOST:PORT…][/CHROOT], not {zookeeper!r}"
                self.problem("broker.zookeeper", message, keys["zookeeper"].line)
        for name, _ in spec.config:
            if name in _PER_BROKER:
                message = "set for each broker by sluice up (brokers:, listen:, data_dir:)"
                self.problem(f"broker.config.{name}", message, keys["config"].line)
        return replace(
            spec,
            zookeeper=zookeeper,
            zookeeper_listen=zookeeper_listen or BrokerSpec.zookeeper_listen,
            nodes=self.nodes(keys.get("brokers"), spec),
            rebalance_on_add=self.flag(keys.get("rebalance_on_add"), "broker.rebalance_on_add"),
        )

    def nodes(self, entry: Entry | None, spec: BrokerSpec) -> tuple[BrokerNode, ...]:
        """``brokers: N`` (ids 1…N, ports, data dirs and metrics ports counted up from the
        broker's) or a list of brokers, each key missing derived the same way."""
        given: list[dict[str, Entry]] = []
        if entry is None:
            given = [{}]
        elif isinstance(entry.value, SequenceNode):
            given = [
                self.mapping(item, f"broker.brokers[{i}].", _NODE)
                for i, item in enumerate(entry.value.value)
            ]
            if not given:
                self.problem("broker.brokers", "must list at least one broker", entry.line)
        else:
            count = self.count(entry, "broker.brokers")
            given = [{} for _ in range(count or 0)]
        nodes = []
        for index, keys in enumerate(given):
            where = f"broker.brokers[{index}]"
            ident = index + 1
            if "id" in keys:
                value = self.scalar(keys["id"], where + ".id")
                if value is None or not value.isdigit():
                    self.problem(
                        where + ".id",
                        f"must be a whole number >= 0, not {value!r}",
                        keys["id"].line,
                    )
                else:
                    ident = int(value)
            data_dir = self.scalar(keys.get("data_dir"), where + ".data_dir")
            nodes.append(
                BrokerNode(
                    id=ident,
                    listen=self.address(keys.get("listen"), where + ".listen")
                    or _port_plus(spec.listen, index),
                    data_dir=Path(data_dir) if data_dir else spec.data_dir / f"broker-{ident}",
                    rack=self.scalar(keys.get("rack"), where + ".rack"),
                    metrics=self.address(keys.get("metrics"), where + ".metrics")
                    or (None if spec.metrics is None else _port_plus(spec.metrics, index)),
                )
            )
        at = line(entry.value) if entry is not None else None
        for what, values in (
            ("id", [str(n.id) for n in nodes]),
            ("listen", [n.listen for n in nodes]),
            ("data_dir", [str(n.data_dir) for n in nodes]),
        ):
            doubled = sorted({v for v in values if values.count(v) > 1})
            if doubled:
                self.problem(
                    "broker.brokers", f"two brokers with the same {what}: {', '.join(doubled)}", at
                )
        return tuple(nodes)

    def topic(self, node: Node, where: str) -> TopicSpec | None:
        keys = self.mapping(node, where + ".", _TOPIC)
        name = self.name(keys.get("name"), where + ".name", line(node))
        partitions = keys.get("partitions")
        count = None if partitions is None else self.count(partitions, where + ".partitions")
        factor = keys.get("replication_factor")
        replicas = None if factor is None else self.count(factor, where + ".replication_factor")
        config = self.settings(keys.get("config"), where + ".config")
        schemas = {
            field: self.schema(keys[field], f"{where}.{field}")
            for field in ("key_schema", "value_schema")
            if field in keys
        }
        if name is None:
            return None
        return TopicSpec(
            name,
            count,
            config,
            line(node),
            replicas,
            schemas.get("key_schema"),
            schemas.get("value_schema"),
        )

    def schema(self, entry: Entry, key: str) -> SchemaSpec | None:
        """A topic's schema: ``FILE`` (its type from the extension: .avsc, .json, .proto) or
        ``{file: FILE, type: AVRO|JSON|PROTOBUF}``; the file must parse as that type."""
        from sluice.schemas.formats import InvalidSchemaError, format_named

        if isinstance(entry.value, ScalarNode):
            written, given = self.scalar(entry, key), None
        else:
            keys = self.mapping(entry.value, key + ".", _SCHEMA)
            written = self.scalar(keys.get("file"), key + ".file")
            given = self.scalar(keys.get("type"), key + ".type")
            if "file" not in keys:
                self.problem(key, "missing: file:", entry.line)
        if written is None:
            return None
        path = self.base / written
        schema_type = (given or _SCHEMA_TYPES.get(path.suffix.lower(), "")).upper()
        if schema_type not in _SCHEMA_TYPES.values():
            self.problem(
                key,
                f"give type: AVRO, JSON or PROTOBUF (or a .avsc, .json or .proto file), "
                f"not {given or path.suffix!r}",
                entry.line,
            )
            return None
        try:
            format_named(schema_type).parse(path.read_text(encoding="utf-8"), {})
        except OSError as error:
            self.problem(key, f"cannot read {path}: {error.strerror}", entry.line)
            return None
        except (UnicodeDecodeError, InvalidSchemaError) as error:
            self.problem(key, f"{path}: not a valid {schema_type} schema: {error}", entry.line)
            return None
        return SchemaSpec(path, schema_type)

    def connect(self, entry: Entry) -> ConnectSpec | None:
        keys = self.mapping(entry.value, "connect.", _CONNECT)
        group = self.scalar(keys.get("group"), "connect.group")
        return ConnectSpec(
            rest=self.address(keys.get("rest"), "connect.rest") or ConnectSpec.rest,
            group=group or ConnectSpec.group,
            config=self.settings(keys.get("config"), "connect.config"),
            metrics=self.address(keys.get("metrics"), "connect.metrics"),
        )

    def schema_registry(self, entry: Entry) -> SchemaRegistrySpec | None:
        keys = self.mapping(entry.value, "schema_registry.", _REGISTRY)
        default = SchemaRegistrySpec()
        return SchemaRegistrySpec(
            listen=self.address(keys.get("listen"), "schema_registry.listen") or default.listen,
            group=self.scalar(keys.get("group"), "schema_registry.group") or default.group,
            topic=self.scalar(keys.get("topic"), "schema_registry.topic") or default.topic,
        )

    def rest_proxy(self, entry: Entry) -> RestProxySpec | None:
        keys = self.mapping(entry.value, "rest_proxy.", _REST_PROXY)
        listen = self.address(keys.get("listen"), "rest_proxy.listen")
        return RestProxySpec(listen=listen or RestProxySpec().listen)

    def connectors(self, entry: Entry) -> tuple[ConnectorSpec, ...]:
        if not isinstance(entry.value, SequenceNode):
            self.problem("connectors", "must be a list of connectors", entry.line)
            return ()
        inline: list[Node] = []
        specs: list[ConnectorSpec] = []
        for index, item in enumerate(entry.value.value):
            keys = [k.value for k, _ in item.value] if isinstance(item, MappingNode) else []
            if keys != ["path"]:
                inline.append(item)
                continue
            where = f"connectors[{index}].path"
            relative = self.scalar(entries(item, self.source, self.problems)[0], where)
            if relative is None:
                continue
            try:
                specs += load_connectors(self.base / relative, resolve=False)
            except DeploymentError as error:
                self.problems += error.problems
        specs += from_nodes(inline, self.source, self.base, self.problems)
        self.check_classes(specs)
        seen: dict[str, ConnectorSpec] = {}
        for spec in specs:
            first = seen.setdefault(spec.name, spec)
            if first is not spec:
                message = f"duplicate connector name {spec.name!r} (also at {first.where('name')})"
                self.problems.append(spec.error("name", message))
        return tuple(specs)

    def check_classes(self, specs: list[ConnectorSpec]) -> None:
        """Each connector checked against its class, as the worker will (plugins found here)."""
        from sluice.connect.deploy import resolve_class
        from sluice.connect.runtime.plugins import connector_class, known_plugins

        known = known_plugins()
        for spec in specs:
            try:
                resolve_class(spec, connector_class, known=known)
            except DeploymentError as error:
                self.problems += error.problems

    def program(self, kind: ProgramKind) -> Callable[[Node, str], ProgramSpec | None]:
        def build(node: Node, where: str) -> ProgramSpec | None:
            keys = self.mapping(node, where + ".", _STREAMS if kind == "streams" else _PROGRAM)
            name = self.name(keys.get("name"), where + ".name", line(node))
            script, module = self.target(keys, where, line(node))
            args = self.strings(keys.get("args"), where + ".args")
            instances = keys.get("instances")
            count = 1 if instances is None else self.count(instances, where + ".instances")
            application_id = self.scalar(keys.get("application_id"), where + ".application_id")
            restart = self.restart(keys.get("restart"), where + ".restart")
            config = self.streams_config(keys.get("config"), where + ".config")
            if name is None or count is None or (script is None and module is None):
                return None
            return ProgramSpec(
                kind,
                name,
                script=script,
                module=module,
                args=args,
                instances=count,
                environment=self.settings(keys.get("environment"), where + ".environment"),
                application_id=application_id or (name if kind == "streams" else None),
                metrics=self.address(keys.get("metrics"), where + ".metrics"),
                config=config,
                restart=restart or _DEFAULT_RESTART[kind],
                line=line(node),
            )

        return build

    def streams_config(self, entry: Entry | None, key: str) -> tuple[tuple[str, str], ...]:
        """A Streams app's settings; each name must be one Kafka Streams (or Sluice) knows."""
        from sluice.streams.config import settings_of
        from sluice.streams.errors import StreamsError

        found = self.settings(entry, key)
        for name, value in found:
            try:
                settings_of({name: value})
            except StreamsError as error:
                at = entry.line if entry is not None else None
                self.problem(f"{key}.{name}", str(error), at)
        return found

    def restart(self, entry: Entry | None, key: str) -> RestartPolicy | None:
        value = self.scalar(entry, key)
        if value is None or entry is None:
            return None
        for policy in RESTART_POLICIES:
            if value == policy:
                return policy
        known = ", ".join(RESTART_POLICIES)
        written = entry.value.value if isinstance(entry.value, ScalarNode) else value
        hint = " (docker-compose's 'no' is 'never')" if written.lower() == "no" else ""
        self.problem(key, f"must be one of {known}, not {written!r}{hint}", entry.line)
        return None

    def target(self, keys: dict[str, Entry], where: str, at: int) -> tuple[Path | None, str | None]:
        if ("app" in keys) == ("module" in keys):
            self.problem(where, "needs either app: (a Python file) or module: (a module)", at)
            return None, None
        if "app" in keys:
            relative = self.scalar(keys["app"], where + ".app")
            if relative is None:
                return None, None
            script = self.base / relative
            if not script.is_file():
                self.problem(where + ".app", f"no such file: {script}", keys["app"].line)
                return None, None
            return script.resolve(), None
        module = self.scalar(keys["module"], where + ".module")
        if module is not None and not _MODULE.fullmatch(module):
            self.problem(where + ".module", f"not a module name: {module!r}", keys["module"].line)
            return None, None
        return None, module

    # -- values ---------------------------------------------------------------------------
    def items(self, entry: Entry, build: Callable[[Node, str], T | None]) -> tuple[T, ...] | None:
        if not isinstance(entry.value, SequenceNode):
            self.problem(entry.key, "must be a list", entry.line)
            return None
        built = (build(node, f"{entry.key}[{i}]") for i, node in enumerate(entry.value.value))
        return tuple(item for item in built if item is not None)

    def mapping(self, node: Node, prefix: str, allowed: tuple[str, ...]) -> dict[str, Entry]:
        """The entries of a mapping of known keys (unknown ones reported, with a suggestion)."""
        if not isinstance(node, MappingNode):
            self.problem(prefix.rstrip(".") or None, "must be a mapping", line(node))
            return {}
        found = {}
        for entry in entries(node, self.source, self.problems, prefix):
            if entry.key not in allowed:
                close = difflib.get_close_matches(entry.key, allowed, 1, 0.6)
                hint = f" (did you mean {close[0]}?)" if close else ""
                known = ", ".join(allowed)
                self.problem(prefix + entry.key, f"unknown key{hint}; known: {known}", entry.line)
                continue
            found[entry.key] = entry
        return found

    def scalar(self, entry: Entry | None, key: str) -> str | None:
        if entry is None:
            return None
        if not isinstance(entry.value, ScalarNode):
            self.problem(key, "must be a single value", entry.line)
            return None
        try:
            value = text(entry.value)
        except ValueError as error:
            self.problem(key, str(error), entry.line)
            return None
        if value is None or value == "":
            self.problem(key, "must not be empty", entry.line)
            return None
        return value

    def name(self, entry: Entry | None, key: str, at: int) -> str | None:
        if entry is None:
            self.problem(key.rpartition(".")[0], "missing: name:", at)
            return None
        value = self.scalar(entry, key)
        if value is not None and not _NAME.fullmatch(value):
            message = f"{value!r} is not a name (letters, digits, '.', '_', '-')"
            self.problem(key, message, entry.line)
            return None
        return value

    def flag(self, entry: Entry | None, key: str) -> bool:
        value = self.scalar(entry, key)
        if value is None or entry is None:
            return False
        if value.lower() not in ("true", "false"):
            self.problem(key, f"must be true or false, not {value!r}", entry.line)
        return value.lower() == "true"

    def count(self, entry: Entry, key: str) -> int | None:
        value = self.scalar(entry, key)
        if value is None:
            return None
        if not value.isdigit() or int(value) < 1:
            self.problem(key, f"must be a whole number >= 1, not {value!r}", entry.line)
            return None
        return int(value)

    def address(self, entry: Entry | None, key: str) -> str | None:
        value = self.scalar(entry, key)
        if value is None or entry is None:
            return None
        match = _ADDRESS.fullmatch(value)
        if match is None or not 0 < int(match["port"]) < 65536:
            self.problem(key, f"must be HOST:PORT, not {value!r}", entry.line)
            return None
        return value if match["host"] else f"127.0.0.1{value}"

    def strings(self, entry: Entry | None, key: str) -> tuple[str, ...]:
        if entry is None:
            return ()
        if not isinstance(entry.value, SequenceNode):
            self.problem(key, "must be a list", entry.line)
            return ()
        values = []
        for item in entry.value.value:
            found = self.scalar(Entry(key, item, line(item)), key)
            if found is not None:
                values.append(found)
        return tuple(values)

    def settings(self, entry: Entry | None, key: str) -> tuple[tuple[str, str], ...]:
        """A mapping of settings, nested keys joined with dots (``a: {b: 1}`` is ``a.b=1``)."""
        if entry is None or is_null(entry.value):
            return ()
        if not isinstance(entry.value, MappingNode):
            self.problem(key, "must be a mapping of settings", entry.line)
            return ()
        found: list[tuple[str, str]] = []
        for item in entries(entry.value, self.source, self.problems, key + "."):
            if isinstance(item.value, MappingNode):
                nested = self.settings(item, f"{key}.{item.key}")
                found += [(f"{item.key}.{k}", v) for k, v in nested]
                continue
            value = self.scalar(item, f"{key}.{item.key}")
            if value is not None:
                found.append((item.key, value))
        return tuple(found)

    def unique(self, names: list[tuple[str, str, int]], key: str) -> None:
        first: dict[str, int] = {}
        for name, what, at in names:
            if name in first:
                message = f"the {what} name {name!r} is used twice (first at line {first[name]})"
                self.problem(key, message, at)
            first.setdefault(name, at)


def _port_plus(address: str, offset: int) -> str:
    """``HOST:PORT`` with the port ``offset`` higher (the brokers of ``brokers: N``)."""
    host, _, port = address.rpartition(":")
    return f"{host}:{int(port) + offset}"
