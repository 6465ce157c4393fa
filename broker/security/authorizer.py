"""The authorizer's decisions: Kafka's rules over a set of ACL bindings (``AclAuthorizer``,
``StandardAuthorizerData``).

For a request by ``principal`` from ``host`` to do ``operation`` on resource ``(type, name)``:

1. a super user (``super.users``) may do everything;
2. the ACLs that apply are those whose pattern matches the resource — LITERAL with its name or
   ``*``, PREFIXED with a prefix of its name — and whose principal is the request's or
   ``User:*`` and whose host is the request's or ``*``;
3. when no ACL at all is bound to the resource (whoever for), ``allow.everyone.if.no.acl.found``
   decides;
4. a DENY of the operation (or of ALL) wins over any ALLOW;
5. else an ALLOW of the operation or of ALL allows it; an ALLOW of READ, WRITE, DELETE or
   ALTER also allows DESCRIBE, and one of ALTER_CONFIGS allows DESCRIBE_CONFIGS (an implication
   that never applies to DENY);
6. else the request is denied.

Bindings are indexed by resource type and name (literal) and by prefix length (prefixed), so a
decision looks up a handful of dict entries whatever the number of ACLs. Not thread-safe: the
broker uses it from its event loop.

>>> from sluice.broker.security.acls import (AccessControlEntry, AclBinding, AclOperation,
...     AclPermissionType, PatternType, ResourcePattern, ResourceType)
>>> TOPIC, READ, WRITE = ResourceType.TOPIC, AclOperation.READ, AclOperation.WRITE
>>> authorizer = Authorizer()
>>> authorizer.add([AclBinding(ResourcePattern(TOPIC, "orders-", PatternType.PREFIXED),
...     AccessControlEntry("User:alice", "*", WRITE, AclPermissionType.ALLOW))])
>>> authorizer.authorize("User:alice", "10.0.0.1", WRITE, TOPIC, "orders-eu")
True
>>> authorizer.authorize("User:alice", "10.0.0.1", AclOperation.DESCRIBE, TOPIC, "orders-eu")
True
>>> authorizer.authorize("User:alice", "10.0.0.1", READ, TOPIC, "orders-eu")
False
>>> authorizer.authorize("User:bob", "10.0.0.1", WRITE, TOPIC, "orders-eu")
False
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from sluice.broker.security.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

__all__ = ["Authorizer"]

_IMPLIED_BY: Final = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}
"""The ALLOWed operations that also allow the key (never for DENY)."""


class Authorizer:
    """Kafka's ACL decisions over the bindings added (see the module docstring)."""

    def __init__(
        self, super_users: Iterable[str] = (), *, allow_everyone_if_no_acl_found: bool = False
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._literal: dict[tuple[ResourceType, str], set[AccessControlEntry]] = {}
        self._prefixed: dict[tuple[ResourceType, str], set[AccessControlEntry]] = {}
        self._prefix_lengths: dict[ResourceType, set[int]] = {}
        self.version = 0
        """Moves on at every change (a cache of decisions keyed by it stays right)."""

    def __len__(self) -> int:
        return sum(map(len, self._literal.values())) + sum(map(len, self._prefixed.values()))

    # -- the bindings ------------------------------------------------------------------------
    def add(self, bindings: Iterable[AclBinding]) -> None:
        """Add ``bindings`` (one already there is left as it is)."""
        for binding in bindings:
            pattern = binding.pattern
            key = (pattern.resource_type, pattern.name)
            if pattern.pattern_type == PatternType.PREFIXED:
                self._prefixed.setdefault(key, set()).add(binding.entry)
                self._prefix_lengths.setdefault(pattern.resource_type, set()).add(len(pattern.name))
            else:
                self._literal.setdefault(key, set()).add(binding.entry)
        self.version += 1

    def replace(self, bindings: Iterable[AclBinding]) -> None:
        """Hold exactly ``bindings`` (a reload from the ACL store)."""
        self._literal, self._prefixed, self._prefix_lengths = {}, {}, {}
        self.add(bindings)

    def bindings(self, found: AclBindingFilter | None = None) -> list[AclBinding]:
        """Every binding, or those ``found`` matches (DescribeAcls), in a stable order."""
        every = [
            AclBinding(ResourcePattern(rtype, name, ptype), entry)
            for ptype, table in (
                (PatternType.LITERAL, self._literal),
                (PatternType.PREFIXED, self._prefixed),
            )
            for (rtype, name), entries in table.items()
            for entry in entries
        ]
        chosen = every if found is None else [b for b in every if found.matches(b)]
        return sorted(chosen, key=_order)

    def remove(self, found: AclBindingFilter) -> list[AclBinding]:
        """Remove the bindings ``found`` matches (DeleteAcls); those removed."""
        removed = self.bindings(found)
        for binding in removed:
            pattern = binding.pattern
            key = (pattern.resource_type, pattern.name)
            prefixed = pattern.pattern_type == PatternType.PREFIXED
            table = self._prefixed if prefixed else self._literal
            table[key].discard(binding.entry)
            if not table[key]:
                del table[key]
        if removed:
            self._prefix_lengths = {}
            for rtype, name in self._prefixed:
                self._prefix_lengths.setdefault(rtype, set()).add(len(name))
            self.version += 1
        return removed

    # -- decisions ---------------------------------------------------------------------------
    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` from ``host`` may do ``operation`` on the resource."""
        if principal in self.super_users:
            return True
        bound = self._bound(resource_type, name)
        if not bound:
            return self.allow_everyone_if_no_acl_found
        implied = _IMPLIED_BY.get(operation, frozenset())
        allowed = False
        for entries in bound:
            for entry in entries:
                if entry.principal not in (principal, WILDCARD_PRINCIPAL):
                    continue
                if entry.host not in (host, WILDCARD):
                    continue
                exact = entry.operation in (operation, AclOperation.ALL)
                if entry.permission == AclPermissionType.DENY:
                    if exact:
                        return False
                elif exact or entry.operation in implied:
                    allowed = True
        return allowed

    def authorize_any(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Whether some ALLOW lets ``principal`` do ``operation`` on some resource of the type
        (Kafka's ``authorizeByResourceType``, simplified: a DENY on the same pattern cancels
        it): an idempotent producer needs WRITE on any topic (KIP-679)."""
        if principal in self.super_users:
            return True
        for table in (self._literal, self._prefixed):
            for (rtype, _name), entries in table.items():
                if rtype != resource_type:
                    continue
                applies = [
                    e
                    for e in entries
                    if e.principal in (principal, WILDCARD_PRINCIPAL)
                    and e.host in (host, WILDCARD)
                    and e.operation in (operation, AclOperation.ALL)
                ]
                if any(e.permission == AclPermissionType.ALLOW for e in applies) and not any(
                    e.permission == AclPermissionType.DENY for e in applies
                ):
                    return True
        return False

    def authorized_operations(
        self,
        principal: str,
        host: str,
        resource_type: ResourceType,
        name: str,
        supported: Iterable[AclOperation],
    ) -> int:
        """KIP-430's bit field: bit ``op`` set for each of ``supported`` that is allowed."""
        return sum(
            1 << op for op in supported if self.authorize(principal, host, op, resource_type, name)
        )

    def _bound(self, resource_type: ResourceType, name: str) -> list[set[AccessControlEntry]]:
        """The entry sets bound to the resource: its literal name, ``*``, its prefixes."""
        found = []
        for key in ((resource_type, name), (resource_type, WILDCARD)):
            entries = self._literal.get(key)
            if entries:
                found.append(entries)
        for length in self._prefix_lengths.get(resource_type, ()):
            if length <= len(name):
                entries = self._prefixed.get((resource_type, name[:length]))
                if entries:
                    found.append(entries)
        return found


def _order(binding: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    p, e = binding.pattern, binding.entry
    return (p.resource_type, p.name, p.pattern_type, e.principal, e.host, e.operation,
            e.permission)  # fmt: skip
