"""FindCoordinator and the group membership APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, ListGroups, DeleteGroups. The decisions are the coordinator's
(:mod:`sluice.broker.group.coordinator`); this module translates requests and responses. In a
cluster FindCoordinator names the leader of the key's internal-topic partition, a group not
coordinated here is answered NOT_COORDINATOR, and a write is answered once replicated.
With an authorizer each API checks its group (or transactional id) as
:mod:`sluice.broker.security.required_acls` says (GROUP_AUTHORIZATION_FAILED,
TRANSACTIONAL_ID_AUTHORIZATION_FAILED); ListGroups lists every group to a principal that may
DESCRIBE the cluster, else those it may DESCRIBE. DescribeGroups answers
``authorized_operations`` with the principal's allowed operations, or, without an authorizer,
every operation a group supports (:mod:`sluice.broker.protocol.authorized_operations`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.metadata_store import MetadataStoreError
from sluice.broker.errors import KafkaError
from sluice.broker.group.group import GroupState
from sluice.broker.internal_topic import InternalTopic, partition_for
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
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import allowed, allowed_operation, authorized_bits
from sluice.broker.security.acls import AclOperation, ResourceType

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
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

if TYPE_CHECKING:
    from sluice.broker.cluster.member import ClusterMember

GROUP_KEY, TXN_KEY = 0, 1
GROUP, TXN_ID, CLUSTER = ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER
DESCRIBE = AclOperation.DESCRIBE


async def find_coordinator(
    broker: Broker, request: FindCoordinatorRequest, client: Connection
) -> FindCoordinatorResponse:
    """On one node this node coordinates every group and transactional id; in a cluster, the
    leader of the key's partition of the internal topic does. The internal topic is created
    on first use, as Kafka does. v4 asks for several keys at once (KIP-699)."""
    schema = response_schema(FIND_COORDINATOR, request.__version__)
    store = (
        broker.transactions.store
        if getattr(request, "key_type", GROUP_KEY) == TXN_KEY
        else broker.groups.store
    )
    txn = getattr(request, "key_type", GROUP_KEY) == TXN_KEY
    if hasattr(request, "coordinator_keys"):
        coordinator_cls = nested(schema, "coordinators")
        found = []
        for key in request.coordinator_keys:
            code, message, node_id, host, port = (
                await _coordinator(broker, store, key, client)
                if _may_find(broker, client, key, txn)
                else _denied_key(txn)
            )
            found.append(
                make(
                    coordinator_cls,
                    key=key,
                    node_id=node_id,
                    host=host,
                    port=port,
                    error_code=code,
                    error_message=message,
                )
            )
        return make(schema, throttle_time=0, coordinators=tuple(found))
    code, message, node_id, host, port = (
        await _coordinator(broker, store, request.key, client)
        if _may_find(broker, client, request.key, txn)
        else _denied_key(txn)
    )
    return make(
        schema,
        throttle_time=0,
        error_code=code,
        error_message=message,
        node_id=node_id,
        host=host,
        port=port,
    )


def _may_find(broker: Broker, client: Connection, key: str, txn: bool) -> bool:
    """DESCRIBE on the group or transactional id (FindCoordinator)."""
    if broker.authorizer is None:
        return True
    if txn:
        return allowed(broker.authorizer, client, FIND_COORDINATOR, TXN_ID, key, "transaction")
    return allowed(broker.authorizer, client, FIND_COORDINATOR, GROUP, key, "group")


def _denied_key(txn: bool) -> tuple[ErrorCode, str | None, int, str, int]:
    code = (
        ErrorCode.transactional_id_authorization_failed
        if txn
        else ErrorCode.group_authorization_failed
    )
    return code, None, -1, "", -1


def _group_refused(broker: Broker, client: Connection, api_key: int, group_id: str) -> ErrorCode:
    """GROUP_AUTHORIZATION_FAILED when the principal may not use the group as the API needs,
    else the coordinator's refusal (NOT_COORDINATOR, ...) or NONE."""
    if broker.authorizer is not None and not allowed(
        broker.authorizer, client, api_key, GROUP, group_id
    ):
        return ErrorCode.group_authorization_failed
    return broker.groups.coordinator_error(group_id)


