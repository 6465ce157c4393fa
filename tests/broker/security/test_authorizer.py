"""The authorizer's decisions (:mod:`sluice.broker.security.authorizer`) by Kafka's rules: each
rule on its own, then Hypothesis against a reference that checks every binding one by one (the
authorizer's indexes must decide the same); and the ACL model's filters and znode form."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    from_znode,
    to_znode,
    znode_path,
)
from sluice.broker.security.authorizer import Authorizer

TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def acl(
    name: str,
    operation: AclOperation,
    permission: AclPermissionType = ALLOW,
    principal: str = "User:alice",
    host: str = "*",
    pattern: PatternType = LITERAL,
    rtype: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(rtype, name, pattern),
        AccessControlEntry(principal, host, operation, permission),
    )


def authorizer(*bindings: AclBinding, **keys: object) -> Authorizer:
    made = Authorizer(**keys)  # type: ignore[arg-type]
    made.add(bindings)
    return made


def may(az: Authorizer, op: AclOperation, name: str = "orders", who: str = "User:alice",
        host: str = "10.0.0.1", rtype: ResourceType = TOPIC) -> bool:  # fmt: skip
    return az.authorize(who, host, op, rtype, name)


def test_no_acl_on_a_resource_is_allow_everyone_if_no_acl_found() -> None:
    assert not may(authorizer(), Op.READ)
    assert may(authorizer(allow_everyone_if_no_acl_found=True), Op.READ)
    # an ACL for someone else on the resource: the default no longer applies
    other = acl("orders", Op.READ, principal="User:bob")
    assert not may(authorizer(other, allow_everyone_if_no_acl_found=True), Op.READ)
    # an ACL on another resource does not count
    elsewhere = acl("payments", Op.READ)
    assert may(authorizer(elsewhere, allow_everyone_if_no_acl_found=True), Op.READ)


def test_super_users_may_do_everything_even_when_denied() -> None:
    az = authorizer(acl("orders", Op.ALL, DENY), super_users=["User:alice"])
    assert may(az, Op.WRITE) and may(az, Op.DELETE)
    assert not may(az, Op.WRITE, who="User:bob")


def test_deny_wins_over_allow_and_all() -> None:
    az = authorizer(acl("orders", Op.ALL), acl("orders-", Op.WRITE, DENY, pattern=PREFIXED))
    assert may(az, Op.WRITE) and may(az, Op.READ)
    assert not may(az, Op.WRITE, "orders-eu")  # the prefixed deny
    assert not may(az, Op.READ, "orders-eu")  # no allow there
    wildcard_deny = authorizer(acl("orders", Op.READ), acl("*", Op.READ, DENY))
    assert not may(wildcard_deny, Op.READ)


def test_read_write_delete_alter_imply_describe_and_alter_configs_describe_configs() -> None:
    for op in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        assert may(authorizer(acl("orders", op)), Op.DESCRIBE), op
    assert may(authorizer(acl("orders", Op.ALTER_CONFIGS)), Op.DESCRIBE_CONFIGS)
    assert not may(authorizer(acl("orders", Op.CREATE)), Op.DESCRIBE)
    assert not may(authorizer(acl("orders", Op.DESCRIBE)), Op.READ)
    # the implication never applies to a deny: denying READ leaves DESCRIBE to the allows
    both = authorizer(acl("orders", Op.DESCRIBE), acl("orders", Op.READ, DENY))
    assert may(both, Op.DESCRIBE) and not may(both, Op.READ)


def test_hosts_principals_and_wildcards() -> None:
    az = authorizer(
        acl("orders", Op.READ, host="10.0.0.1"), acl("orders", Op.WRITE, principal="User:*")
    )
    assert may(az, Op.READ) and not may(az, Op.READ, host="10.0.0.2")
    assert may(az, Op.WRITE, who="User:anyone")
    assert not may(az, Op.READ, who="User:anyone")
    assert may(authorizer(acl("*", Op.READ)), Op.READ, "whatever")


def test_resource_types_are_apart() -> None:
    az = authorizer(acl("orders", Op.READ, rtype=GROUP))
    assert may(az, Op.READ, rtype=GROUP) and not may(az, Op.READ)


def test_authorized_operations_bits() -> None:
    az = authorizer(acl("orders", Op.WRITE), acl("orders", Op.ALTER_CONFIGS))
    supported = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS]
    bits = az.authorized_operations("User:alice", "h", TOPIC, "orders", supported)
    assert {op for op in Op if bits >> op & 1} == {
        Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS
    }  # fmt: skip


def test_filters_describe_and_delete_as_kafka() -> None:
    bindings = [
        acl("orders", Op.READ),
        acl("*", Op.WRITE),
        acl("ord", Op.READ, pattern=PREFIXED),
        acl("payments", Op.READ, principal="User:bob"),
        acl("g", Op.READ, rtype=GROUP),
    ]
    az = authorizer(*bindings)
    match = AclBindingFilter(TOPIC, "orders", PatternType.MATCH)
    assert set(az.bindings(match)) == set(bindings[:3])  # orders, *, and the prefix ord
    assert set(az.bindings(AclBindingFilter(TOPIC, "orders", PatternType.ANY))) == {bindings[0]}
    assert set(az.bindings(AclBindingFilter(name="ord", pattern_type=PREFIXED))) == {bindings[2]}
    assert set(az.bindings(AclBindingFilter(principal="User:bob"))) == {bindings[3]}
    assert len(az.bindings(AclBindingFilter())) == 5
    removed = az.remove(AclBindingFilter(TOPIC, pattern_type=PREFIXED))
    assert removed == [bindings[2]]
    assert not may(az, Op.READ, "ordx")
    assert len(az) == 4
    assert az.remove(AclBindingFilter(GROUP)) == [bindings[4]]


def test_a_binding_create_acls_must_refuse_says_why() -> None:
    assert acl("orders", Op.READ).problem() is None
    assert "filters only" in str(acl("orders", Op.ANY).problem())
    assert "filters only" in str(acl("orders", Op.READ, pattern=PatternType.MATCH).problem())
    assert "TYPE:NAME" in str(acl("orders", Op.READ, principal="alice").problem())
    assert "kafka-cluster" in str(acl("c", Op.ALTER, rtype=CLUSTER).problem())
    assert acl("kafka-cluster", Op.ALTER, rtype=CLUSTER).problem() is None


def test_the_znode_form_is_kafkas() -> None:
    binding = acl("orders", Op.IDEMPOTENT_WRITE, DENY, host="10.0.0.1")
    assert znode_path(binding.pattern) == "/kafka-acl/Topic/orders"
    assert to_znode([binding.entry]) == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Deny",'
        b'"operation":"IdempotentWrite","host":"10.0.0.1"}]}'
    )
    assert from_znode(to_znode([binding.entry])) == [binding.entry]
    with pytest.raises(ValueError, match="not an ACL znode"):
        from_znode(b'{"version":1,"acls":[{"principal":"User:a"}]}')


# -- the indexes decide as a binding-by-binding reference does ----------------------------------

NAMES = st.sampled_from(["orders", "orders-eu", "ord", "o", "payments", "*"])
OPS = st.sampled_from([o for o in Op if o >= Op.ALL])
BINDINGS = st.builds(
    acl,
    NAMES,
    OPS,
    st.sampled_from([ALLOW, DENY]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", "10.0.0.1"]),
    st.sampled_from([LITERAL, PREFIXED]),
    st.sampled_from([TOPIC, GROUP]),
)


def reference(bindings: list[AclBinding], who: str, host: str, op: AclOperation,
              rtype: ResourceType, name: str, everyone: bool) -> bool:  # fmt: skip
    bound = [b for b in bindings if b.pattern.matches(rtype, name)]
    if not bound:
        return everyone
    applies = [
        b.entry for b in bound
        if b.entry.principal in (who, "User:*") and b.entry.host in (host, "*")
    ]  # fmt: skip
    if any(e.permission == DENY and e.operation in (op, Op.ALL) for e in applies):
        return False
    implied = {Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
               Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS}}.get(op, set())  # fmt: skip
    return any(
        e.permission == ALLOW and (e.operation in (op, Op.ALL) or e.operation in implied)
        for e in applies
    )


@settings(max_examples=300, deadline=None)
@given(
    bindings=st.lists(BINDINGS, max_size=12),
    who=st.sampled_from(["User:alice", "User:bob"]),
    host=st.sampled_from(["10.0.0.1", "10.0.0.2"]),
    op=OPS.filter(lambda o: o != Op.ALL),
    rtype=st.sampled_from([TOPIC, GROUP]),
    name=st.sampled_from(["orders", "orders-eu", "ord", "payments", "x"]),
    everyone=st.booleans(),
)
def test_the_indexes_decide_as_the_reference(
    bindings: list[AclBinding],
    who: str,
    host: str,
    op: AclOperation,
    rtype: ResourceType,
    name: str,
    everyone: bool,
) -> None:
    az = authorizer(*bindings, allow_everyone_if_no_acl_found=everyone)
    expected = reference(bindings, who, host, op, rtype, name, everyone)
    assert az.authorize(who, host, op, rtype, name) == expected
    # removing everything a filter matches leaves the others deciding
    az.remove(AclBindingFilter(principal="User:bob"))
    rest = [b for b in bindings if b.entry.principal != "User:bob"]
    assert az.authorize(who, host, op, rtype, name) == reference(
        rest, who, host, op, rtype, name, everyone
    )
