"""The broker keys of cluster mode: ZooKeeper, the rack and replica selector, leader balance,
controlled shutdown and the followers' fetching (in the order listings show)."""

from __future__ import annotations

from sluice.broker.config_keys.key import LONG_MAX, ConfigKey, ConfigType
from sluice.broker.config_keys.validators import at_least
from sluice.broker.replication.replica_selector import RACK_AWARE_SELECTOR, check_selector_class

__all__ = ["CLUSTER_BROKER_KEYS"]

CLUSTER_BROKER_KEYS: tuple[ConfigKey, ...] = (
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
        check=at_least(1),
    ),
    ConfigKey(
        "zookeeper.connection.timeout.ms",
        ConfigType.INT,
        None,
        "How long to wait for ZooKeeper before giving up (default: the session timeout).",
        check=at_least(1),
    ),
    ConfigKey(
        "broker.rack",
        ConfigType.STRING,
        None,
        "The rack of this broker: topics spread their replicas over racks, and consumers "
        "with a client.rack may read from a replica of their rack (replica.selector.class).",
    ),
    ConfigKey(
        "replica.selector.class",
        ConfigType.STRING,
        None,
        "How this broker, as a leader, sends consumers to a replica to read from (KIP-392): "
        f"{RACK_AWARE_SELECTOR} sends a consumer whose client.rack is not the leader's "
        "to the most caught-up in-sync replica of its rack; unset: consumers read from the "
        "leader.",
        check=check_selector_class,
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
        check=at_least(1),
    ),
    ConfigKey(
        "leader.imbalance.per.broker.percentage",
        ConfigType.INT,
        10,
        "The share of a broker's preferred partitions led elsewhere above which the "
        "controller moves them back.",
        check=at_least(0),
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
        check=at_least(1),
    ),
    ConfigKey(
        "controlled.shutdown.retry.backoff.ms",
        ConfigType.LONG,
        5_000,
        "See controlled.shutdown.max.retries.",
        check=at_least(0),
    ),
    ConfigKey(
        "replica.lag.time.max.ms",
        ConfigType.LONG,
        30_000,
        "A follower that has not caught up with the leader for this long leaves the ISR.",
        check=at_least(1),
    ),
    ConfigKey(
        "replica.fetch.max.bytes",
        ConfigType.INT,
        1_048_576,
        "Bytes a follower asks for per partition in one fetch (a larger first batch still "
        "comes whole).",
        check=at_least(0),
    ),
    ConfigKey(
        "replica.fetch.response.max.bytes",
        ConfigType.INT,
        10_485_760,
        "Bytes a follower asks for in one fetch response.",
        check=at_least(0),
    ),
    ConfigKey(
        "replica.fetch.wait.max.ms",
        ConfigType.INT,
        500,
        "How long a follower's fetch waits at the leader for data.",
        check=at_least(0),
    ),
    ConfigKey(
        "replica.fetch.min.bytes",
        ConfigType.INT,
        1,
        "Bytes a follower's fetch waits for at the leader.",
        check=at_least(1),
    ),
    ConfigKey(
        "num.replica.fetchers",
        ConfigType.INT,
        1,
        "Fetchers (connections, each with one Fetch in flight) per leader a follower copies "
        "from; each partition goes to one of them by Kafka's hash. Dynamic.",
        check=at_least(1),
    ),
    ConfigKey(
        "replica.fetch.backoff.ms",
        ConfigType.INT,
        1_000,
        "How long a follower waits after a failed fetch before the next.",
        check=at_least(0),
    ),
    ConfigKey(
        "leader.replication.throttled.rate",
        ConfigType.LONG,
        LONG_MAX,
        "Bytes/s this broker sends, as a leader, of the partitions its topics list in "
        "leader.replication.throttled.replicas to followers not in the ISR. Dynamic.",
        check=at_least(0),
    ),
    ConfigKey(
        "follower.replication.throttled.rate",
        ConfigType.LONG,
        LONG_MAX,
        "Bytes/s this broker fetches, as a follower not in sync, of the partitions its topics "
        "list in follower.replication.throttled.replicas. Dynamic.",
        check=at_least(0),
    ),
    ConfigKey(
        "replication.quota.window.num",
        ConfigType.INT,
        11,
        "Samples over which the replication throttles measure their rates.",
        check=at_least(1),
    ),
    ConfigKey(
        "replication.quota.window.size.seconds",
        ConfigType.INT,
        1,
        "Length of each sample of the replication throttles' rates.",
        check=at_least(1),
    ),
    ConfigKey(
        "replica.high.watermark.checkpoint.interval.ms",
        ConfigType.LONG,
        5_000,
        "How often each data directory's replication-offset-checkpoint is written.",
        check=at_least(1),
    ),
)