async def _coordinator(
    broker: Broker, store: InternalTopic, key: str, client: Connection
) -> tuple[ErrorCode, str | None, int, str, int]:
    """Kafka's answer: the coordinator's endpoint on the listener the request came in on."""
    if broker.cluster is None:
        try:
            store.ensure()
        except KafkaError as exc:  # the internal topic cannot be created (a full disk)
            return ErrorCode.coordinator_not_available, exc.message, -1, "", -1
        host, port = client.advertised or (broker.host, broker.port)
        return ErrorCode.none, None, broker.node_id, host, port
    listener = client.listener.name if client.listener is not None else None
    return await locate_coordinator(broker.cluster, store, key, listener)


async def locate_coordinator(
    cluster: ClusterMember, store: InternalTopic, key: str, listener: str | None = None
) -> tuple[ErrorCode, str | None, int, str, int]:
    """The coordinator of ``key`` in a cluster: the live leader of its partition of the
    internal topic (created with its replication factor and configs if missing), at its
    endpoint on ``listener`` (None: the inter-broker listener). Kafka's
    answers: COORDINATOR_NOT_AVAILABLE while the topic cannot be created (fewer live brokers
    than its replication factor), is not known yet, or the partition has no live leader."""
    try:
        await cluster.admin.ensure_topic(
            store.name, store.partitions, store.replication_factor, store.cluster_config
        )
    except KafkaError as exc:
        return ErrorCode.coordinator_not_available, exc.message, -1, "", -1
    except MetadataStoreError as exc:
        return ErrorCode.coordinator_not_available, str(exc), -1, "", -1
    assignment = cluster.cache.assignments.get(store.name)
    if assignment is None:
        return ErrorCode.coordinator_not_available, f"{store.name} is being created", -1, "", -1
    index = partition_for(key, len(assignment.value.partitions))
    leader = cluster.cache.leader_of(store.name, index)
    endpoint = None if leader < 0 else cluster.cache.endpoint(leader, listener)
    if endpoint is None:
        return (
            ErrorCode.coordinator_not_available,
            f"partition {index} of {store.name} has no live leader"
            + (f" on listener {listener}" if leader >= 0 else ""),
            -1,
            "",
            -1,
        )
    return ErrorCode.none, None, leader, endpoint[0], endpoint[1]


async def join_group(
    broker: Broker, request: JoinGroupRequest, client: Connection
) -> JoinGroupResponse:
    schema = response_schema(JOIN_GROUP, request.__version__)
    session = millis(request.session_timeout)
    rebalance = millis(getattr(request, "rebalance_timeout", session))
    refused = _group_refused(broker, client, JOIN_GROUP, request.group_id)
    if refused is not ErrorCode.none:
        return make(
            schema,
            throttle_time=0,
            error_code=refused,
            generation_id=-1,
            protocol_type=None,
            protocol_name=None if request.__version__ >= 7 else "",
            leader="",
            member_id=request.member_id,
            skip_assignment=False,
            members=(),
        )
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
    error = result.error
    if error is ErrorCode.none:  # a static member's new id was stored: answered once replicated
        error = await broker.groups.replicated(request.group_id, "group")
    return make(
        schema,
        throttle_time=0,
        error_code=error,
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
    broker: Broker, request: SyncGroupRequest, client: Connection
) -> SyncGroupResponse:
    schema = response_schema(SYNC_GROUP, request.__version__)
    refused = _group_refused(broker, client, SYNC_GROUP, request.group_id)
    if refused is not ErrorCode.none:
        return make(
            schema,
            throttle_time=0,
            error_code=refused,
            protocol_type=None,
            protocol_name=None,
            assignment=b"",
        )
    result = await broker.groups.membership(request.group_id).sync(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=getattr(request, "group_instance_id", None),
        generation=request.generation_id,
        protocol_type=getattr(request, "protocol_type", None),
        protocol=getattr(request, "protocol_name", None),
        assignments={a.member_id: a.assignment for a in request.assignments},
    )
    error = result.error
    if error is ErrorCode.none:  # the assignment is answered once replicated (Kafka's storeGroup)
        error = await broker.groups.replicated(request.group_id, "group")
    return make(
        schema,
        throttle_time=0,
        error_code=error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol,
        assignment=result.assignment if error is ErrorCode.none else b"",
    )


