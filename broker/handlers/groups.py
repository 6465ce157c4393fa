"""FindCoordinator and the group membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups. The decisions are the coordinator's
(:mod:`sluice.broker.group.coordinator`); this module translates requests and responses.
DescribeGroups answers ``authorized_operations`` as Kafka without an authorizer does
(:mod:`sluice.broker.protocol.authorized_operations`).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.group.group import GroupState
from sluice.broker.protocol.api_keys import (
    DELETE_GROUPS,
    DESCRIBE_GROUPS,
    FIND_COORDINATOR,
    HEARTBEAT,
    JOIN_GROUP,
    LEAVE_GROUP,
    LIST_GROUPS,
    SYNC_GROUP,
)
from sluice.broker.protocol.authorized_operations import GROUP_OPERATIONS, authorized
from sluice.broker.protocol.codec import make, millis, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from sluice.broker.protocol.response_schema import response_schema

GROUP_KEY, TXN_KEY = 0, 1


async def find_coordinator(
    broker: Broker, request: FindCoordinatorRequest, _client: Connection
) -> FindCoordinatorResponse:
    """This node coordinates every group and transactional id; the internal topic is created
    on first use, as Kafka does."""
    schema = response_schema(FIND_COORDINATOR, request.__version__)
    store = (
        broker.transactions.store
        if getattr(request, "key_type", GROUP_KEY) == TXN_KEY
        else broker.groups.store
    )
    store.ensure()
    return make(
        schema,
        throttle_time=0,
        error_code=ErrorCode.none,
        error_message=None,
        node_id=broker.node_id,
        host=broker.host,
        port=broker.port,
    )


async def join_group(
    broker: Broker, request: JoinGroupRequest, client: Connection
) -> JoinGroupResponse:
    schema = response_schema(JOIN_GROUP, request.__version__)
    session = millis(request.session_timeout)
    rebalance = millis(getattr(request, "rebalance_timeout", session))
    broker.groups.store.ensure()
    result = await broker.groups.membership(request.group_id).join(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=getattr(request, "group_instance_id", None),
        session_timeout=session,
        rebalance_timeout=rebalance,
        protocol_type=request.protocol_type,
        protocols=[(p.name, p.metadata) for p in request.protocols],
        client_id=client.client_id or "",
        client_host=client.client_host,
        require_known_member=request.__version__ >= 4,
    )
    member_cls = nested(schema, "members")
    protocol = result.protocol
    if protocol is None and request.__version__ < 7:  # nullable from v7 on
        protocol = ""
    return make(
        schema,
        throttle_time=0,
        error_code=result.error,
        generation_id=result.generation,
        protocol_type=result.protocol_type,
        protocol_name=protocol,
        leader=result.leader,
        member_id=result.member_id,
        skip_assignment=False,
        members=tuple(
            make(member_cls, member_id=m, group_instance_id=i, metadata=meta)
            for m, i, meta in result.members
        ),
    )


async def sync_group(
    broker: Broker, request: SyncGroupRequest, _client: Connection
) -> SyncGroupResponse:
    schema = response_schema(SYNC_GROUP, request.__version__)
    result = await broker.groups.membership(request.group_id).sync(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=getattr(request, "group_instance_id", None),
        generation=request.generation_id,
        protocol_type=getattr(request, "protocol_type", None),
        protocol=getattr(request, "protocol_name", None),
        assignments={a.member_id: a.assignment for a in request.assignments},
    )
    return make(
        schema,
        throttle_time=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol,
        assignment=result.assignment,
    )


async def heartbeat(
    broker: Broker, request: HeartbeatRequest, _client: Connection
) -> HeartbeatResponse:
    schema = response_schema(HEARTBEAT, request.__version__)
    code = broker.groups.membership(request.group_id).heartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=getattr(request, "group_instance_id", None),
        generation=request.generation_id,
    )
    return make(schema, throttle_time=0, error_code=code)


async def leave_group(
    broker: Broker, request: LeaveGroupRequest, _client: Connection
) -> LeaveGroupResponse:
    schema = response_schema(LEAVE_GROUP, request.__version__)
    if hasattr(request, "members"):
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    code, codes = broker.groups.membership(request.group_id).leave(request.group_id, leaving)
    if not hasattr(request, "members") and codes:
        code = codes[0]
    member_cls = nested(schema, "members")
    members = (
        ()
        if member_cls is type(None)
        else tuple(
            make(member_cls, member_id=m, group_instance_id=i, error_code=c)
            for (m, i), c in zip(leaving, codes, strict=True)
        )
    )
    return make(schema, throttle_time=0, error_code=code, members=members)


async def describe_groups(
    broker: Broker, request: DescribeGroupsRequest, _client: Connection
) -> DescribeGroupsResponse:
    schema = response_schema(DESCRIBE_GROUPS, request.__version__)
    group_cls = nested(schema, "groups")
    member_cls = nested(schema, "groups", "members")
    operations = authorized(
        GROUP_OPERATIONS, requested=getattr(request, "include_authorized_operations", False)
    )
    described = []
    for group_id in request.groups:
        group = broker.groups.describe(group_id)
        if group is None:
            described.append(
                make(
                    group_cls,
                    error_code=ErrorCode.none,
                    group_id=group_id,
                    group_state=GroupState.DEAD.value,
                    protocol_type="",
                    protocol_data="",
                    members=(),
                    authorized_operations=operations,
                )
            )
            continue
        stable = group.state is GroupState.STABLE
        members = tuple(
            make(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(group.protocol) if stable and group.protocol else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        described.append(
            make(
                group_cls,
                error_code=ErrorCode.none,
                group_id=group_id,
                group_state=group.state.value,
                protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol or "") if stable else "",
                members=members,
                authorized_operations=operations,
            )
        )
    return make(schema, throttle_time=0, groups=tuple(described))


async def list_groups(
    broker: Broker, request: ListGroupsRequest, _client: Connection
) -> ListGroupsResponse:
    schema = response_schema(LIST_GROUPS, request.__version__)
    states = set(getattr(request, "states_filter", ()) or ())
    entry_cls = nested(schema, "groups")
    groups = tuple(
        make(
            entry_cls,
            group_id=g.group_id,
            protocol_type=g.protocol_type or "",
            group_state=g.state.value,
        )
        for g in broker.groups.list()
        if not states or g.state.value in states
    )
    return make(schema, throttle_time=0, error_code=ErrorCode.none, groups=groups)


async def delete_groups(
    broker: Broker, request: DeleteGroupsRequest, _client: Connection
) -> DeleteGroupsResponse:
    schema = response_schema(DELETE_GROUPS, request.__version__)
    result_cls = nested(schema, "results")
    return make(
        schema,
        throttle_time=0,
        results=tuple(
            make(result_cls, group_id=g, error_code=broker.groups.delete(g))
            for g in request.groups_names
        ),
    )
