"""Cluster and admin APIs: ApiVersions, Metadata, topics, configs, log dirs, elections,
reassignments. Each name is the union of kio's classes of the versions served (see
:mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.alter_configs import v0 as alter_configs_v0
from kio.schema.alter_configs import v1 as alter_configs_v1
from kio.schema.alter_configs import v2 as alter_configs_v2
from kio.schema.alter_partition_reassignments import v0 as alter_partition_reassignments_v0
from kio.schema.alter_partition_reassignments import v1 as alter_partition_reassignments_v1
from kio.schema.alter_replica_log_dirs import v1 as alter_replica_log_dirs_v1
from kio.schema.alter_replica_log_dirs import v2 as alter_replica_log_dirs_v2
from kio.schema.api_versions import v0 as api_versions_v0
from kio.schema.api_versions import v1 as api_versions_v1
from kio.schema.api_versions import v2 as api_versions_v2
from kio.schema.api_versions import v3 as api_versions_v3
from kio.schema.create_partitions import v0 as create_partitions_v0
from kio.schema.create_partitions import v1 as create_partitions_v1
from kio.schema.create_partitions import v2 as create_partitions_v2
from kio.schema.create_partitions import v3 as create_partitions_v3
from kio.schema.create_topics import v2 as create_topics_v2
from kio.schema.create_topics import v3 as create_topics_v3
from kio.schema.create_topics import v4 as create_topics_v4
from kio.schema.create_topics import v5 as create_topics_v5
from kio.schema.create_topics import v6 as create_topics_v6
from kio.schema.create_topics import v7 as create_topics_v7
from kio.schema.delete_topics import v1 as delete_topics_v1
from kio.schema.delete_topics import v2 as delete_topics_v2
from kio.schema.delete_topics import v3 as delete_topics_v3
from kio.schema.delete_topics import v4 as delete_topics_v4
from kio.schema.delete_topics import v5 as delete_topics_v5
from kio.schema.delete_topics import v6 as delete_topics_v6
from kio.schema.describe_cluster import v0 as describe_cluster_v0
from kio.schema.describe_cluster import v1 as describe_cluster_v1
from kio.schema.describe_configs import v1 as describe_configs_v1
from kio.schema.describe_configs import v2 as describe_configs_v2
from kio.schema.describe_configs import v3 as describe_configs_v3
from kio.schema.describe_configs import v4 as describe_configs_v4
from kio.schema.describe_log_dirs import v1 as describe_log_dirs_v1
from kio.schema.describe_log_dirs import v2 as describe_log_dirs_v2
from kio.schema.describe_log_dirs import v3 as describe_log_dirs_v3
from kio.schema.describe_log_dirs import v4 as describe_log_dirs_v4
from kio.schema.elect_leaders import v0 as elect_leaders_v0
from kio.schema.elect_leaders import v1 as elect_leaders_v1
from kio.schema.elect_leaders import v2 as elect_leaders_v2
from kio.schema.incremental_alter_configs import v0 as incremental_alter_configs_v0
from kio.schema.incremental_alter_configs import v1 as incremental_alter_configs_v1
from kio.schema.list_partition_reassignments import v0 as list_partition_reassignments_v0
from kio.schema.metadata import v1 as metadata_v1
from kio.schema.metadata import v2 as metadata_v2
from kio.schema.metadata import v3 as metadata_v3
from kio.schema.metadata import v4 as metadata_v4
from kio.schema.metadata import v5 as metadata_v5
from kio.schema.metadata import v6 as metadata_v6
from kio.schema.metadata import v7 as metadata_v7
from kio.schema.metadata import v8 as metadata_v8
from kio.schema.metadata import v9 as metadata_v9
from kio.schema.metadata import v10 as metadata_v10
from kio.schema.metadata import v11 as metadata_v11
from kio.schema.metadata import v12 as metadata_v12
from kio.schema.metadata import v13 as metadata_v13

__all__ = [
    "AlterConfigsRequest",
    "AlterConfigsResponse",
    "AlterPartitionReassignmentsRequest",
    "AlterPartitionReassignmentsResponse",
    "AlterReplicaLogDirsRequest",
    "AlterReplicaLogDirsResponse",
    "ApiVersionsRequest",
    "ApiVersionsResponse",
    "CreatePartitionsRequest",
    "CreatePartitionsResponse",
    "CreateTopicsRequest",
    "CreateTopicsResponse",
    "DeleteTopicsRequest",
    "DeleteTopicsResponse",
    "DescribeClusterRequest",
    "DescribeClusterResponse",
    "DescribeConfigsRequest",
    "DescribeConfigsResponse",
    "DescribeLogDirsRequest",
    "DescribeLogDirsResponse",
    "ElectLeadersRequest",
    "ElectLeadersResponse",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResponse",
    "ListPartitionReassignmentsRequest",
    "ListPartitionReassignmentsResponse",
    "MetadataRequest",
    "MetadataResponse",
]

# fmt: off
# Metadata (key 3), versions 1-13
MetadataRequest: TypeAlias = (
    metadata_v1.MetadataRequest | metadata_v2.MetadataRequest | metadata_v3.MetadataRequest
    | metadata_v4.MetadataRequest | metadata_v5.MetadataRequest | metadata_v6.MetadataRequest
    | metadata_v7.MetadataRequest | metadata_v8.MetadataRequest | metadata_v9.MetadataRequest
    | metadata_v10.MetadataRequest | metadata_v11.MetadataRequest | metadata_v12.MetadataRequest
    | metadata_v13.MetadataRequest
)
MetadataResponse: TypeAlias = (
    metadata_v1.MetadataResponse | metadata_v2.MetadataResponse | metadata_v3.MetadataResponse
    | metadata_v4.MetadataResponse | metadata_v5.MetadataResponse | metadata_v6.MetadataResponse
    | metadata_v7.MetadataResponse | metadata_v8.MetadataResponse | metadata_v9.MetadataResponse
    | metadata_v10.MetadataResponse | metadata_v11.MetadataResponse | metadata_v12.MetadataResponse
    | metadata_v13.MetadataResponse
)
# ApiVersions (key 18), versions 0-3
ApiVersionsRequest: TypeAlias = (
    api_versions_v0.ApiVersionsRequest | api_versions_v1.ApiVersionsRequest
    | api_versions_v2.ApiVersionsRequest | api_versions_v3.ApiVersionsRequest
)
ApiVersionsResponse: TypeAlias = (
    api_versions_v0.ApiVersionsResponse | api_versions_v1.ApiVersionsResponse
    | api_versions_v2.ApiVersionsResponse | api_versions_v3.ApiVersionsResponse
)
# CreateTopics (key 19), versions 2-7
CreateTopicsRequest: TypeAlias = (
    create_topics_v2.CreateTopicsRequest | create_topics_v3.CreateTopicsRequest
    | create_topics_v4.CreateTopicsRequest | create_topics_v5.CreateTopicsRequest
    | create_topics_v6.CreateTopicsRequest | create_topics_v7.CreateTopicsRequest
)
CreateTopicsResponse: TypeAlias = (
    create_topics_v2.CreateTopicsResponse | create_topics_v3.CreateTopicsResponse
    | create_topics_v4.CreateTopicsResponse | create_topics_v5.CreateTopicsResponse
    | create_topics_v6.CreateTopicsResponse | create_topics_v7.CreateTopicsResponse
)
# DeleteTopics (key 20), versions 1-6
DeleteTopicsRequest: TypeAlias = (
    delete_topics_v1.DeleteTopicsRequest | delete_topics_v2.DeleteTopicsRequest
    | delete_topics_v3.DeleteTopicsRequest | delete_topics_v4.DeleteTopicsRequest
    | delete_topics_v5.DeleteTopicsRequest | delete_topics_v6.DeleteTopicsRequest
)
DeleteTopicsResponse: TypeAlias = (
    delete_topics_v1.DeleteTopicsResponse | delete_topics_v2.DeleteTopicsResponse
    | delete_topics_v3.DeleteTopicsResponse | delete_topics_v4.DeleteTopicsResponse
    | delete_topics_v5.DeleteTopicsResponse | delete_topics_v6.DeleteTopicsResponse
)
# DescribeConfigs (key 32), versions 1-4
DescribeConfigsRequest: TypeAlias = (
    describe_configs_v1.DescribeConfigsRequest | describe_configs_v2.DescribeConfigsRequest
    | describe_configs_v3.DescribeConfigsRequest | describe_configs_v4.DescribeConfigsRequest
)
DescribeConfigsResponse: TypeAlias = (
    describe_configs_v1.DescribeConfigsResponse | describe_configs_v2.DescribeConfigsResponse
    | describe_configs_v3.DescribeConfigsResponse | describe_configs_v4.DescribeConfigsResponse
)
# AlterConfigs (key 33), versions 0-2
AlterConfigsRequest: TypeAlias = (
    alter_configs_v0.AlterConfigsRequest | alter_configs_v1.AlterConfigsRequest
    | alter_configs_v2.AlterConfigsRequest
)
AlterConfigsResponse: TypeAlias = (
    alter_configs_v0.AlterConfigsResponse | alter_configs_v1.AlterConfigsResponse
    | alter_configs_v2.AlterConfigsResponse
)
# DescribeLogDirs (key 35), versions 1-4
DescribeLogDirsRequest: TypeAlias = (
    describe_log_dirs_v1.DescribeLogDirsRequest | describe_log_dirs_v2.DescribeLogDirsRequest
    | describe_log_dirs_v3.DescribeLogDirsRequest | describe_log_dirs_v4.DescribeLogDirsRequest
)
DescribeLogDirsResponse: TypeAlias = (
    describe_log_dirs_v1.DescribeLogDirsResponse | describe_log_dirs_v2.DescribeLogDirsResponse
    | describe_log_dirs_v3.DescribeLogDirsResponse | describe_log_dirs_v4.DescribeLogDirsResponse
)
# AlterReplicaLogDirs (key 34), versions 1-2
AlterReplicaLogDirsRequest: TypeAlias = (
    alter_replica_log_dirs_v1.AlterReplicaLogDirsRequest
    | alter_replica_log_dirs_v2.AlterReplicaLogDirsRequest
)
AlterReplicaLogDirsResponse: TypeAlias = (
    alter_replica_log_dirs_v1.AlterReplicaLogDirsResponse
    | alter_replica_log_dirs_v2.AlterReplicaLogDirsResponse
)
# CreatePartitions (key 37), versions 0-3
CreatePartitionsRequest: TypeAlias = (
    create_partitions_v0.CreatePartitionsRequest | create_partitions_v1.CreatePartitionsRequest
    | create_partitions_v2.CreatePartitionsRequest | create_partitions_v3.CreatePartitionsRequest
)
CreatePartitionsResponse: TypeAlias = (
    create_partitions_v0.CreatePartitionsResponse | create_partitions_v1.CreatePartitionsResponse
    | create_partitions_v2.CreatePartitionsResponse | create_partitions_v3.CreatePartitionsResponse
)
# IncrementalAlterConfigs (key 44), versions 0-1
IncrementalAlterConfigsRequest: TypeAlias = (
    incremental_alter_configs_v0.IncrementalAlterConfigsRequest
    | incremental_alter_configs_v1.IncrementalAlterConfigsRequest
)
IncrementalAlterConfigsResponse: TypeAlias = (
    incremental_alter_configs_v0.IncrementalAlterConfigsResponse
    | incremental_alter_configs_v1.IncrementalAlterConfigsResponse
)
# DescribeCluster (key 60), versions 0-1
DescribeClusterRequest: TypeAlias = (
    describe_cluster_v0.DescribeClusterRequest | describe_cluster_v1.DescribeClusterRequest
)
DescribeClusterResponse: TypeAlias = (
    describe_cluster_v0.DescribeClusterResponse | describe_cluster_v1.DescribeClusterResponse
)
# ElectLeaders (key 43), versions 0-2
ElectLeadersRequest: TypeAlias = (
    elect_leaders_v0.ElectLeadersRequest
    | elect_leaders_v1.ElectLeadersRequest
    | elect_leaders_v2.ElectLeadersRequest
)
ElectLeadersResponse: TypeAlias = (
    elect_leaders_v0.ElectLeadersResponse
    | elect_leaders_v1.ElectLeadersResponse
    | elect_leaders_v2.ElectLeadersResponse
)
# AlterPartitionReassignments (key 45), versions 0-1
AlterPartitionReassignmentsRequest: TypeAlias = (
    alter_partition_reassignments_v0.AlterPartitionReassignmentsRequest
    | alter_partition_reassignments_v1.AlterPartitionReassignmentsRequest
)
AlterPartitionReassignmentsResponse: TypeAlias = (
    alter_partition_reassignments_v0.AlterPartitionReassignmentsResponse
    | alter_partition_reassignments_v1.AlterPartitionReassignmentsResponse
)
# ListPartitionReassignments (key 46), versions 0
ListPartitionReassignmentsRequest: TypeAlias = (
    list_partition_reassignments_v0.ListPartitionReassignmentsRequest
)
ListPartitionReassignmentsResponse: TypeAlias = (
    list_partition_reassignments_v0.ListPartitionReassignmentsResponse
)
# fmt: on
