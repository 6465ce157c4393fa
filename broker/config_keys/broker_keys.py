"""The keys of ``server.properties`` (Kafka's ``KafkaConfig``), by name, in the order listings show.

:data:`BROKER_KEYS` gathers the broker's own keys, the keys of cluster mode
(:mod:`.cluster_keys`), the keys of security (:mod:`.security_keys`), the keys without effect
here (:mod:`.no_effect_keys`) and, under their synonyms, the topic keys (:mod:`.topic_keys`).
:data:`DYNAMIC_BROKER_KEYS` may be changed at run time (AlterConfigs on the BROKER resource);
:data:`INERT_BROKER_KEYS` are accepted in ``server.properties`` without effect on one node (or
are handled elsewhere).
"""

from __future__ import annotations

from sluice.broker.config_keys.cluster_keys import CLUSTER_BROKER_KEYS
from sluice.broker.config_keys.key import INT_MAX, ConfigKey, ConfigType
from sluice.broker.config_keys.no_effect_keys import NO_EFFECT_BROKER_KEYS
from sluice.broker.config_keys.security_keys import SECURITY_BROKER_KEYS
from sluice.broker.config_keys.topic_keys import TOPIC_KEYS
from sluice.broker.config_keys.validators import at_least

__all__ = ["BROKER_KEYS", "DYNAMIC_BROKER_KEYS", "INERT_BROKER_KEYS"]

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
            check=at_least(1),
        ),
        ConfigKey(
            "default.replication.factor",
            ConfigType.SHORT,
            1,
            "Replication factor of auto-created topics.",
            check=at_least(1),
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
            check=at_least(1),
        ),
        ConfigKey(
            "log.flush.scheduler.interval.ms",
            ConfigType.LONG,
            1000,
            "How often flush.ms is checked.",
            check=at_least(1),
        ),
        ConfigKey("log.cleaner.enable", ConfigType.BOOLEAN, True, "Run the log cleaner."),
        ConfigKey(
            "log.cleaner.backoff.ms",
            ConfigType.LONG,
            15_000,
            "Sleep of the cleaner when nothing is to be cleaned.",
            check=at_least(0),
        ),
        ConfigKey(
            "quota.window.num",
            ConfigType.INT,
            11,
            "Samples over which the client quotas measure their rates (docs/security.md).",
            check=at_least(1),
        ),
        ConfigKey(
            "quota.window.size.seconds",
            ConfigType.INT,
            1,
            "Length of each sample of the client quotas' rates.",
            check=at_least(1),
        ),
        ConfigKey(
            "socket.request.max.bytes",
            ConfigType.INT,
            104_857_600,
            "Largest request the broker reads.",
            check=at_least(1),
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
            check=at_least(0),
        ),
        ConfigKey(
            "group.min.session.timeout.ms",
            ConfigType.INT,
            6000,
            "Smallest session.timeout.ms a member may ask for.",
            check=at_least(1),
        ),
        ConfigKey(
            "group.max.session.timeout.ms",
            ConfigType.INT,
            1_800_000,
            "Largest session.timeout.ms a member may ask for.",
            check=at_least(1),
        ),
        ConfigKey(
            "group.max.size",
            ConfigType.INT,
            INT_MAX,
            "Most members of one group.",
            check=at_least(1),
        ),
        ConfigKey(
            "offsets.topic.num.partitions",
            ConfigType.INT,
            50,
            "Partitions of __consumer_offsets (fixed once the topic exists).",
            check=at_least(1),
        ),
        ConfigKey(
            "offsets.topic.segment.bytes",
            ConfigType.INT,
            104_857_600,
            "segment.bytes of __consumer_offsets.",
            check=at_least(14),
        ),
        ConfigKey(
            "offsets.retention.minutes",
            ConfigType.INT,
            10_080,
            "How long the offsets of an empty group are kept.",
            check=at_least(1),
        ),
        ConfigKey(
            "offsets.retention.check.interval.ms",
            ConfigType.LONG,
            600_000,
            "How often expired offsets are removed.",
            check=at_least(1),
        ),
        ConfigKey(
            "transaction.max.timeout.ms",
            ConfigType.INT,
            900_000,
            "Largest transaction.timeout.ms a producer may ask for.",
            check=at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.num.partitions",
            ConfigType.INT,
            50,
            "Partitions of __transaction_state (fixed once the topic exists).",
            check=at_least(1),
        ),
        ConfigKey(
            "offsets.topic.replication.factor",
            ConfigType.SHORT,
            3,
            "Replication factor of __consumer_offsets in a cluster (created when a group first "
            "needs it; fewer live brokers: COORDINATOR_NOT_AVAILABLE until enough are up).",
            check=at_least(1),
        ),
        ConfigKey(
            "offsets.commit.timeout.ms",
            ConfigType.INT,
            5_000,
            "How long a coordinator waits for its write (offsets, group metadata, transaction "
            "state) to reach the in-sync replicas of its partition before answering "
            "REQUEST_TIMED_OUT (offsets) or COORDINATOR_NOT_AVAILABLE (transactions).",
            check=at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.replication.factor",
            ConfigType.SHORT,
            3,
            "Replication factor of __transaction_state in a cluster (as "
            "offsets.topic.replication.factor).",
            check=at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.min.isr",
            ConfigType.INT,
            2,
            "min.insync.replicas of __transaction_state in a cluster.",
            check=at_least(1),
        ),
        ConfigKey(
            "transaction.state.log.segment.bytes",
            ConfigType.INT,
            104_857_600,
            "segment.bytes of __transaction_state.",
            check=at_least(14),
        ),
        ConfigKey(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            ConfigType.INT,
            10_000,
            "How often timed-out transactions are aborted.",
            check=at_least(1),
        ),
        ConfigKey(
            "transactional.id.expiration.ms",
            ConfigType.INT,
            604_800_000,
            "Idle time after which the coordinator forgets a transactional id that has no "
            "transaction in progress.",
            check=at_least(1),
        ),
        ConfigKey(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            ConfigType.INT,
            3_600_000,
            "How often expired transactional ids are removed.",
            check=at_least(1),
        ),
        *CLUSTER_BROKER_KEYS,
        *SECURITY_BROKER_KEYS,
        ConfigKey("log.roll.jitter.hours", ConfigType.INT, 0, "segment.jitter.ms, in hours."),
        ConfigKey(
            "log.roll.jitter.ms",
            ConfigType.LONG,
            None,
            "segment.jitter.ms (default: log.roll.jitter.hours).",
            check=at_least(0),
        ),
        *NO_EFFECT_BROKER_KEYS,
        ConfigKey(
            "max.incremental.fetch.session.cache.slots",
            ConfigType.INT,
            1000,
            "Fetch sessions (KIP-227) the broker keeps at most; 0: none (every fetch is full).",
            check=at_least(0),
        ),
        ConfigKey(
            "min.incremental.fetch.session.eviction.ms",
            ConfigType.INT,
            120_000,
            "How long a fetch session is safe from eviction by a new one: unused that long, it "
            "may be evicted; a consumer's new session may evict only sessions that lived that "
            "long.",
            check=at_least(0),
        ),
        ConfigKey(
            "offset.metadata.max.bytes",
            ConfigType.INT,
            4096,
            "Largest metadata string of a committed offset.",
            check=at_least(0),
        ),
        ConfigKey(
            "confluent.schema.registry.url",
            ConfigType.LIST,
            None,
            "Confluent Server's: the Schema Registry URL (or a comma-separated list, tried in "
            "order) that topics with confluent.value.schema.validation or "
            "confluent.key.schema.validation check schema ids against.",
        ),
        ConfigKey(
            "confluent.basic.auth.credentials.source",
            ConfigType.STRING,
            None,
            "Confluent Server's: USER_INFO sends confluent.basic.auth.user.info to the schema "
            "registry (HTTP basic authentication; the default when it is set); URL: the "
            "user:password@ of confluent.schema.registry.url, if any.",
            check=lambda v: (
                None if str(v).upper() in ("URL", "USER_INFO") else "must be URL or USER_INFO"
            ),
        ),
        ConfigKey(
            "confluent.basic.auth.user.info",
            ConfigType.PASSWORD,
            None,
            "Confluent Server's: user:password for the schema registry "
            "(with confluent.basic.auth.credentials.source=USER_INFO).",
            check=lambda v: None if ":" in str(v) else "must be user:password",
        ),
        ConfigKey(
            "confluent.ssl.truststore.location",
            ConfigType.STRING,
            None,
            "Confluent Server's: the CA (PEM) of the schema registry's HTTPS certificate "
            "(default: the system's CAs).",
        ),
        ConfigKey(
            "confluent.ssl.truststore.type",
            ConfigType.STRING,
            "PEM",
            "Format of confluent.ssl.truststore.location: PEM only.",
            check=lambda v: None if str(v).upper() == "PEM" else "only PEM is supported",
        ),
        ConfigKey(
            "confluent.ssl.keystore.location",
            ConfigType.STRING,
            None,
            "Confluent Server's: a client certificate for the schema registry (PEM: the key "
            "and the certificate chain).",
        ),
        ConfigKey(
            "confluent.ssl.keystore.type",
            ConfigType.STRING,
            "PEM",
            "Format of confluent.ssl.keystore.location: PEM only.",
            check=lambda v: None if str(v).upper() == "PEM" else "only PEM is supported",
        ),
        ConfigKey(
            "confluent.ssl.key.password",
            ConfigType.PASSWORD,
            None,
            "Confluent Server's: the password of confluent.ssl.keystore.location's key.",
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
    | {key.name for key in NO_EFFECT_BROKER_KEYS if not key.name.startswith("socket.")}
    | {"log.cleaner.backoff.ms", "producer.id.expiration.ms", "num.replica.fetchers"}
    | {"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
)
"""Keys that IncrementalAlterConfigs/AlterConfigs may change on the BROKER resource (Kafka's
``DynamicBrokerConfig.AllDynamicConfigs`` as far as they exist here): the broker-level synonyms
of the topic keys, thread-pool, cleaner and connection-quota sizes, the producer-state keys,
the replica fetchers per leader, the replication throttles' rates."""

# Accepted in server.properties but without effect on one node (or handled elsewhere).
INERT_BROKER_KEYS = frozenset(
    {
        "process.roles",
        "controller.quorum.voters",
        "controller.listener.names",
    }
)
