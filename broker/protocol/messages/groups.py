"""Consumer-group APIs: the group protocol, committed offsets, FindCoordinator. Each name is
the union of kio's classes of the versions served (see
:mod:`sluice.broker.protocol.messages`)."""

from __future__ import annotations

from typing import TypeAlias

from kio.schema.delete_groups import v0 as delete_groups_v0
from kio.schema.delete_groups import v1 as delete_groups_v1
from kio.schema.delete_groups import v2 as delete_groups_v2
from kio.schema.describe_groups import v0 as describe_groups_v0
from kio.schema.describe_groups import v1 as describe_groups_v1
from kio.schema.describe_groups import v2 as describe_groups_v2
from kio.schema.describe_groups import v3 as describe_groups_v3
from kio.schema.describe_groups import v4 as describe_groups_v4
from kio.schema.describe_groups import v5 as describe_groups_v5
from kio.schema.find_coordinator import v0 as find_coordinator_v0
from kio.schema.find_coordinator import v1 as find_coordinator_v1
from kio.schema.find_coordinator import v2 as find_coordinator_v2
from kio.schema.find_coordinator import v3 as find_coordinator_v3
from kio.schema.find_coordinator import v4 as find_coordinator_v4
from kio.schema.heartbeat import v0 as heartbeat_v0
from kio.schema.heartbeat import v1 as heartbeat_v1
from kio.schema.heartbeat import v2 as heartbeat_v2
from kio.schema.heartbeat import v3 as heartbeat_v3
from kio.schema.heartbeat import v4 as heartbeat_v4
from kio.schema.join_group import v0 as join_group_v0
from kio.schema.join_group import v1 as join_group_v1
from kio.schema.join_group import v2 as join_group_v2
from kio.schema.join_group import v3 as join_group_v3
from kio.schema.join_group import v4 as join_group_v4
from kio.schema.join_group import v5 as join_group_v5
from kio.schema.join_group import v6 as join_group_v6
from kio.schema.join_group import v7 as join_group_v7
from kio.schema.leave_group import v0 as leave_group_v0
from kio.schema.leave_group import v1 as leave_group_v1
from kio.schema.leave_group import v2 as leave_group_v2
from kio.schema.leave_group import v3 as leave_group_v3
from kio.schema.leave_group import v4 as leave_group_v4
from kio.schema.list_groups import v0 as list_groups_v0
from kio.schema.list_groups import v1 as list_groups_v1
from kio.schema.list_groups import v2 as list_groups_v2
from kio.schema.list_groups import v3 as list_groups_v3
from kio.schema.list_groups import v4 as list_groups_v4
from kio.schema.offset_commit import v2 as offset_commit_v2
from kio.schema.offset_commit import v3 as offset_commit_v3
from kio.schema.offset_commit import v4 as offset_commit_v4
from kio.schema.offset_commit import v5 as offset_commit_v5
from kio.schema.offset_commit import v6 as offset_commit_v6
from kio.schema.offset_commit import v7 as offset_commit_v7
from kio.schema.offset_commit import v8 as offset_commit_v8
from kio.schema.offset_delete import v0 as offset_delete_v0
from kio.schema.offset_fetch import v1 as offset_fetch_v1
from kio.schema.offset_fetch import v2 as offset_fetch_v2
from kio.schema.offset_fetch import v3 as offset_fetch_v3
from kio.schema.offset_fetch import v4 as offset_fetch_v4
from kio.schema.offset_fetch import v5 as offset_fetch_v5
from kio.schema.offset_fetch import v6 as offset_fetch_v6
from kio.schema.offset_fetch import v7 as offset_fetch_v7
from kio.schema.sync_group import v0 as sync_group_v0
from kio.schema.sync_group import v1 as sync_group_v1
from kio.schema.sync_group import v2 as sync_group_v2
from kio.schema.sync_group import v3 as sync_group_v3
from kio.schema.sync_group import v4 as sync_group_v4
from kio.schema.sync_group import v5 as sync_group_v5

