"""Kafka's configuration keys: their types, defaults, validation, documentation and synonyms.

``TOPIC_KEYS`` are the per-topic keys (``retention.ms``), each with the broker-level synonym
that supplies its default (``log.retention.ms``); ``BROKER_KEYS`` are the keys of
``server.properties``. :mod:`sluice.broker.config` builds effective configurations.

>>> TOPIC_KEYS["retention.ms"].synonym
'log.retention.ms'
>>> BROKER_KEYS["num.partitions"].parse("3")
3
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sluice.errors import ConfigError

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigType(enum.IntEnum):
    """Kafka's ``ConfigType`` numbering, as DescribeConfigs v3+ reports it."""

    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """Kafka's ``ConfigSource`` numbering (DescribeConfigs)."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5


def _in(*allowed: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        values = value if isinstance(value, list) else [value]
        bad = [v for v in values if v not in allowed]
        return f"must be one of {', '.join(allowed)}" if bad or not values else None

    return check


def _at_least(low: int) -> Callable[[Any], str | None]:
    return lambda v: f"must be at least {low}" if v < low else None


def _between(low: float, high: float, *, also: int | None = None) -> Callable[[Any], str | None]:
    """Kafka's ``between(low, high)`` (with ``Either.of(also, ...)`` when ``also`` is given)."""

    def check(value: Any) -> str | None:
        if value == also or low <= value <= high:
            return None
        extra = f" or {also}" if also is not None else ""
        return f"must be between {low} and {high}{extra}"

    return check


_VERSION = re.compile(r"^\d+\.\d+(\.\d+)?(-IV\d+)?$")


def _message_format_version(value: Any) -> str | None:
    """Kafka's ``MetadataVersionValidator``: a release version such as ``3.0`` or ``3.0-IV1``."""
    return None if _VERSION.match(str(value)) else "must be a Kafka version such as 3.0-IV1"


_THROTTLED = re.compile(r"^\d+:\d+$")


