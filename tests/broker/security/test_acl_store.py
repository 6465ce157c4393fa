"""The single node's ACL store (``<data_dir>/acls.json``) and the audit log's rate limit.
ZooKeeper's store is exercised by ``tests/cluster/test_cluster_acls.py``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from sluice.broker.security.acl_store import FileAclStore
from sluice.broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from sluice.broker.security.audit import AuditLog

ALICE_READS = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "orders-", PatternType.PREFIXED),
    AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
)
BOB_DENIED = AclBinding(
    ResourcePattern(ResourceType.GROUP, "billing"),
    AccessControlEntry("User:bob", "10.0.0.1", AclOperation.ALL, AclPermissionType.DENY),
)


def test_bindings_round_trip_and_removal(tmp_path: Path) -> None:
    store = FileAclStore(tmp_path)
    assert store.load() == []
    store.change([ALICE_READS, BOB_DENIED], [])
    assert sorted(map(str, FileAclStore(tmp_path).load())) == sorted(
        map(str, [ALICE_READS, BOB_DENIED])
    )
    store.change([ALICE_READS], [BOB_DENIED])  # adding one already there changes nothing
    assert FileAclStore(tmp_path).load() == [ALICE_READS]
    assert '"permissionType": "Allow"' in (tmp_path / "acls.json").read_text()


def test_a_file_that_does_not_parse_is_refused_with_its_path(tmp_path: Path) -> None:
    (tmp_path / "acls.json").write_text('{"version": 1, "acls": [{"name": 3}]}')
    with pytest.raises(ValueError, match=r"acls\.json"):
        FileAclStore(tmp_path).load()


def test_the_audit_log_holds_back_lines_past_its_rate_and_counts_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    audit = AuditLog(clock=lambda: now[0], lines_per_second=2)
    with caplog.at_level(logging.WARNING, logger="sluice.audit"):
        for _ in range(5):
            audit.denied("User:bob", "127.0.0.1", "Produce", "WRITE", "TOPIC", "t")
        now[0] += 1.0
        audit.denied("User:bob", "127.0.0.1", "Fetch", "READ", "TOPIC", "t")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert lines[-1].endswith("(3 earlier lines suppressed)"), lines[-1]
    assert lines[0] == (
        "denied principal='User:bob' host=127.0.0.1 api=Produce operation=WRITE resource=TOPIC:'t'"
    )
