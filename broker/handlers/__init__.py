"""The APIs the broker serves: one table, :data:`APIS`, and what is derived from it.

Each row (:class:`~sluice.broker.handlers.spec.ApiSpec`) names an API's key, its name, the
versions served, its handler (one module per API or family of APIs in this package) and its
metric name. ApiVersions advertises :data:`SUPPORTED`, the server dispatches through
:data:`BY_KEY`, the request metrics are labelled by :data:`METRIC_NAMES`, and
``tests/broker/test_api_table.py`` checks the API table of ``docs/broker.md`` against it.

Above DESIGN.md's starting profile: the versions that carry topic ids (Fetch 13+, Metadata 10+,
CreateTopics 7, DeleteTopics 6) and what lies between (Fetch 14–16 and Metadata 13 add nothing a
single node needs), so that librdkafka 2.x uses them: it picks Fetch 16 and Metadata 13.

>>> SUPPORTED[18], BY_KEY[1].metric, is_supported(0, 9), is_supported(0, 2), is_supported(99, 0)
((0, 3), 'FetchConsumer', True, False, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from sluice.broker.broker import Broker
from sluice.broker.handlers import (
    acls,
    api_versions,
    client_quotas,
    configs,
    delete_records,
    describe_cluster,
    elect_leaders,
    fetch,
    groups,
    init_producer_id,
    list_offsets,
    log_dirs,
    metadata,
    offset_for_leader_epoch,
    offsets,
    produce,
    reassignments,
    sasl,
    scram_credentials,
    topics_admin,
    transactions,
    write_txn_markers,
)
from sluice.broker.handlers.spec import ApiSpec
from sluice.broker.protocol import api_keys as k
from sluice.broker.protocol.context import Connection

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import ApiVersionsRequest, ApiVersionsResponse

__all__ = ["APIS", "BY_KEY", "METRIC_NAMES", "SUPPORTED", "ApiSpec", "is_supported"]


async def _api_versions(
    _broker: Broker, request: ApiVersionsRequest, _client: Connection
) -> ApiVersionsResponse:
    return api_versions.response(request.__version__, SUPPORTED)


APIS: Final[tuple[ApiSpec[Any, Any], ...]] = (
    ApiSpec(k.PRODUCE, "Produce", 3, 9, produce.handle),
    # Kafka tells consumers' fetches from followers' (the server labels those FetchFollower)
    ApiSpec(k.FETCH, "Fetch", 4, 16, fetch.handle, metric_name="FetchConsumer"),
    ApiSpec(k.LIST_OFFSETS, "ListOffsets", 1, 7, list_offsets.handle),
    ApiSpec(k.METADATA, "Metadata", 1, 13, metadata.handle),
    ApiSpec(k.OFFSET_COMMIT, "OffsetCommit", 2, 8, offsets.offset_commit),
    ApiSpec(k.OFFSET_FETCH, "OffsetFetch", 1, 7, offsets.offset_fetch),
    ApiSpec(k.FIND_COORDINATOR, "FindCoordinator", 0, 4, groups.find_coordinator),
    ApiSpec(k.JOIN_GROUP, "JoinGroup", 0, 7, groups.join_group),
    ApiSpec(k.HEARTBEAT, "Heartbeat", 0, 4, groups.heartbeat),
    ApiSpec(k.LEAVE_GROUP, "LeaveGroup", 0, 4, groups.leave_group),
    ApiSpec(k.SYNC_GROUP, "SyncGroup", 0, 5, groups.sync_group),
    ApiSpec(k.DESCRIBE_GROUPS, "DescribeGroups", 0, 5, groups.describe_groups),
    ApiSpec(k.LIST_GROUPS, "ListGroups", 0, 4, groups.list_groups),
    # v0 of SaslHandshake: raw tokens follow, without Kafka's framing (the server reads them)
    ApiSpec(k.SASL_HANDSHAKE, "SaslHandshake", 0, 1, sasl.handshake),
    ApiSpec(k.API_VERSIONS, "ApiVersions", 0, 3, _api_versions),
    ApiSpec(k.CREATE_TOPICS, "CreateTopics", 2, 7, topics_admin.create_topics),
    ApiSpec(k.DELETE_TOPICS, "DeleteTopics", 1, 6, topics_admin.delete_topics),
    ApiSpec(k.DELETE_RECORDS, "DeleteRecords", 0, 2, delete_records.handle),
    ApiSpec(k.INIT_PRODUCER_ID, "InitProducerId", 0, 4, init_producer_id.handle),
    ApiSpec(
        k.OFFSET_FOR_LEADER_EPOCH, "OffsetForLeaderEpoch", 2, 4, offset_for_leader_epoch.handle
    ),
    ApiSpec(
        k.ADD_PARTITIONS_TO_TXN, "AddPartitionsToTxn", 0, 3, transactions.add_partitions_to_txn
    ),
    ApiSpec(k.ADD_OFFSETS_TO_TXN, "AddOffsetsToTxn", 0, 3, transactions.add_offsets_to_txn),
    ApiSpec(k.END_TXN, "EndTxn", 0, 3, transactions.end_txn),
    ApiSpec(k.WRITE_TXN_MARKERS, "WriteTxnMarkers", 1, 1, write_txn_markers.handle),
    ApiSpec(k.TXN_OFFSET_COMMIT, "TxnOffsetCommit", 0, 3, transactions.txn_offset_commit),
    ApiSpec(k.DESCRIBE_ACLS, "DescribeAcls", 1, 3, acls.describe),
    ApiSpec(k.CREATE_ACLS, "CreateAcls", 1, 3, acls.create),
    ApiSpec(k.DELETE_ACLS, "DeleteAcls", 1, 3, acls.delete),
    ApiSpec(k.DESCRIBE_CONFIGS, "DescribeConfigs", 1, 4, configs.describe_configs),
    ApiSpec(k.ALTER_CONFIGS, "AlterConfigs", 0, 2, configs.alter_configs),
    ApiSpec(k.ALTER_REPLICA_LOG_DIRS, "AlterReplicaLogDirs", 1, 2, log_dirs.alter_replica_log_dirs),
    ApiSpec(k.DESCRIBE_LOG_DIRS, "DescribeLogDirs", 1, 4, log_dirs.handle),
    ApiSpec(k.SASL_AUTHENTICATE, "SaslAuthenticate", 0, 2, sasl.authenticate),
    ApiSpec(k.CREATE_PARTITIONS, "CreatePartitions", 0, 3, topics_admin.create_partitions),
    ApiSpec(k.DELETE_GROUPS, "DeleteGroups", 0, 2, groups.delete_groups),
    ApiSpec(k.ELECT_LEADERS, "ElectLeaders", 0, 2, elect_leaders.handle),
    ApiSpec(
        k.INCREMENTAL_ALTER_CONFIGS,
        "IncrementalAlterConfigs",
        0,
        1,
        configs.incremental_alter_configs,
    ),
    ApiSpec(
        k.ALTER_PARTITION_REASSIGNMENTS,
        "AlterPartitionReassignments",
        0,
        1,
        reassignments.alter,
    ),
    ApiSpec(
        k.LIST_PARTITION_REASSIGNMENTS, "ListPartitionReassignments", 0, 0, reassignments.list_
    ),
    ApiSpec(k.OFFSET_DELETE, "OffsetDelete", 0, 0, offsets.offset_delete),
    ApiSpec(k.DESCRIBE_CLIENT_QUOTAS, "DescribeClientQuotas", 0, 1, client_quotas.describe),
    ApiSpec(k.ALTER_CLIENT_QUOTAS, "AlterClientQuotas", 0, 1, client_quotas.alter),
    ApiSpec(
        k.DESCRIBE_USER_SCRAM_CREDENTIALS,
        "DescribeUserScramCredentials",
        0,
        0,
        scram_credentials.describe,
    ),
    ApiSpec(
        k.ALTER_USER_SCRAM_CREDENTIALS, "AlterUserScramCredentials", 0, 0, scram_credentials.alter
    ),
    ApiSpec(k.DESCRIBE_CLUSTER, "DescribeCluster", 0, 1, describe_cluster.handle),
    ApiSpec(
        k.DESCRIBE_TRANSACTIONS, "DescribeTransactions", 0, 0, transactions.describe_transactions
    ),
    ApiSpec(k.LIST_TRANSACTIONS, "ListTransactions", 0, 0, transactions.list_transactions),
)
"""Every API the broker serves, by key."""

BY_KEY: Final[Mapping[int, ApiSpec[Any, Any]]] = MappingProxyType({s.key: s for s in APIS})
"""The rows of :data:`APIS` by API key (what the server dispatches on)."""

assert len(BY_KEY) == len(APIS), "an API key appears twice in APIS"

SUPPORTED: Final[Mapping[int, tuple[int, int]]] = MappingProxyType(
    {s.key: (s.min_version, s.max_version) for s in APIS}
)
"""``api_key -> (min_version, max_version)``: what ApiVersions advertises."""

METRIC_NAMES: Final[Mapping[int, str]] = MappingProxyType({s.key: s.metric for s in APIS})
"""Kafka's request names (the ``request`` label of the request metrics), by API key."""


def is_supported(api_key: int, version: int) -> bool:
    """Whether ``version`` of ``api_key`` is served."""
    spec = BY_KEY.get(api_key)
    return spec is not None and spec.serves(version)
