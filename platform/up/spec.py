"""What a ``sluice.yaml`` declares: the parts of one deployment, as plain values.

The loader (:mod:`sluice.up.loader`) builds a :class:`Deployment` from the file and checks it
whole; the supervisor (:mod:`sluice.up.supervisor`) makes the machine match it. Two deployments
compare equal part by part, which is how a re-read file is reconciled: only the parts that
changed are restarted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sluice.connect.deploy import ConnectorSpec

__all__ = [
    "DEAD_LETTER_TOPIC",
    "EMBEDDED_ZOOKEEPER",
    "RESTART_POLICIES",
    "ZOOKEEPER_CHROOT",
    "AclSpec",
    "BrokerNode",
    "BrokerSpec",
    "ConnectSpec",
    "Deployment",
    "ProgramSpec",
    "RestartPolicy",
    "SecuritySpec",
    "TopicSpec",
    "UserSpec",
]

RestartPolicy = Literal["always", "on-failure", "never"]
"""When a child that exits is started again: always, only when it did not exit 0, or never."""
RESTART_POLICIES: tuple[RestartPolicy, ...] = ("always", "on-failure", "never")
DEAD_LETTER_TOPIC = "errors.deadletterqueue.topic.name"
"""The Streams setting (KIP-1034) that names an app's dead-letter topic."""


EMBEDDED_ZOOKEEPER = "embedded"
"""``zookeeper: embedded``: ``sluice up`` runs a ZooKeeper of its own for the cluster."""
ZOOKEEPER_CHROOT = "/sluice"
"""Where an embedded ZooKeeper keeps the cluster (``zookeeper.connect``'s chroot)."""


@dataclass(frozen=True)
class BrokerNode:
    """One broker of a cluster that ``sluice up`` runs (derived from ``brokers: N`` or given
    per broker)."""

    id: int
    listen: str
    data_dir: Path
    rack: str | None = None
    metrics: str | None = None

    @property
    def name(self) -> str:
        """The child's name: ``broker-<id>``."""
        return f"broker-{self.id}"


@dataclass(frozen=True)
class BrokerSpec:
    """The broker: embedded (started here) unless ``bootstrap_servers`` names a cluster; a
    cluster of ``nodes`` on ZooKeeper when ``zookeeper`` is set."""

    listen: str = "127.0.0.1:9092"
    data_dir: Path = Path(".sluice/data")
    config: tuple[tuple[str, str], ...] = ()
    """``server.properties`` keys, in file order."""
    metrics: str | None = None
    """``HOST:PORT`` of the broker's Prometheus endpoint, or None."""
    bootstrap_servers: str | None = None
    """An existing Sluice or Kafka cluster: nothing is started."""
    zookeeper: str | None = None
    """None: one broker without ZooKeeper; :data:`EMBEDDED_ZOOKEEPER`; or the
    ``HOST:PORT[,…][/CHROOT]`` of an existing ensemble."""
    zookeeper_listen: str = "127.0.0.1:2181"
    """Where an embedded ZooKeeper listens."""
    nodes: tuple[BrokerNode, ...] = ()
    """The brokers of the cluster (empty without ``zookeeper``)."""
    rebalance_on_add: bool = False
    """Whether brokers added to a running cluster get a share of the replicas
    (``sluice brokers rebalance``); Kafka moves nothing onto a new broker by itself."""

    @property
    def embedded(self) -> bool:
        """Whether ``sluice up`` runs the broker itself."""
        return self.bootstrap_servers is None

    @property
    def clustered(self) -> bool:
        """Whether ``sluice up`` runs a cluster (brokers on ZooKeeper)."""
        return self.embedded and self.zookeeper is not None

    @property
    def zookeeper_connect(self) -> str | None:
        """The brokers' ``zookeeper.connect``."""
        if self.zookeeper == EMBEDDED_ZOOKEEPER:
            return self.zookeeper_listen + ZOOKEEPER_CHROOT
        return self.zookeeper

    @property
    def bootstrap(self) -> str:
        """What clients connect to."""
        if self.bootstrap_servers:
            return self.bootstrap_servers
        if self.nodes:
            return ",".join(node.listen for node in self.nodes)
        return self.listen


@dataclass(frozen=True)
class SchemaSpec:
    """A schema a topic declares for its keys or values: registered under the topic's subject
    (``<topic>-key`` / ``<topic>-value``, Confluent's TopicNameStrategy) at start."""

    file: Path
    schema_type: str = "AVRO"
    """Confluent's ``schemaType``: AVRO, JSON or PROTOBUF."""


