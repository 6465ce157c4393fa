"""The checks the handlers make: :func:`allowed` and :func:`denied` ask the authorizer for the
operation :mod:`.required_acls` names and write a denial to the audit log
(:mod:`.audit`). Handlers call them only when ``broker.authorizer`` is not None, so that a
broker without an authorizer pays one None check per request.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from sluice.broker.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from sluice.broker.security.audit import audit_log
from sluice.broker.security.authorizer import Authorizer
from sluice.broker.security.required_acls import REQUIRED, operation

if TYPE_CHECKING:
    from sluice.broker.protocol.context import Connection

__all__ = [
    "CLUSTER_DENIED",
    "address",
    "allowed",
    "allowed_operation",
    "authorized_bits",
    "denied",
    "refuses_cluster",
]

_API_NAMES: Final = {r.api_key: r.api for r in REQUIRED}
CLUSTER_DENIED: Final = "Cluster authorization failed."
"""Kafka's message with CLUSTER_AUTHORIZATION_FAILED."""


def allowed(
    authorizer: Authorizer,
    client: Connection,
    api_key: int,
    rtype: ResourceType,
    name: str = CLUSTER_NAME,
    when: str = "",
) -> bool:
    """Whether ``client`` may do what API ``api_key`` needs on the resource (audited)."""
    return allowed_operation(
        authorizer, client, api_key, operation(api_key, rtype, when), rtype, name
    )


def allowed_operation(
    authorizer: Authorizer,
    client: Connection,
    api_key: int,
    op: AclOperation,
    rtype: ResourceType,
    name: str = CLUSTER_NAME,
    *,
    audit: bool = True,
) -> bool:
    """Whether ``client`` may do ``op`` on the resource (audited unless ``audit`` is False:
    a check that only filters what is shown, as Kafka's ``logIfDenied=false``)."""
    principal, host = client.principal or "", address(client)
    if authorizer.authorize(principal, host, op, rtype, name):
        return True
    if audit:
        audit_log.denied(
            principal,
            host,
            _API_NAMES.get(api_key, str(api_key)),
            op.name,
            rtype.name,
            name,
        )
    return False


def denied(
    authorizer: Authorizer,
    client: Connection,
    api_key: int,
    rtype: ResourceType,
    names: Iterable[str],
    when: str = "",
) -> set[str]:
    """The names among ``names`` that ``client`` may not use as API ``api_key`` needs (one
    decision per distinct name)."""
    op = operation(api_key, rtype, when)
    return {
        name
        for name in set(names)
        if not allowed_operation(authorizer, client, api_key, op, rtype, name)
    }


def authorized_bits(
    authorizer: Authorizer, client: Connection, rtype: ResourceType, name: str, supported: int
) -> int:
    """KIP-430's bit field of the resource: the bits of ``supported`` whose operation
    ``client`` is allowed."""
    ops = [AclOperation(code) for code in range(32) if supported >> code & 1]
    principal = client.principal or ""
    return authorizer.authorized_operations(principal, address(client), rtype, name, ops)


def address(client: Connection) -> str:
    """The client's IP address as ACL hosts name it (``client_host`` is Kafka's
    ``/127.0.0.1``, as DescribeGroups shows it)."""
    return client.client_host.lstrip("/")


def refuses_cluster(
    authorizer: Authorizer | None, client: Connection, api_key: int, when: str = ""
) -> bool:
    """Whether an authorizer denies what API ``api_key`` needs on the cluster (audited)."""
    return authorizer is not None and not allowed(
        authorizer, client, api_key, ResourceType.CLUSTER, CLUSTER_NAME, when
    )