def _throttled_replicas(value: Any) -> str | None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` pairs."""
    items = [str(v) for v in value]
    if items == ["*"] or all(_THROTTLED.match(v) for v in items):
        return None
    return "must be the wildcard (*) or a list of the form [PartitionId]:[BrokerId],..."


@dataclass(frozen=True)
class ConfigKey:
    """One configuration key: its type, default, validation and documentation."""

    name: str
    type: ConfigType
    default: Any
    doc: str
    synonym: str | None = None
    """The broker-level key that supplies the topic-level default."""
    check: Callable[[Any], str | None] | None = None
    no_effect: str | None = None
    """Why the key, valid in Kafka, changes nothing on a Sluice node (None: it is implemented).
    Such a key is validated, stored and described like any other."""

    def parse(self, raw: str | None, *, source: str | None = None, line: int | None = None) -> Any:
        """Turn the text of a value into a typed one, or raise :class:`ConfigError`."""
        if raw is None:
            return None
        text = raw.strip()
        try:
            value: Any
            match self.type:
                case ConfigType.BOOLEAN:
                    if text.lower() not in ("true", "false"):
                        raise ValueError("must be true or false")
                    value = text.lower() == "true"
                case ConfigType.INT | ConfigType.SHORT | ConfigType.LONG:
                    value = int(text)
                    limit = {ConfigType.INT: INT_MAX, ConfigType.SHORT: 2**15 - 1}.get(
                        self.type, LONG_MAX
                    )
                    if not -limit - 1 <= value <= limit:
                        raise ValueError(f"out of range for {self.type.name.lower()}")
                case ConfigType.DOUBLE:
                    value = float(text)
                case ConfigType.LIST:
                    value = [item.strip() for item in text.split(",") if item.strip()]
                case _:
                    value = text
        except ValueError as exc:
            reason = (
                str(exc)
                if "must" in str(exc) or "range" in str(exc)
                else (f"expected {self.type.name.lower()}, got {raw!r}")
            )
            raise ConfigError(reason, key=self.name, source=source, line=line) from None
        if self.check is not None and (problem := self.check(value)) is not None:
            raise ConfigError(f"{problem} (got {raw!r})", key=self.name, source=source, line=line)
        return value


def render(value: Any) -> str | None:
    """Render a typed value the way Kafka prints it (DescribeConfigs, the CLI).

    >>> render(["compact", "delete"]), render(True), render(None)
    ('compact,delete', 'true', None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


_COMPRESSION = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")

_NO_TIERING = "Sluice has no tiered (remote) storage"
_NO_THROTTLE = "Sluice does not replicate between brokers on one node"

TOPIC_KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in (
        ConfigKey(
            "cleanup.policy",
            ConfigType.LIST,
            ["delete"],
            "delete: old segments are removed by retention; compact: the latest value per "
            "key is kept.",
            "log.cleanup.policy",
            _in("delete", "compact"),
        ),
        ConfigKey(
            "compression.gzip.level",
            ConfigType.INT,
            -1,
            "gzip level (1-9, -1: the codec's default) when the broker compresses with gzip.",
            "compression.gzip.level",
            _between(1, 9, also=-1),
        ),
        ConfigKey(
            "compression.lz4.level",
            ConfigType.INT,
            9,
            "lz4 level (1-17) when the broker compresses with lz4.",
            "compression.lz4.level",
            _between(1, 17),
            "the lz4 block compressor Sluice uses (cramjam 2.14) ignores levels",
        ),
        ConfigKey(
            "compression.type",
            ConfigType.STRING,
            "producer",
            "Codec batches are stored with; 'producer' keeps what the producer sent.",
            "compression.type",
            _in(*_COMPRESSION),
        ),
        ConfigKey(
            "compression.zstd.level",
            ConfigType.INT,
            3,
            "zstd level (-131072 to 22) when the broker compresses with zstd.",
            "compression.zstd.level",
            _between(-131_072, 22),
        ),
        ConfigKey(
            "delete.retention.ms",
            ConfigType.LONG,
            86_400_000,
            "How long tombstones are kept in a compacted topic.",
            "log.cleaner.delete.retention.ms",
            _at_least(0),
        ),
        ConfigKey(
            "file.delete.delay.ms",
            ConfigType.LONG,
            60_000,
            "Delay before the files of a deleted segment (renamed *.deleted) are removed.",
            "log.segment.delete.delay.ms",
            _at_least(0),
        ),
        ConfigKey(
            "flush.messages",
            ConfigType.LONG,
            LONG_MAX,
            "fsync the log after this many messages.",
            "log.flush.interval.messages",
            _at_least(1),
        ),
        ConfigKey(
            "flush.ms",
            ConfigType.LONG,
            LONG_MAX,
            "fsync the log when its oldest unflushed message is this old.",
            "log.flush.interval.ms",
            _at_least(0),
        ),
        ConfigKey(
            "follower.replication.throttled.replicas",
            ConfigType.LIST,
            [],
            "Replicas whose follower fetches are throttled (partition:broker, or *).",
            None,
            _throttled_replicas,
            _NO_THROTTLE,
        ),
        ConfigKey(
            "index.interval.bytes",
            ConfigType.INT,
            4096,
            "Bytes of log between two offset-index entries.",
            "log.index.interval.bytes",
            _at_least(0),
        ),
        ConfigKey(
            "leader.replication.throttled.replicas",
            ConfigType.LIST,
            [],
            "Replicas whose leader side of replication is throttled (partition:broker, or *).",
            None,
            _throttled_replicas,
            _NO_THROTTLE,
        ),
        ConfigKey(
            "local.retention.bytes",
            ConfigType.LONG,
            -2,
            "Bytes kept locally when tiered storage is on (-2: retention.bytes).",
            "log.local.retention.bytes",
            _at_least(-2),
            _NO_TIERING,
        ),
        ConfigKey(
            "local.retention.ms",
            ConfigType.LONG,
            -2,
            "Time data is kept locally when tiered storage is on (-2: retention.ms).",
            "log.local.retention.ms",
            _at_least(-2),
            _NO_TIERING,
        ),
        ConfigKey(
            "max.compaction.lag.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Longest time a record stays uncompacted: a log whose first dirty record is older "
            "is compacted whatever its dirty ratio.",
            "log.cleaner.max.compaction.lag.ms",
            _at_least(1),
        ),
        ConfigKey(
            "max.message.bytes",
            ConfigType.INT,
            1_048_588,
            "Largest record batch the broker accepts.",
            "message.max.bytes",
            _at_least(0),
        ),
        ConfigKey(
            "message.downconversion.enable",
            ConfigType.BOOLEAN,
            True,
            "Down-convert batches for consumers of old Fetch versions.",
            "log.message.downconversion.enable",
            None,
            "Sluice serves Fetch v4 and later, all of which read v2 batches",
        ),
        ConfigKey(
            "message.format.version",
            ConfigType.STRING,
            "3.0-IV1",
            "Message format of the log (deprecated in Kafka 3.0, removed in 4.0).",
            "log.message.format.version",
            _message_format_version,
            "Sluice always writes v2 record batches",
        ),
        ConfigKey(
            "message.timestamp.after.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Largest amount a CreateTime timestamp may lie ahead of the broker's clock.",
            "log.message.timestamp.after.max.ms",
            _at_least(0),
        ),
        ConfigKey(
            "message.timestamp.before.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Largest amount a CreateTime timestamp may lie behind the broker's clock.",
            "log.message.timestamp.before.max.ms",
            _at_least(0),
        ),
        ConfigKey(
            "message.timestamp.difference.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Deprecated: the bound of both sides when message.timestamp.before/after.max.ms "
            "are not set.",
            "log.message.timestamp.difference.max.ms",
            _at_least(0),
        ),
        ConfigKey(
            "message.timestamp.type",
            ConfigType.STRING,
            "CreateTime",
            "CreateTime keeps the producer's timestamp; LogAppendTime stamps on append.",
            "log.message.timestamp.type",
            _in("CreateTime", "LogAppendTime"),
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio",
            ConfigType.DOUBLE,
            0.5,
            "Share of the log not yet compacted above which the cleaner runs.",
            "log.cleaner.min.cleanable.ratio",
            _between(0, 1),
        ),
        ConfigKey(
            "min.compaction.lag.ms",
            ConfigType.LONG,
            0,
            "Minimum age of a message before it may be compacted.",
            "log.cleaner.min.compaction.lag.ms",
            _at_least(0),
        ),
        ConfigKey(
            "min.insync.replicas",
            ConfigType.INT,
            1,
            "Replicas that must acknowledge an acks=all write.",
            "min.insync.replicas",
            _at_least(1),
        ),
        ConfigKey(
            "preallocate",
            ConfigType.BOOLEAN,
            False,
            "Preallocate the file of a new segment.",
            "log.preallocate",
            None,
            "segment files grow as they are written (see docs/benchmarks.md)",
        ),
        ConfigKey(
            "remote.log.copy.disable",
            ConfigType.BOOLEAN,
            False,
            "Stop copying segments to remote storage.",
            None,
            None,
            _NO_TIERING,
        ),
        ConfigKey(
            "remote.log.delete.on.disable",
            ConfigType.BOOLEAN,
            False,
            "Delete remote data when remote storage is disabled for the topic.",
            None,
            None,
            _NO_TIERING,
        ),
        ConfigKey(
            "remote.storage.enable",
            ConfigType.BOOLEAN,
            False,
            "Tier the topic's old segments to remote storage.",
            None,
            None,
            _NO_TIERING,
        ),
        ConfigKey(
            "retention.bytes",
            ConfigType.LONG,
            -1,
            "Largest size of a partition before old segments are deleted (-1: no limit).",
            "log.retention.bytes",
        ),
        ConfigKey(
            "retention.ms",
            ConfigType.LONG,
            604_800_000,
            "Age after which old segments are deleted (-1: no limit).",
            "log.retention.ms",
            _at_least(-1),
        ),
        ConfigKey(
            "segment.bytes",
            ConfigType.INT,
            1_073_741_824,
            "Size at which the active segment is rolled.",
            "log.segment.bytes",
            _at_least(14),
        ),
        ConfigKey(
            "segment.index.bytes",
            ConfigType.INT,
            10_485_760,
            "Largest size of an offset or time index file.",
            "log.index.size.max.bytes",
            _at_least(8),
        ),
        ConfigKey(
            "segment.jitter.ms",
            ConfigType.LONG,
            0,
            "Largest random time subtracted from segment.ms for each new segment.",
            "log.roll.jitter.ms",
            _at_least(0),
        ),
        ConfigKey(
            "segment.ms",
            ConfigType.LONG,
            604_800_000,
            "Age at which the active segment is rolled.",
            "log.roll.ms",
            _at_least(1),
        ),
        ConfigKey(
            "unclean.leader.election.enable",
            ConfigType.BOOLEAN,
            False,
            "In a cluster, let a replica outside the ISR become leader when no in-sync one is "
            "alive (what only the old leader had is lost).",
            "unclean.leader.election.enable",
        ),
    )
}

_THREADS = "a broker runs on one asyncio loop (one core)"
_CLEANER = "the cleaner runs on the broker's loop, one log at a time, with no buffers to size"
_QUOTAS = "connection quotas are not enforced"

_NO_EFFECT_BROKER_KEYS: tuple[
    tuple[str, ConfigType, Any, str, Callable[[Any], str | None] | None, str], ...
] = (
    ("num.io.threads", ConfigType.INT, 8, "Request handler threads.", _at_least(1), _THREADS),
    ("num.network.threads", ConfigType.INT, 3, "Network threads.", _at_least(1), _THREADS),
    ("background.threads", ConfigType.INT, 10, "Background threads.", _at_least(1), _THREADS),
    (
        "num.recovery.threads.per.data.dir",
        ConfigType.INT,
        2,
        "Threads recovering logs at start.",
        _at_least(1),
        _THREADS,
    ),
    ("log.cleaner.threads", ConfigType.INT, 1, "Cleaner threads.", _at_least(0), _CLEANER),
    (
        "log.cleaner.dedupe.buffer.size",
        ConfigType.LONG,
        134_217_728,
        "Memory of the cleaner's key map.",
        None,
        _CLEANER,
    ),
    (
        "log.cleaner.io.buffer.size",
        ConfigType.INT,
        524_288,
        "Cleaner I/O buffer size.",
        _at_least(0),
        _CLEANER,
    ),
    (
        "log.cleaner.io.buffer.load.factor",
        ConfigType.DOUBLE,
        0.9,
        "Load factor of the cleaner's key map.",
        None,
        _CLEANER,
    ),
    (
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        1.7976931348623157e308,
        "Cleaner I/O throttle.",
        None,
        _CLEANER,
    ),
    ("max.connections", ConfigType.INT, INT_MAX, "Most connections.", _at_least(0), _QUOTAS),
    (
        "max.connections.per.ip",
        ConfigType.INT,
        INT_MAX,
        "Most connections from one address.",
        _at_least(0),
        _QUOTAS,
    ),
    (
        "max.connections.per.ip.overrides",
        ConfigType.STRING,
        "",
        "Per-address overrides of max.connections.per.ip.",
        None,
        _QUOTAS,
    ),
    (
        "max.connection.creation.rate",
        ConfigType.INT,
        INT_MAX,
        "Most new connections per second.",
        _at_least(0),
        _QUOTAS,
    ),
    (
        "transaction.partition.verification.enable",
        ConfigType.BOOLEAN,
        True,
        "Verify that a partition was added to the transaction before a transactional write.",
        None,
        "AddPartitionsToTxn is always required before a transactional write",
    ),
    (
        "socket.send.buffer.bytes",
        ConfigType.INT,
        102_400,
        "SO_SNDBUF of the sockets (-1: the OS default).",
        None,
        "the operating system's socket buffers are used",
    ),
    (
        "socket.receive.buffer.bytes",
        ConfigType.INT,
        102_400,
        "SO_RCVBUF of the sockets (-1: the OS default).",
        None,
        "the operating system's socket buffers are used",
    ),
)

BROKER_KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in (
        ConfigKey(
            "listeners",
            ConfigType.LIST,
            ["PLAINTEXT://127.0.0.1:9092"],
            "Addresses the broker listens on.",
        ),
        ConfigKey(
            "advertised.listeners",
            ConfigType.LIST,
            None,
            "Addresses given to clients in Metadata (default: listeners).",
        ),
        ConfigKey("log.dirs", ConfigType.LIST, None, "Directories holding the log."),
        ConfigKey("log.dir", ConfigType.STRING, "./.sluice/data", "Directory holding the log."),
        ConfigKey("node.id", ConfigType.INT, 0, "This broker's id."),
        ConfigKey("broker.id", ConfigType.INT, None, "This broker's id (older name of node.id)."),
        ConfigKey(
            "num.partitions",
            ConfigType.INT,
            1,
            "Partitions of an auto-created or unspecified topic.",
            check=_at_least(1),
        ),
        ConfigKey(
            "default.replication.factor",
            ConfigType.SHORT,
            1,
            "Replication factor of auto-created topics.",
            check=_at_least(1),
        ),
        ConfigKey(
            "auto.create.topics.enable",
            ConfigType.BOOLEAN,
            True,
            "Create a topic when a client asks for metadata of an unknown one.",
        ),
        ConfigKey(
            "delete.topic.enable", ConfigType.BOOLEAN, True, "Whether DeleteTopics is allowed."
        ),
        ConfigKey("log.retention.minutes", ConfigType.INT, None, "retention.ms, in minutes."),
        ConfigKey("log.retention.hours", ConfigType.INT, 168, "retention.ms, in hours."),
        ConfigKey("log.roll.hours", ConfigType.INT, 168, "segment.ms, in hours."),
        ConfigKey(
            "log.retention.check.interval.ms",
            ConfigType.LONG,
            300_000,
            "How often retention is enforced.",
            check=_at_least(1),
        ),
        ConfigKey(
            "log.flush.scheduler.interval.ms",
            ConfigType.LONG,
            1000,
            "How often flush.ms is checked.",
            check=_at_least(1),
        ),
        ConfigKey("log.cleaner.enable", ConfigType.BOOLEAN, True, "Run the log cleaner."),
        ConfigKey(
            "log.cleaner.backoff.ms",
            ConfigType.LONG,
            15_000,
            "Sleep of the cleaner when nothing is to be cleaned.",
            check=_at_least(0),
        ),
        ConfigKey(
            "socket.request.max.bytes",
            ConfigType.INT,
            104_857_600,
            "Largest request the broker reads.",
            check=_at_least(1),
        ),
        ConfigKey(
            "producer.id.expiration.ms",
            ConfigType.INT,
            86_400_000,
            "Idle time after which a producer id's state is dropped.",
            no_effect="a partition keeps its producers' state until their batches are deleted",
        ),
        ConfigKey(
            "group.initial.rebalance.delay.ms",
            ConfigType.INT,
            3000,
            "Wait for more members before the first rebalance of an empty group.",
            check=_at_least(0),
        ),
        ConfigKey(
            "group.min.session.timeout.ms",
            ConfigType.INT,
            6000,
            "Smallest session.timeout.ms a member may ask for.",
            check=_at_least(1),
        ),
        ConfigKey(
            "group.max.session.timeout.ms",
            ConfigType.INT,
            1_800_000,
            "Largest session.timeout.ms a member may ask for.",
            check=_at_least(1),
        ),
        ConfigKey(
            "group.max.size",
            ConfigType.INT,
            INT_MAX,
            "Most members of one group.",
            check=_at_least(1),
        ),
        ConfigKey(
            "offsets.topic.num.partitions",
            ConfigType.INT,
            50,
            "Partitions of __consumer_offsets (fixed once the topic exists).",
            check=_at_least(1),
        ),
        ConfigKey(
            "offsets.topic.segment.bytes",
            ConfigType.INT,
            104_857_600,
            "segment.bytes of __consumer_offsets.",
            check=_at_least(14),
        ),
        ConfigKey(
            "offsets.retention.minutes",
            ConfigType.INT,
            10_080,
            "How long the offsets of an empty group are kept.",
            check=_at_least(1),
        ),
        ConfigKey(
            "offsets.retention.check.interval.ms",
            ConfigType.LONG,
            600_000,
            "How often expired offsets are removed.",
            check=_at_least(1),
        ),
        ConfigKey(
            "transaction.max.timeout.ms",
            ConfigType.INT,
            900_000,
            "Largest transaction.timeout.ms a producer may ask for.",
            check=_at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.num.partitions",
            ConfigType.INT,
            50,
            "Partitions of __transaction_state (fixed once the topic exists).",
            check=_at_least(1),
        ),
        ConfigKey(
            "offsets.topic.replication.factor",
            ConfigType.SHORT,
            3,
            "Replication factor of __consumer_offsets in a cluster (created when a group first "
            "needs it; fewer live brokers: COORDINATOR_NOT_AVAILABLE until enough are up).",
            check=_at_least(1),
        ),
        ConfigKey(
            "offsets.commit.timeout.ms",
            ConfigType.INT,
            5_000,
            "How long a coordinator waits for its write (offsets, group metadata, transaction "
            "state) to reach the in-sync replicas of its partition before answering "
            "REQUEST_TIMED_OUT (offsets) or COORDINATOR_NOT_AVAILABLE (transactions).",
            check=_at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.replication.factor",
            ConfigType.SHORT,
            3,
            "Replication factor of __transaction_state in a cluster (as "
            "offsets.topic.replication.factor).",
            check=_at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.min.isr",
            ConfigType.INT,
            2,
            "min.insync.replicas of __transaction_state in a cluster.",
            check=_at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.segment.bytes",
            ConfigType.INT,
            104_857_600,
            "segment.bytes of __transaction_state.",
            check=_at_least(14),
        ),
        ConfigKey(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            ConfigType.INT,
            10_000,
            "How often timed-out transactions are aborted.",
            check=_at_least(1),
        ),
        ConfigKey(
            "transactional.id.expiration.ms",
            ConfigType.INT,
            604_800_000,
            "Idle time after which the coordinator forgets a transactional id that has no "
            "transaction in progress.",
            check=_at_least(1),
        ),
        ConfigKey(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            ConfigType.INT,
            3_600_000,
            "How often expired transactional ids are removed.",
            check=_at_least(1),
        ),
        ConfigKey(
            "zookeeper.connect",
            ConfigType.STRING,
            None,
            "ZooKeeper of the cluster, host:port[,host:port...][/chroot] (unset: one node, "
            "no cluster).",
        ),
        ConfigKey(
            "zookeeper.session.timeout.ms",
            ConfigType.INT,
            18_000,
            "ZooKeeper session timeout: a broker that misses it is taken for dead.",
            check=_at_least(1),
        ),
        ConfigKey(
            "zookeeper.connection.timeout.ms",
            ConfigType.INT,
            None,
            "How long to wait for ZooKeeper before giving up (default: the session timeout).",
            check=_at_least(1),
        ),
        ConfigKey(
            "broker.rack", ConfigType.STRING, None, "The rack of this broker (replica placement)."
        ),
        ConfigKey(
            "auto.leader.rebalance.enable",
            ConfigType.BOOLEAN,
            True,
            "In a cluster, the controller moves leaderships back to their preferred replicas "
            "(see leader.imbalance.per.broker.percentage).",
        ),
        ConfigKey(
            "leader.imbalance.check.interval.seconds",
            ConfigType.LONG,
            300,
            "How often the controller checks the leaders' balance.",
            check=_at_least(1),
        ),
        ConfigKey(
            "leader.imbalance.per.broker.percentage",
            ConfigType.INT,
            10,
            "The share of a broker's preferred partitions led elsewhere above which the "
            "controller moves them back.",
            check=_at_least(0),
        ),
        ConfigKey(
            "controlled.shutdown.enable",
            ConfigType.BOOLEAN,
            True,
            "In a cluster, a broker stopping cleanly first hands its leaderships to other "
            "in-sync replicas.",
        ),
        ConfigKey(
            "controlled.shutdown.max.retries",
            ConfigType.INT,
            3,
            "How many times a stopping broker waits controlled.shutdown.retry.backoff.ms for "
            "its leaderships to move before it stops anyway.",
            check=_at_least(1),
        ),
        ConfigKey(
            "controlled.shutdown.retry.backoff.ms",
            ConfigType.LONG,
            5_000,
            "See controlled.shutdown.max.retries.",
            check=_at_least(0),
        ),
        ConfigKey(
            "replica.lag.time.max.ms",
            ConfigType.LONG,
            30_000,
            "A follower that has not caught up with the leader for this long leaves the ISR.",
            check=_at_least(1),
        ),
        ConfigKey(
            "replica.fetch.max.bytes",
            ConfigType.INT,
            1_048_576,
            "Bytes a follower asks for per partition in one fetch (a larger first batch still "
            "comes whole).",
            check=_at_least(0),
        ),
        ConfigKey(
            "replica.fetch.response.max.bytes",
            ConfigType.INT,
            10_485_760,
            "Bytes a follower asks for in one fetch response.",
            check=_at_least(0),
        ),
        ConfigKey(
            "replica.fetch.wait.max.ms",
            ConfigType.INT,
            500,
            "How long a follower's fetch waits at the leader for data.",
            check=_at_least(0),
        ),
        ConfigKey(
            "replica.fetch.min.bytes",
            ConfigType.INT,
            1,
            "Bytes a follower's fetch waits for at the leader.",
            check=_at_least(1),
        ),
        ConfigKey(
            "num.replica.fetchers",
            ConfigType.INT,
            1,
            "Fetchers (connections, each with one Fetch in flight) per leader a follower copies "
            "from; each partition goes to one of them by Kafka's hash. Dynamic.",
            check=_at_least(1),
        ),
        ConfigKey(
            "replica.fetch.backoff.ms",
            ConfigType.INT,
            1_000,
            "How long a follower waits after a failed fetch before the next.",
            check=_at_least(0),
        ),
        ConfigKey(
            "replica.high.watermark.checkpoint.interval.ms",
            ConfigType.LONG,
            5_000,
            "How often each data directory's replication-offset-checkpoint is written.",
            check=_at_least(1),
        ),
        ConfigKey("log.roll.jitter.hours", ConfigType.INT, 0, "segment.jitter.ms, in hours."),
        ConfigKey(
            "log.roll.jitter.ms",
            ConfigType.LONG,
            None,
            "segment.jitter.ms (default: log.roll.jitter.hours).",
            check=_at_least(0),
        ),
        *(
            ConfigKey(name, kind, default, doc, check=check, no_effect=reason)
            for name, kind, default, doc, check, reason in _NO_EFFECT_BROKER_KEYS
        ),
        ConfigKey(
            "offset.metadata.max.bytes",
            ConfigType.INT,
            4096,
            "Largest metadata string of a committed offset.",
            check=_at_least(0),
        ),
    )
}

# Topic keys are also accepted at broker level under their synonym.
for _key in TOPIC_KEYS.values():
    if _key.synonym and _key.synonym not in BROKER_KEYS:
        BROKER_KEYS[_key.synonym] = ConfigKey(
            _key.synonym,
            _key.type,
            None if _key.synonym in ("log.retention.ms", "log.roll.jitter.ms") else _key.default,
            _key.doc,
            check=_key.check,
            no_effect=_key.no_effect,
        )

DYNAMIC_BROKER_KEYS = frozenset(
    {key.synonym for key in TOPIC_KEYS.values() if key.synonym is not None}
    | {name for name, *_ in _NO_EFFECT_BROKER_KEYS if not name.startswith("socket.")}
    | {"log.cleaner.backoff.ms", "producer.id.expiration.ms", "num.replica.fetchers"}
)
"""Keys that IncrementalAlterConfigs/AlterConfigs may change on the BROKER resource (Kafka's
``DynamicBrokerConfig.AllDynamicConfigs`` as far as they exist here): the broker-level synonyms
of the topic keys, thread-pool, cleaner and connection-quota sizes, the producer-state keys,
the replica fetchers per leader."""

# Accepted in server.properties but without effect on one node (or handled elsewhere).
INERT_BROKER_KEYS = frozenset(
    {
        "process.roles",
        "controller.quorum.voters",
        "controller.listener.names",
        "inter.broker.listener.name",
        "listener.security.protocol.map",
    }
)
