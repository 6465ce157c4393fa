"""Which ACL each API needs: the one table, :data:`REQUIRED`, that the handlers check, the
ACL matrix test is generated from, and ``docs/security.md``'s table is checked against.

Kafka's ``KafkaApis`` and its docs ("Operations and Resources on Protocols", §7.5): each row is
an API key, the operation, the resource type and, where the check applies only in some cases,
the condition (``when``). Where Kafka takes either of two (CreateTopics: CREATE on the Cluster,
else CREATE on the topic), both rows are listed with a condition holding ``or``. An
idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on any topic (KIP-679, Kafka
3.0+), checked at InitProducerId; Produce checks WRITE on each topic only. A denied check is
answered with the error of its resource type (:data:`DENIED_ERRORS`).

>>> operation(0, ResourceType.TOPIC).name
'WRITE'
>>> operation(3, ResourceType.TOPIC, "auto-create").name
'CREATE'
>>> [r.api for r in REQUIRED if r.api_key == 30]
['CreateAcls']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kio.schema.errors import ErrorCode

from sluice.broker.security.acls import AclOperation, ResourceType

__all__ = ["DENIED_ERRORS", "REQUIRED", "Requirement", "markdown_table", "operation"]

R, Op = ResourceType, AclOperation
TOPIC, GROUP, CLUSTER, TXN_ID = R.TOPIC, R.GROUP, R.CLUSTER, R.TRANSACTIONAL_ID


@dataclass(frozen=True, slots=True)
class Requirement:
    """API ``api_key`` (named ``api``) needs ``operation`` on ``resource_type`` (``when``:
    the case the check applies to; empty: always)."""

    api_key: int
    api: str
    operation: AclOperation
    resource_type: ResourceType
    when: str = ""


def _r(key: int, api: str, op: AclOperation, rtype: ResourceType, when: str = "") -> Requirement:
    return Requirement(key, api, op, rtype, when)


REQUIRED: Final[tuple[Requirement, ...]] = (
    _r(0, "Produce", Op.WRITE, TOPIC),
    _r(0, "Produce", Op.WRITE, TXN_ID, "transactional"),
    _r(1, "Fetch", Op.READ, TOPIC),
    _r(1, "Fetch", Op.CLUSTER_ACTION, CLUSTER, "follower"),
    _r(2, "ListOffsets", Op.DESCRIBE, TOPIC),
    _r(3, "Metadata", Op.DESCRIBE, TOPIC),
    _r(3, "Metadata", Op.CREATE, CLUSTER, "auto-create"),
    _r(3, "Metadata", Op.CREATE, TOPIC, "auto-create"),
    _r(8, "OffsetCommit", Op.READ, GROUP),
    _r(8, "OffsetCommit", Op.READ, TOPIC),
    _r(9, "OffsetFetch", Op.DESCRIBE, GROUP),
    _r(9, "OffsetFetch", Op.DESCRIBE, TOPIC),
    _r(10, "FindCoordinator", Op.DESCRIBE, GROUP, "group"),
    _r(10, "FindCoordinator", Op.DESCRIBE, TXN_ID, "transaction"),
    _r(11, "JoinGroup", Op.READ, GROUP),
    _r(12, "Heartbeat", Op.READ, GROUP),
    _r(13, "LeaveGroup", Op.READ, GROUP),
    _r(14, "SyncGroup", Op.READ, GROUP),
    _r(15, "DescribeGroups", Op.DESCRIBE, GROUP),
    _r(16, "ListGroups", Op.DESCRIBE, CLUSTER, "or"),
    _r(16, "ListGroups", Op.DESCRIBE, GROUP, "or"),
    _r(19, "CreateTopics", Op.CREATE, CLUSTER, "or"),
    _r(19, "CreateTopics", Op.CREATE, TOPIC, "or"),
    _r(20, "DeleteTopics", Op.DELETE, TOPIC),
    _r(21, "DeleteRecords", Op.DELETE, TOPIC),
    _r(22, "InitProducerId", Op.WRITE, TXN_ID, "transactional"),
    _r(22, "InitProducerId", Op.IDEMPOTENT_WRITE, CLUSTER, "idempotent: or"),
    _r(22, "InitProducerId", Op.WRITE, TOPIC, "idempotent: or, on any topic"),
    _r(23, "OffsetForLeaderEpoch", Op.DESCRIBE, TOPIC),
    _r(23, "OffsetForLeaderEpoch", Op.CLUSTER_ACTION, CLUSTER, "follower"),
    _r(24, "AddPartitionsToTxn", Op.WRITE, TXN_ID),
    _r(24, "AddPartitionsToTxn", Op.WRITE, TOPIC),
    _r(25, "AddOffsetsToTxn", Op.WRITE, TXN_ID),
    _r(25, "AddOffsetsToTxn", Op.READ, GROUP),
    _r(26, "EndTxn", Op.WRITE, TXN_ID),
    _r(27, "WriteTxnMarkers", Op.CLUSTER_ACTION, CLUSTER),
    _r(28, "TxnOffsetCommit", Op.WRITE, TXN_ID),
    _r(28, "TxnOffsetCommit", Op.READ, GROUP),
    _r(28, "TxnOffsetCommit", Op.READ, TOPIC),
    _r(29, "DescribeAcls", Op.DESCRIBE, CLUSTER),
    _r(30, "CreateAcls", Op.ALTER, CLUSTER),
    _r(31, "DeleteAcls", Op.ALTER, CLUSTER),
    _r(32, "DescribeConfigs", Op.DESCRIBE_CONFIGS, TOPIC, "topic"),
    _r(32, "DescribeConfigs", Op.DESCRIBE_CONFIGS, CLUSTER, "broker"),
    _r(33, "AlterConfigs", Op.ALTER_CONFIGS, TOPIC, "topic"),
    _r(33, "AlterConfigs", Op.ALTER_CONFIGS, CLUSTER, "broker"),
    _r(34, "AlterReplicaLogDirs", Op.ALTER, CLUSTER),
    _r(35, "DescribeLogDirs", Op.DESCRIBE, CLUSTER),
    _r(37, "CreatePartitions", Op.ALTER, TOPIC),
    _r(42, "DeleteGroups", Op.DELETE, GROUP),
    _r(43, "ElectLeaders", Op.ALTER, CLUSTER),
    _r(44, "IncrementalAlterConfigs", Op.ALTER_CONFIGS, TOPIC, "topic"),
    _r(44, "IncrementalAlterConfigs", Op.ALTER_CONFIGS, CLUSTER, "broker"),
    _r(45, "AlterPartitionReassignments", Op.ALTER, CLUSTER),
    _r(46, "ListPartitionReassignments", Op.DESCRIBE, CLUSTER),
    _r(47, "OffsetDelete", Op.DELETE, GROUP),
    _r(47, "OffsetDelete", Op.READ, TOPIC),
    _r(50, "DescribeUserScramCredentials", Op.DESCRIBE, CLUSTER),
    _r(51, "AlterUserScramCredentials", Op.ALTER, CLUSTER),
    _r(60, "DescribeCluster", Op.DESCRIBE, CLUSTER),
    _r(65, "DescribeTransactions", Op.DESCRIBE, TXN_ID),
    _r(66, "ListTransactions", Op.DESCRIBE, TXN_ID, "filters the list"),
)
"""Every check the broker makes, by API (Kafka's table)."""

_BY_KEY: Final = {(r.api_key, r.resource_type, r.when): r.operation for r in REQUIRED}

DENIED_ERRORS: Final = {
    TOPIC: ErrorCode.topic_authorization_failed,
    GROUP: ErrorCode.group_authorization_failed,
    CLUSTER: ErrorCode.cluster_authorization_failed,
    TXN_ID: ErrorCode.transactional_id_authorization_failed,
}
"""The error a denied check is answered with, by resource type."""


def operation(api_key: int, resource_type: ResourceType, when: str = "") -> AclOperation:
    """The operation API ``api_key`` needs on ``resource_type`` (in case ``when``); a KeyError
    names a check the table lacks (a handler asking for one is a bug)."""
    return _BY_KEY[api_key, resource_type, when]


def markdown_table() -> str:
    """:data:`REQUIRED` as the table of ``docs/security.md`` (a test keeps the two equal).

    >>> markdown_table().splitlines()[2]
    '| Produce | 0 | WRITE | Topic | |'
    """
    names = {TOPIC: "Topic", GROUP: "Group", CLUSTER: "Cluster", TXN_ID: "TransactionalId"}
    lines = ["| API | key | operation | resource | when |", "|---|---|---|---|---|"]
    lines += [
        f"| {r.api} | {r.api_key} | {r.operation.name} | {names[r.resource_type]} | {r.when} |"
        for r in REQUIRED
    ]
    return "\n".join(line.replace("|  |", "| |") for line in lines) + "\n"
