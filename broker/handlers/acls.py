"""CreateAcls, DescribeAcls and DeleteAcls: the ACLs of :attr:`Broker.authorizer`, kept in
:attr:`Broker.acl_store` (``<data_dir>/acls.json`` on one node, Kafka's znodes in a cluster:
:mod:`sluice.broker.security.acl_store`).

Kafka's answers: SECURITY_DISABLED when no authorizer is configured
(``authorizer.class.name``); CLUSTER_AUTHORIZATION_FAILED when the principal may not ALTER the
cluster (create, delete) or DESCRIBE it (describe); INVALID_REQUEST for a binding that cannot
be stored (a filter-only code, an empty name, a cluster not named ``kafka-cluster``, a
principal not ``TYPE:NAME``) or a filter with an UNKNOWN code. Creation is per binding; a
deletion answers, per filter, the bindings it removed.

>>> _filter(2, "orders", 4, None, None, 1, 1).pattern_type.name
'PREFIXED'
>>> _filter(0, None, 1, None, None, 1, 1) is None
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from sluice.broker.broker import Broker
from sluice.broker.cluster.blocking import run_blocking
from sluice.broker.protocol.api_keys import CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from sluice.broker.protocol.codec import make, nested
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.response_schema import response_schema
from sluice.broker.security.access import allowed
from sluice.broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

if TYPE_CHECKING:  # the unions import every version's classes: types only (start-up)
    from sluice.broker.protocol.messages import (
        CreateAclsRequest,
        CreateAclsResponse,
        DeleteAclsRequest,
        DeleteAclsResponse,
        DescribeAclsRequest,
        DescribeAclsResponse,
    )

_DISABLED = "No Authorizer is configured on the broker (authorizer.class.name)"
_DENIED = "The principal may not {} the cluster's ACLs"


async def create(
    broker: Broker, request: CreateAclsRequest, client: Connection
) -> CreateAclsResponse:
    schema = response_schema(CREATE_ACLS, request.__version__)
    result_cls = nested(schema, "results")
    authorizer = broker.authorizer
    refusal: tuple[ErrorCode, str] | None = None
    if authorizer is None:
        refusal = (ErrorCode.security_disabled, _DISABLED)
    elif not allowed(authorizer, client, CREATE_ACLS, ResourceType.CLUSTER):
        refusal = (ErrorCode.cluster_authorization_failed, _DENIED.format("alter"))
    results: list[Any] = []
    valid: list[AclBinding] = []
    for creation in request.creations:
        problem: tuple[ErrorCode, str] | None = refusal
        if problem is None:
            binding = _binding(creation)
            reason = "an unknown code" if binding is None else binding.problem()
            if reason is not None or binding is None:
                problem = (ErrorCode.invalid_request, f"Invalid ACL creation: {reason}")
            else:
                valid.append(binding)
        results.append(
            make(
                result_cls,
                error_code=problem[0] if problem else ErrorCode.none,
                error_message=problem[1] if problem else None,
            )
        )
    if valid and authorizer is not None:
        await run_blocking(broker.acl_store.change, valid, ())
        authorizer.add(valid)
    return make(schema, throttle_time=0, results=tuple(results))


async def describe(
    broker: Broker, request: DescribeAclsRequest, client: Connection
) -> DescribeAclsResponse:
    schema = response_schema(DESCRIBE_ACLS, request.__version__)
    resource_cls = nested(schema, "resources")
    acl_cls = nested(schema, "resources", "acls")
    authorizer = broker.authorizer
    found = _filter(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
    refusal: tuple[ErrorCode, str] | None = None
    if authorizer is None:
        refusal = (ErrorCode.security_disabled, _DISABLED)
    elif not allowed(authorizer, client, DESCRIBE_ACLS, ResourceType.CLUSTER):
        refusal = (ErrorCode.cluster_authorization_failed, _DENIED.format("describe"))
    elif found is None:
        refusal = (ErrorCode.invalid_request, "Invalid ACL filter: an UNKNOWN code")
    if refusal is not None or authorizer is None or found is None:
        code, message = refusal or (ErrorCode.unknown_server_error, None)
        return make(schema, throttle_time=0, error_code=code, error_message=message, resources=())
    by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in authorizer.bindings(found):
        by_pattern.setdefault(binding.pattern, []).append(binding.entry)
    resources = tuple(
        make(
            resource_cls,
            resource_type=int(pattern.resource_type),
            resource_name=pattern.name,
            pattern_type=int(pattern.pattern_type),
            acls=tuple(
                make(
                    acl_cls,
                    principal=e.principal,
                    host=e.host,
                    operation=int(e.operation),
                    permission_type=int(e.permission),
                )
                for e in entries
            ),
        )
        for pattern, entries in by_pattern.items()
    )
    return make(
        schema, throttle_time=0, error_code=ErrorCode.none, error_message=None,
        resources=resources,
    )  # fmt: skip


async def delete(
    broker: Broker, request: DeleteAclsRequest, client: Connection
) -> DeleteAclsResponse:
    schema = response_schema(DELETE_ACLS, request.__version__)
    result_cls = nested(schema, "filter_results")
    matching_cls = nested(schema, "filter_results", "matching_acls")
    authorizer = broker.authorizer
    refusal: tuple[ErrorCode, str] | None = None
    if authorizer is None:
        refusal = (ErrorCode.security_disabled, _DISABLED)
    elif not allowed(authorizer, client, DELETE_ACLS, ResourceType.CLUSTER):
        refusal = (ErrorCode.cluster_authorization_failed, _DENIED.format("alter"))
    results: list[Any] = []
    removed: list[AclBinding] = []
    for f in request.filters:
        found = _filter(
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        problem = refusal
        if problem is None and found is None:
            problem = (ErrorCode.invalid_request, "Invalid ACL filter: an UNKNOWN code")
        matched: list[AclBinding] = []
        if problem is None and authorizer is not None and found is not None:
            matched = [b for b in authorizer.remove(found) if b not in removed]
            removed += matched
        results.append(
            make(
                result_cls,
                error_code=problem[0] if problem else ErrorCode.none,
                error_message=problem[1] if problem else None,
                matching_acls=tuple(
                    make(
                        matching_cls,
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=int(b.pattern.resource_type),
                        resource_name=b.pattern.name,
                        pattern_type=int(b.pattern.pattern_type),
                        principal=b.entry.principal,
                        host=b.entry.host,
                        operation=int(b.entry.operation),
                        permission_type=int(b.entry.permission),
                    )
                    for b in matched
                ),
            )
        )
    if removed:
        await run_blocking(broker.acl_store.change, (), removed)
    return make(schema, throttle_time=0, filter_results=tuple(results))


def _binding(creation: Any) -> AclBinding | None:
    """The binding of a creation; None when a code is not one of Kafka's."""
    try:
        return AclBinding(
            ResourcePattern(
                ResourceType(creation.resource_type),
                creation.resource_name,
                PatternType(creation.resource_pattern_type),
            ),
            AccessControlEntry(
                creation.principal,
                creation.host,
                AclOperation(creation.operation),
                AclPermissionType(creation.permission_type),
            ),
        )
    except ValueError:
        return None


def _filter(
    rtype: int,
    name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclBindingFilter | None:
    """The filter of a DescribeAcls or DeleteAcls request; None when a code is UNKNOWN or not
    one of Kafka's (INVALID_REQUEST)."""
    try:
        found = AclBindingFilter(
            ResourceType(rtype),
            name,
            PatternType(pattern_type),
            principal,
            host,
            AclOperation(operation),
            AclPermissionType(permission),
        )
    except ValueError:
        return None
    codes = (found.resource_type, found.pattern_type, found.operation, found.permission)
    return None if any(code == 0 for code in codes) else found
