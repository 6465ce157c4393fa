"""Kafka's ACL model (KIP-11, KIP-290): bindings, filters and their ZooKeeper form.

An ACL says "principal P is ALLOWED or DENIED operation O from host H on the resources that
resource pattern R matches". A :class:`ResourcePattern` is a resource type, a name and a
pattern type: LITERAL (the name itself, or ``*`` for every resource of the type) or PREFIXED
(every name starting with it). The enums carry Kafka's wire codes (CreateAcls, DescribeAcls,
DeleteAcls and the authorized-operations bit fields use them).

Filters (:class:`AclBindingFilter`: DescribeAcls, DeleteAcls) match bindings as Kafka's
``ResourcePatternFilter`` and ``AccessControlEntryFilter`` do: ``None`` fields and the ANY codes
match everything; pattern type MATCH matches every binding that would apply to the named
resource (the literal name, the literal ``*``, and the prefixes of the name).

ZooKeeper form (Kafka's ZooKeeper-era layout, so that an operator who knows it can read it): the
ACLs of one pattern are one znode, ``/kafka-acl/<Type>/<name>`` for LITERAL and
``/kafka-acl-extended/prefixed/<Type>/<name>`` for PREFIXED, holding::

    {"version": 1, "acls": [{"principal": "User:alice", "permissionType": "Allow",
                              "operation": "Read", "host": "*"}]}

>>> topic = ResourcePattern(ResourceType.TOPIC, "orders-", PatternType.PREFIXED)
>>> topic.matches(ResourceType.TOPIC, "orders-eu")
True
>>> znode_path(topic)
'/kafka-acl-extended/prefixed/Topic/orders-'
>>> entry = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
>>> from_znode(to_znode([entry])) == [entry]
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AccessControlEntry",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourceType",
    "from_znode",
    "to_znode",
    "znode_path",
]

WILDCARD: Final = "*"
"""A LITERAL name, or a host, that stands for every one."""
WILDCARD_PRINCIPAL: Final = "User:*"
"""The principal that stands for every user."""
CLUSTER_NAME: Final = "kafka-cluster"
"""The one name of the Cluster resource."""


class ResourceType(IntEnum):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    """Kafka's ``PatternType`` codes (ANY and MATCH only in filters)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    """Kafka's ``AclOperation`` codes (ANY only in filters; ALL in bindings means every one)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    """Kafka's ``AclPermissionType`` codes (ANY only in filters)."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# the names Kafka writes in znodes (ResourceType.toString, AclOperation and permission JSON)
_TYPE_NAMES: Final = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}
_OPERATION_NAMES: Final = {
    op: "".join(part.capitalize() for part in op.name.split("_"))
    for op in AclOperation
    if op >= AclOperation.ALL
}
_OPERATIONS_BY_NAME: Final = {name: op for op, name in _OPERATION_NAMES.items()}
_PERMISSION_NAMES: Final = {AclPermissionType.ALLOW: "Allow", AclPermissionType.DENY: "Deny"}
_PERMISSIONS_BY_NAME: Final = {name: p for p, name in _PERMISSION_NAMES.items()}


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """The resources a binding applies to (LITERAL or PREFIXED)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, resource_type: ResourceType, name: str) -> bool:
        """Whether the resource ``(resource_type, name)`` is one of this pattern's."""
        if resource_type != self.resource_type:
            return False
        if self.pattern_type == PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """Who (principal, host), what (operation) and whether (permission)."""

    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: an entry on a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def problem(self) -> str | None:
        """Why CreateAcls must refuse this binding (Kafka's INVALID_REQUEST message), or None.

        >>> AclBinding(ResourcePattern(ResourceType.CLUSTER, "x"), AccessControlEntry(
        ...     "User:a", "*", AclOperation.ALTER, AclPermissionType.ALLOW)).problem()
        "the Cluster resource's name is 'kafka-cluster', not 'x'"
        """
        pattern, entry = self.pattern, self.entry
        if pattern.resource_type not in _TYPE_NAMES:
            return f"resource type {pattern.resource_type.name} is not one an ACL can name"
        if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"pattern type {pattern.pattern_type.name} is for filters only"
        if not pattern.name:
            return "the resource name must not be empty"
        if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
            return f"the Cluster resource's name is {CLUSTER_NAME!r}, not {pattern.name!r}"
        principal_type, _, principal_name = entry.principal.partition(":")
        if not principal_type or not principal_name:
            return f"principal {entry.principal!r} is not TYPE:NAME (User:alice)"
        if not entry.host:
            return "the host must be an address or '*'"
        if entry.operation not in _OPERATION_NAMES:
            return f"operation {entry.operation.name} is for filters only"
        if entry.permission not in _PERMISSION_NAMES:
            return f"permission {entry.permission.name} is for filters only"
        return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """Which bindings DescribeAcls lists and DeleteAcls removes; ``None`` and ANY match all."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    def matches(self, binding: AclBinding) -> bool:
        """Whether ``binding`` is one of the filter's (Kafka's ``AclBindingFilter.matches``)."""
        return self._matches_pattern(binding.pattern) and self._matches_entry(binding.entry)

    def _matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type == PatternType.MATCH:
            return self.name is None or pattern.matches(pattern.resource_type, self.name)
        if self.pattern_type not in (PatternType.ANY, pattern.pattern_type):
            return False
        return self.name is None or self.name == pattern.name

    def _matches_entry(self, entry: AccessControlEntry) -> bool:
        return (
            self.principal in (None, entry.principal)
            and self.host in (None, entry.host)
            and self.operation in (AclOperation.ANY, entry.operation)
            and self.permission in (AclPermissionType.ANY, entry.permission)
        )


def znode_path(pattern: ResourcePattern) -> str:
    """The znode that holds the ACLs of ``pattern`` (Kafka's ZooKeeper-era layout)."""
    root = (
        "/kafka-acl"
        if pattern.pattern_type == PatternType.LITERAL
        else ("/kafka-acl-extended/prefixed")
    )
    return f"{root}/{_TYPE_NAMES[pattern.resource_type]}/{pattern.name}"


def to_znode(entries: Iterable[AccessControlEntry]) -> bytes:
    """A pattern's entries as Kafka writes them in its znode."""
    acls = [
        {
            "principal": e.principal,
            "permissionType": _PERMISSION_NAMES[e.permission],
            "operation": _OPERATION_NAMES[e.operation],
            "host": e.host,
        }
        for e in entries
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def from_znode(data: bytes) -> list[AccessControlEntry]:
    """The entries of a pattern's znode; ValueError names what does not parse."""
    try:
        doc = json.loads(data)
        return [
            AccessControlEntry(
                str(acl["principal"]),
                str(acl["host"]),
                _OPERATIONS_BY_NAME[acl["operation"]],
                _PERMISSIONS_BY_NAME[acl["permissionType"]],
            )
            for acl in doc["acls"]
        ]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"not an ACL znode ({type(error).__name__}: {error})") from None