@dataclass(frozen=True)
class TopicSpec:
    """A topic created, or altered to match, before anything else starts."""

    name: str
    partitions: int | None = None
    """None: the broker's ``num.partitions`` when created; left alone when it exists."""
    config: tuple[tuple[str, str], ...] = ()
    line: int = 0
    replication_factor: int | None = None
    """None: the broker's ``default.replication.factor`` when created."""
    key_schema: SchemaSpec | None = None
    value_schema: SchemaSpec | None = None

    def schemas(self) -> list[tuple[str, SchemaSpec]]:
        """The declared schemas by subject.

        >>> TopicSpec("orders", value_schema=SchemaSpec(Path("o.avsc"))).schemas()
        [('orders-value', SchemaSpec(file=PosixPath('o.avsc'), schema_type='AVRO'))]
        """
        declared = (("key", self.key_schema), ("value", self.value_schema))
        return [(f"{self.name}-{field}", spec) for field, spec in declared if spec is not None]


@dataclass(frozen=True)
class ConnectSpec:
    """One distributed Connect worker (its group may have more workers elsewhere)."""

    rest: str = "127.0.0.1:8083"
    group: str = "sluice-connect"
    config: tuple[tuple[str, str], ...] = ()
    """Worker properties under Kafka Connect's names."""
    metrics: str | None = None

    @property
    def url(self) -> str:
        """The worker's REST API: ``config``'s ``listeners`` (``https://…``) when set (it replaces
        ``rest`` for the worker too), a wildcard host asked on ``127.0.0.1``.

        >>> ConnectSpec().url, ConnectSpec(config=(("listeners", "https://0.0.0.0:8443"),)).url
        ('http://127.0.0.1:8083', 'https://127.0.0.1:8443')
        """
        listeners = dict(self.config).get("listeners", "").split(",")[0].strip()
        scheme, separator, address = listeners.partition("://")
        if not separator or scheme.lower() not in ("http", "https"):
            return f"http://{self.rest}"
        host, _, port = address.rstrip("/").rpartition(":")
        if host in ("", "0.0.0.0", "[::]", "::"):
            host = "127.0.0.1"
        return f"{scheme.lower()}://{host}:{port}"


def _url(listen: str) -> str:
    """``http://HOST:PORT`` of a listen address, a wildcard host asked on ``127.0.0.1``."""
    host, _, port = listen.rpartition(":")
    if host in ("", "0.0.0.0", "[::]", "::"):
        host = "127.0.0.1"
    return f"http://{host}:{port}"


@dataclass(frozen=True)
class SchemaRegistrySpec:
    """A schema registry (``sluice schema-registry start``) on the deployment's brokers, its
    schemas in ``topic``, its writer elected in ``group``.

    >>> SchemaRegistrySpec(listen="0.0.0.0:8081").url
    'http://127.0.0.1:8081'
    """

    listen: str = "127.0.0.1:8081"
    group: str = "schema-registry"
    topic: str = "_schemas"

    @property
    def url(self) -> str:
        return _url(self.listen)


@dataclass(frozen=True)
class RestProxySpec:
    """Confluent's REST Proxy API (``sluice rest-proxy start``) on the deployment's brokers
    (and its schema registry, when the file has one)."""

    listen: str = "127.0.0.1:8082"

    @property
    def url(self) -> str:
        return _url(self.listen)


ProgramKind = Literal["streams", "process"]


@dataclass(frozen=True)
class ProgramSpec:
    """A Python program run as ``instances`` child processes: a Streams app or another process.

    ``script`` is a file (run as ``python FILE``) or ``module`` a module (``python -m``);
    ``args`` follow it. Children get ``environment`` on top of the supervisor's environment,
    ``SLUICE_BOOTSTRAP`` (the broker), for Streams apps with ``metrics``,
    ``SLUICE_METRICS_LISTEN`` (the port plus the instance's index) and, for Streams apps with
    ``config``, ``SLUICE_STREAMS_CONFIG`` (the settings as one JSON object of strings, under
    Kafka Streams' names). ``restart`` is its restart policy (by default ``always`` for Streams
    apps, ``on-failure`` for other processes).
    """

    kind: ProgramKind
    name: str
    script: Path | None = None
    module: str | None = None
    args: tuple[str, ...] = ()
    instances: int = 1
    environment: tuple[tuple[str, str], ...] = ()
    application_id: str | None = None
    """A Streams app's application id (its consumer group), for status; default ``name``."""
    metrics: str | None = None
    config: tuple[tuple[str, str], ...] = ()
    """A Streams app's settings under Kafka Streams' names, in file order."""
    restart: RestartPolicy = "always"
    line: int = 0

    @property
    def dead_letter_topic(self) -> str | None:
        """The dead-letter topic its ``config`` names, if any."""
        return dict(self.config).get(DEAD_LETTER_TOPIC)

    def command(self, python: str) -> list[str]:
        """The command line of one instance."""
        target = [str(self.script)] if self.script is not None else ["-m", str(self.module)]
        return [python, *target, *self.args]