__all__ = [
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "FindCoordinatorRequest",
    "FindCoordinatorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "OffsetCommitRequest",
    "OffsetCommitResponse",
    "OffsetDeleteRequest",
    "OffsetDeleteResponse",
    "OffsetFetchRequest",
    "OffsetFetchResponse",
    "SyncGroupRequest",
    "SyncGroupResponse",
]

# fmt: off
# OffsetCommit (key 8), versions 2-8
OffsetCommitRequest: TypeAlias = (
    offset_commit_v2.OffsetCommitRequest | offset_commit_v3.OffsetCommitRequest
    | offset_commit_v4.OffsetCommitRequest | offset_commit_v5.OffsetCommitRequest
    | offset_commit_v6.OffsetCommitRequest | offset_commit_v7.OffsetCommitRequest
    | offset_commit_v8.OffsetCommitRequest
)
OffsetCommitResponse: TypeAlias = (
    offset_commit_v2.OffsetCommitResponse | offset_commit_v3.OffsetCommitResponse
    | offset_commit_v4.OffsetCommitResponse | offset_commit_v5.OffsetCommitResponse
    | offset_commit_v6.OffsetCommitResponse | offset_commit_v7.OffsetCommitResponse
    | offset_commit_v8.OffsetCommitResponse
)
# OffsetFetch (key 9), versions 1-7
OffsetFetchRequest: TypeAlias = (
    offset_fetch_v1.OffsetFetchRequest | offset_fetch_v2.OffsetFetchRequest
    | offset_fetch_v3.OffsetFetchRequest | offset_fetch_v4.OffsetFetchRequest
    | offset_fetch_v5.OffsetFetchRequest | offset_fetch_v6.OffsetFetchRequest
    | offset_fetch_v7.OffsetFetchRequest
)
OffsetFetchResponse: TypeAlias = (
    offset_fetch_v1.OffsetFetchResponse | offset_fetch_v2.OffsetFetchResponse
    | offset_fetch_v3.OffsetFetchResponse | offset_fetch_v4.OffsetFetchResponse
    | offset_fetch_v5.OffsetFetchResponse | offset_fetch_v6.OffsetFetchResponse
    | offset_fetch_v7.OffsetFetchResponse
)
# FindCoordinator (key 10), versions 0-4
FindCoordinatorRequest: TypeAlias = (
    find_coordinator_v0.FindCoordinatorRequest | find_coordinator_v1.FindCoordinatorRequest
    | find_coordinator_v2.FindCoordinatorRequest | find_coordinator_v3.FindCoordinatorRequest
    | find_coordinator_v4.FindCoordinatorRequest
)
FindCoordinatorResponse: TypeAlias = (
    find_coordinator_v0.FindCoordinatorResponse | find_coordinator_v1.FindCoordinatorResponse
    | find_coordinator_v2.FindCoordinatorResponse | find_coordinator_v3.FindCoordinatorResponse
    | find_coordinator_v4.FindCoordinatorResponse
)
# JoinGroup (key 11), versions 0-7
JoinGroupRequest: TypeAlias = (
    join_group_v0.JoinGroupRequest | join_group_v1.JoinGroupRequest | join_group_v2.JoinGroupRequest
    | join_group_v3.JoinGroupRequest | join_group_v4.JoinGroupRequest
    | join_group_v5.JoinGroupRequest | join_group_v6.JoinGroupRequest
    | join_group_v7.JoinGroupRequest
)
JoinGroupResponse: TypeAlias = (
    join_group_v0.JoinGroupResponse | join_group_v1.JoinGroupResponse
    | join_group_v2.JoinGroupResponse | join_group_v3.JoinGroupResponse
    | join_group_v4.JoinGroupResponse | join_group_v5.JoinGroupResponse
    | join_group_v6.JoinGroupResponse | join_group_v7.JoinGroupResponse
)
# Heartbeat (key 12), versions 0-4
HeartbeatRequest: TypeAlias = (
    heartbeat_v0.HeartbeatRequest | heartbeat_v1.HeartbeatRequest | heartbeat_v2.HeartbeatRequest
    | heartbeat_v3.HeartbeatRequest | heartbeat_v4.HeartbeatRequest
)
HeartbeatResponse: TypeAlias = (
    heartbeat_v0.HeartbeatResponse | heartbeat_v1.HeartbeatResponse | heartbeat_v2.HeartbeatResponse
    | heartbeat_v3.HeartbeatResponse | heartbeat_v4.HeartbeatResponse
)
# LeaveGroup (key 13), versions 0-4
LeaveGroupRequest: TypeAlias = (
    leave_group_v0.LeaveGroupRequest | leave_group_v1.LeaveGroupRequest
    | leave_group_v2.LeaveGroupRequest | leave_group_v3.LeaveGroupRequest
    | leave_group_v4.LeaveGroupRequest
)
LeaveGroupResponse: TypeAlias = (
    leave_group_v0.LeaveGroupResponse | leave_group_v1.LeaveGroupResponse
    | leave_group_v2.LeaveGroupResponse | leave_group_v3.LeaveGroupResponse
    | leave_group_v4.LeaveGroupResponse
)
# SyncGroup (key 14), versions 0-5
SyncGroupRequest: TypeAlias = (
    sync_group_v0.SyncGroupRequest | sync_group_v1.SyncGroupRequest | sync_group_v2.SyncGroupRequest
    | sync_group_v3.SyncGroupRequest | sync_group_v4.SyncGroupRequest
    | sync_group_v5.SyncGroupRequest
)
SyncGroupResponse: TypeAlias = (
    sync_group_v0.SyncGroupResponse | sync_group_v1.SyncGroupResponse
    | sync_group_v2.SyncGroupResponse | sync_group_v3.SyncGroupResponse
    | sync_group_v4.SyncGroupResponse | sync_group_v5.SyncGroupResponse
)
# DescribeGroups (key 15), versions 0-5
DescribeGroupsRequest: TypeAlias = (
    describe_groups_v0.DescribeGroupsRequest | describe_groups_v1.DescribeGroupsRequest
    | describe_groups_v2.DescribeGroupsRequest | describe_groups_v3.DescribeGroupsRequest
    | describe_groups_v4.DescribeGroupsRequest | describe_groups_v5.DescribeGroupsRequest
)
DescribeGroupsResponse: TypeAlias = (
    describe_groups_v0.DescribeGroupsResponse | describe_groups_v1.DescribeGroupsResponse
    | describe_groups_v2.DescribeGroupsResponse | describe_groups_v3.DescribeGroupsResponse
    | describe_groups_v4.DescribeGroupsResponse | describe_groups_v5.DescribeGroupsResponse
)
# ListGroups (key 16), versions 0-4
ListGroupsRequest: TypeAlias = (
    list_groups_v0.ListGroupsRequest | list_groups_v1.ListGroupsRequest
    | list_groups_v2.ListGroupsRequest | list_groups_v3.ListGroupsRequest
    | list_groups_v4.ListGroupsRequest
)
ListGroupsResponse: TypeAlias = (
    list_groups_v0.ListGroupsResponse | list_groups_v1.ListGroupsResponse
    | list_groups_v2.ListGroupsResponse | list_groups_v3.ListGroupsResponse
    | list_groups_v4.ListGroupsResponse
)
# DeleteGroups (key 42), versions 0-2
DeleteGroupsRequest: TypeAlias = (
    delete_groups_v0.DeleteGroupsRequest | delete_groups_v1.DeleteGroupsRequest
    | delete_groups_v2.DeleteGroupsRequest
)
DeleteGroupsResponse: TypeAlias = (
    delete_groups_v0.DeleteGroupsResponse | delete_groups_v1.DeleteGroupsResponse
    | delete_groups_v2.DeleteGroupsResponse
)
# OffsetDelete (key 47), versions 0
OffsetDeleteRequest: TypeAlias = offset_delete_v0.OffsetDeleteRequest
OffsetDeleteResponse: TypeAlias = offset_delete_v0.OffsetDeleteResponse
# fmt: on
