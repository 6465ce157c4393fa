"""Kafka's per-topic configuration keys (``TopicConfig``), by name, in the order listings show.

Each names the broker-level synonym that supplies its default (``retention.ms`` ←
``log.retention.ms``); :mod:`.broker_keys` accepts those synonyms in ``server.properties``.
"""

from __future__ import annotations

from sluice.broker.config_keys.key import LONG_MAX, ConfigKey, ConfigType
from sluice.broker.config_keys.validators import (
    at_least,
    between,
    message_format_version,
    one_of,
    throttled_replicas,
)

__all__ = ["TOPIC_KEYS"]

_COMPRESSION = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")

_NO_TIERING = "Sluice has no tiered (remote) storage"

_SUBJECT_STRATEGIES = tuple(
    f"io.confluent.kafka.serializers.subject.{name}"
    for name in ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
)
"""Confluent's subject name strategies (sluice.broker.schema_validation.strategies)."""

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
            one_of("delete", "compact"),
        ),
        ConfigKey(
            "compression.gzip.level",
            ConfigType.INT,
            -1,
            "gzip level (1-9, -1: the codec's default) when the broker compresses with gzip.",
            "compression.gzip.level",
            between(1, 9, also=-1),
        ),
        ConfigKey(
            "compression.lz4.level",
            ConfigType.INT,
            9,
            "lz4 level (1-17) when the broker compresses with lz4.",
            "compression.lz4.level",
            between(1, 17),
            "the lz4 block compressor Sluice uses (cramjam 2.14) ignores levels",
        ),
        ConfigKey(
            "compression.type",
            ConfigType.STRING,
            "producer",
            "Codec batches are stored with; 'producer' keeps what the producer sent.",
            "compression.type",
            one_of(*_COMPRESSION),
        ),
        ConfigKey(
            "compression.zstd.level",
            ConfigType.INT,
            3,
            "zstd level (-131072 to 22) when the broker compresses with zstd.",
            "compression.zstd.level",
            between(-131_072, 22),
        ),
        ConfigKey(
            "confluent.key.schema.validation",
            ConfigType.BOOLEAN,
            False,
            "Confluent Server's: refuse batches whose record keys do not carry a schema id "
            "registered under the key subject (needs the broker's confluent.schema.registry.url).",
        ),
        ConfigKey(
            "confluent.key.subject.name.strategy",
            ConfigType.STRING,
            _SUBJECT_STRATEGIES[0],
            "The subject a key's schema id must be registered under (Confluent's strategy class).",
            None,
            one_of(*_SUBJECT_STRATEGIES),
        ),
        ConfigKey(
            "confluent.value.schema.validation",
            ConfigType.BOOLEAN,
            False,
            "Confluent Server's: refuse batches whose record values do not carry a schema id "
            "registered under the value subject (needs the broker's "
            "confluent.schema.registry.url).",
        ),
        ConfigKey(
            "confluent.value.subject.name.strategy",
            ConfigType.STRING,
            _SUBJECT_STRATEGIES[0],
            "The subject a value's schema id must be registered under (Confluent's strategy "
            "class).",
            None,
            one_of(*_SUBJECT_STRATEGIES),
        ),
        ConfigKey(
            "delete.retention.ms",
            ConfigType.LONG,
            86_400_000,
            "How long tombstones are kept in a compacted topic.",
            "log.cleaner.delete.retention.ms",
            at_least(0),
        ),
        ConfigKey(
            "file.delete.delay.ms",
            ConfigType.LONG,
            60_000,
            "Delay before the files of a deleted segment (renamed *.deleted) are removed.",
            "log.segment.delete.delay.ms",
            at_least(0),
        ),
        ConfigKey(
            "flush.messages",
            ConfigType.LONG,
            LONG_MAX,
            "fsync the log after this many messages.",
            "log.flush.interval.messages",
            at_least(1),
        ),
        ConfigKey(
            "flush.ms",
            ConfigType.LONG,
            LONG_MAX,
            "fsync the log when its oldest unflushed message is this old.",
            "log.flush.interval.ms",
            at_least(0),
        ),
        ConfigKey(
            "follower.replication.throttled.replicas",
            ConfigType.LIST,
            [],
            "Replicas (partition:broker, or *: all) whose broker, copying them while not in sync, "
            "fetches them within its follower.replication.throttled.rate.",
            None,
            throttled_replicas,
        ),
        ConfigKey(
            "index.interval.bytes",
            ConfigType.INT,
            4096,
            "Bytes of log between two offset-index entries.",
            "log.index.interval.bytes",
            at_least(0),
        ),
        ConfigKey(
            "leader.replication.throttled.replicas",
            ConfigType.LIST,
            [],
            "Replicas (partition:broker, or *: all) whose broker, leading them, sends them to "
            "followers not in the ISR within its leader.replication.throttled.rate.",
            None,
            throttled_replicas,
        ),
        ConfigKey(
            "local.retention.bytes",
            ConfigType.LONG,
            -2,
            "Bytes kept locally when tiered storage is on (-2: retention.bytes).",
            "log.local.retention.bytes",
            at_least(-2),
            _NO_TIERING,
        ),
        ConfigKey(
            "local.retention.ms",
            ConfigType.LONG,
            -2,
            "Time data is kept locally when tiered storage is on (-2: retention.ms).",
            "log.local.retention.ms",
            at_least(-2),
            _NO_TIERING,
        ),
        ConfigKey(
            "max.compaction.lag.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Longest time a record stays uncompacted: a log whose first dirty record is older "
            "is compacted whatever its dirty ratio.",
            "log.cleaner.max.compaction.lag.ms",
            at_least(1),
        ),
        ConfigKey(
            "max.message.bytes",
            ConfigType.INT,
            1_048_588,
            "Largest record batch the broker accepts.",
            "message.max.bytes",
            at_least(0),
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
            message_format_version,
            "Sluice always writes v2 record batches",
        ),
        ConfigKey(
            "message.timestamp.after.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Largest amount a CreateTime timestamp may lie ahead of the broker's clock.",
            "log.message.timestamp.after.max.ms",
            at_least(0),
        ),
        ConfigKey(
            "message.timestamp.before.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Largest amount a CreateTime timestamp may lie behind the broker's clock.",
            "log.message.timestamp.before.max.ms",
            at_least(0),
        ),
        ConfigKey(
            "message.timestamp.difference.max.ms",
            ConfigType.LONG,
            LONG_MAX,
            "Deprecated: the bound of both sides when message.timestamp.before/after.max.ms "
            "are not set.",
            "log.message.timestamp.difference.max.ms",
            at_least(0),
        ),
        ConfigKey(
            "message.timestamp.type",
            ConfigType.STRING,
            "CreateTime",
            "CreateTime keeps the producer's timestamp; LogAppendTime stamps on append.",
            "log.message.timestamp.type",
            one_of("CreateTime", "LogAppendTime"),
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio",
            ConfigType.DOUBLE,
            0.5,
            "Share of the log not yet compacted above which the cleaner runs.",
            "log.cleaner.min.cleanable.ratio",
            between(0, 1),
        ),
        ConfigKey(
            "min.compaction.lag.ms",
            ConfigType.LONG,
            0,
            "Minimum age of a message before it may be compacted.",
            "log.cleaner.min.compaction.lag.ms",
            at_least(0),
        ),
        ConfigKey(
            "min.insync.replicas",
            ConfigType.INT,
            1,
            "Replicas that must acknowledge an acks=all write.",
            "min.insync.replicas",
            at_least(1),
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
            at_least(-1),
        ),
        ConfigKey(
            "segment.bytes",
            ConfigType.INT,
            1_073_741_824,
            "Size at which the active segment is rolled.",
            "log.segment.bytes",
            at_least(14),
        ),
        ConfigKey(
            "segment.index.bytes",
            ConfigType.INT,
            10_485_760,
            "Largest size of an offset or time index file.",
            "log.index.size.max.bytes",
            at_least(8),
        ),
        ConfigKey(
            "segment.jitter.ms",
            ConfigType.LONG,
            0,
            "Largest random time subtracted from segment.ms for each new segment.",
            "log.roll.jitter.ms",
            at_least(0),
        ),
        ConfigKey(
            "segment.ms",
            ConfigType.LONG,
            604_800_000,
            "Age at which the active segment is rolled.",
            "log.roll.ms",
            at_least(1),
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