async def heartbeat(
    broker: Broker, request: HeartbeatRequest, client: Connection
) -> HeartbeatResponse:
    schema = response_schema(HEARTBEAT, request.__version__)
    refused = _group_refused(broker, client, HEARTBEAT, request.group_id)
    if refused is not ErrorCode.none:
        return make(schema, throttle_time=0, error_code=refused)
    code = broker.groups.membership(request.group_id).heartbeat(
        group_id=request.group_id,
        member_id=request.member_id,
        instance_id=getattr(request, "group_instance_id", None),
        generation=request.generation_id,
    )
    return make(schema, throttle_time=0, error_code=code)


async def leave_group(
    broker: Broker, request: LeaveGroupRequest, client: Connection
) -> LeaveGroupResponse:
    schema = response_schema(LEAVE_GROUP, request.__version__)
    refused = _group_refused(broker, client, LEAVE_GROUP, request.group_id)
    if refused is not ErrorCode.none:
        return make(schema, throttle_time=0, error_code=refused, members=())
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
    broker: Broker, request: DescribeGroupsRequest, client: Connection
) -> DescribeGroupsResponse:
    schema = response_schema(DESCRIBE_GROUPS, request.__version__)
    group_cls = nested(schema, "groups")
    member_cls = nested(schema, "groups", "members")
    wanted = getattr(request, "include_authorized_operations", False)
    operations = authorized(GROUP_OPERATIONS, requested=wanted)
    authorizer = broker.authorizer
    described = []
    for group_id in request.groups:
        refused = _group_refused(broker, client, DESCRIBE_GROUPS, group_id)
        if authorizer is not None and wanted:
            operations = authorized_bits(authorizer, client, GROUP, group_id, GROUP_OPERATIONS)
        group = None if refused is not ErrorCode.none else broker.groups.describe(group_id)
        if group is None:
            described.append(
                make(
                    group_cls,
                    error_code=refused,
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
    broker: Broker, request: ListGroupsRequest, client: Connection
) -> ListGroupsResponse:
    schema = response_schema(LIST_GROUPS, request.__version__)
    states = set(getattr(request, "states_filter", ()) or ())
    entry_cls = nested(schema, "groups")
    authorizer = broker.authorizer
    every = authorizer is None or allowed_operation(
        authorizer, client, LIST_GROUPS, DESCRIBE, CLUSTER, audit=False
    )
    groups = tuple(
        make(
            entry_cls,
            group_id=g.group_id,
            protocol_type=g.protocol_type or "",
            group_state=g.state.value,
        )
        for g in broker.groups.list()
        if (not states or g.state.value in states)
        and (
            every
            or allowed_operation(  # authorizer set when not every
                authorizer,  # type: ignore[arg-type]
                client,
                LIST_GROUPS,
                DESCRIBE,
                GROUP,
                g.group_id,
                audit=False,
            )
        )
    )
    # as Kafka's: the groups loaded so far, and an error while a shard loads
    code = ErrorCode.coordinator_load_in_progress if broker.groups.loading() else ErrorCode.none
    return make(schema, throttle_time=0, error_code=code, groups=groups)


async def delete_groups(
    broker: Broker, request: DeleteGroupsRequest, client: Connection
) -> DeleteGroupsResponse:
    schema = response_schema(DELETE_GROUPS, request.__version__)
    result_cls = nested(schema, "results")
    results = []
    for group_id in request.groups_names:
        code = _group_refused(broker, client, DELETE_GROUPS, group_id)
        if code is ErrorCode.none:
            code = broker.groups.delete(group_id)
        if code is ErrorCode.none:
            code = await broker.groups.replicated(group_id)
        results.append(make(result_cls, group_id=group_id, error_code=code))
    return make(schema, throttle_time=0, results=tuple(results))