@dataclass(frozen=True)
class Deployment:
    """Everything a ``sluice.yaml`` declares."""

    source: Path
    broker: BrokerSpec = field(default_factory=BrokerSpec)
    topics: tuple[TopicSpec, ...] = ()
    connect: ConnectSpec | None = None
    connectors: tuple[ConnectorSpec, ...] = ()
    programs: tuple[ProgramSpec, ...] = ()
    """Streams apps first, then the other processes, in file order."""
    security: SecuritySpec | None = None
    """The ``security:`` section: the broker on SASL and every component a user of it."""
    schema_registry: SchemaRegistrySpec | None = None
    rest_proxy: RestProxySpec | None = None


SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def _quoted(value: str) -> str:
    """A JAAS option value, quoted (``\\`` and ``"`` escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class UserSpec:
    """A SCRAM user created (or its password set) at start; the password is never shown."""

    name: str
    password: str = field(repr=False)
    line: int = 0


@dataclass(frozen=True)
class AclSpec:
    """An ACL created at start (Kafka's model: principal, host, operation, permission on a
    resource pattern)."""

    principal: str
    resource_type: str
    """``topic``, ``group``, ``cluster`` or ``transactional_id``."""
    resource_name: str
    pattern: str = "literal"
    operations: tuple[str, ...] = ()
    permission: str = "allow"
    host: str = "*"
    line: int = 0


@dataclass(frozen=True)
class SecuritySpec:
    """The ``security:`` section: the broker's client listener is ``protocol`` (SASL_SSL or
    SASL_PLAINTEXT) with the ``mechanism`` users log in with, the authorizer on, ``admin`` a
    super user (PLAIN, ``sluice up``'s own login); ``users`` and ``acls`` are made at start;
    Connect and Streams apps log in as ``connect_user`` / ``streams_user``."""

    protocol: str = "SASL_SSL"
    mechanism: str = "SCRAM-SHA-512"
    keystore: Path | None = None
    """The broker's PEM key and certificate chain (SASL_SSL)."""
    truststore: Path | None = None
    """The CA clients trust the broker's certificate with (PEM)."""
    admin_user: str = "admin"
    admin_password: str = field(default="", repr=False)
    users: tuple[UserSpec, ...] = ()
    acls: tuple[AclSpec, ...] = ()
    connect_user: str | None = None
    streams_user: str | None = None

    @property
    def tls(self) -> bool:
        """Whether the listener is TLS."""
        return self.protocol == "SASL_SSL"

    def password_of(self, user: str) -> str:
        """The password of ``user`` (the admin or one of ``users``)."""
        if user == self.admin_user:
            return self.admin_password
        return next(u.password for u in self.users if u.name == user)

    def broker_config(self, clustered: bool = False) -> tuple[tuple[str, str], ...]:
        """The broker's ``server.properties`` keys for this security (its listener is given
        on the command line as ``<protocol>://HOST:PORT``). In a cluster the brokers also
        replicate on that listener, logging in to each other as the admin (PLAIN, a super
        user: ClusterAction) and checking each other's certificate with the CA."""
        listener = self.protocol.lower()
        password = _quoted(self.admin_password)
        own = f"username={_quoted(self.admin_user)} password={password} " if clustered else ""
        config = [
            ("sasl.enabled.mechanisms", ",".join(dict.fromkeys(["PLAIN", self.mechanism]))),
            (f"listener.name.{listener}.plain.sasl.jaas.config",
             f"{PLAIN} required {own}user_{self.admin_user}={password};"),
            ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer"),
            ("super.users", f"User:{self.admin_user}"),
        ]  # fmt: skip
        if self.keystore is not None:
            config.append(("ssl.keystore.location", str(self.keystore.absolute())))
        if clustered:
            config += [
                ("security.inter.broker.protocol", self.protocol),
                ("sasl.mechanism.inter.broker.protocol", "PLAIN"),
            ]
            if self.tls and self.truststore is not None:
                config.append(("ssl.truststore.location", str(self.truststore.absolute())))
        return tuple(config)

    def admin_client(self) -> dict[str, str]:
        """librdkafka settings of ``sluice up``'s own clients (the admin, PLAIN)."""
        config = {
            "security.protocol": self.protocol,
            "sasl.mechanism": "PLAIN",
            "sasl.username": self.admin_user,
            "sasl.password": self.admin_password,
        }
        if self.truststore is not None:
            config["ssl.ca.location"] = str(self.truststore.absolute())
        return config

    def client(self, user: str) -> dict[str, str]:
        """Kafka's client settings (Java keys) of a component logging in as ``user``."""
        mechanism = "PLAIN" if user == self.admin_user else self.mechanism
        module = PLAIN if mechanism == "PLAIN" else SCRAM
        password = _quoted(self.password_of(user))
        config = {
            "security.protocol": self.protocol,
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": f"{module} required username={_quoted(user)} password={password};",
        }
        if self.truststore is not None:
            config["ssl.truststore.location"] = str(self.truststore.absolute())
        return config
