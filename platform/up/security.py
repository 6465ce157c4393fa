"""What ``sluice up`` does for a ``security:`` section once the broker listens: create (or set
the password of) its SCRAM users and create its ACLs, as the admin (a super user logging in
with PLAIN). Both are idempotent, so a restart or a reload does it again harmlessly; ACLs that
left the file are not removed (Kafka's tools never remove what they did not make either).
Passwords go to the broker only (salted there), never to a log or the state file.

It also writes the files that hand secrets to the children: :func:`private_file` (mode 0600)
for the broker's properties and the Connect worker's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from confluent_kafka.admin import (  # type: ignore[attr-defined]  # exported without __all__
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialUpsertion,
)

from sluice import clients
from sluice.up.spec import AclSpec, SecuritySpec

__all__ = ["apply_security", "private_file"]

_TIMEOUT = 30.0
_RESOURCES = {
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "cluster": ResourceType.BROKER,
    "transactional_id": ResourceType.TRANSACTIONAL_ID,
}


def private_file(path: Path, lines: Iterable[tuple[str, str]], *, escape: bool = False) -> Path:
    """Write ``key=value`` lines to ``path`` readable by its owner only (it may hold secrets);
    ``escape``: values with Java's escapes (for a reader that undoes them, as the Connect
    worker's does; the broker's reads values literally)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(
            "".join(f"{key}={_escaped(value) if escape else value}\n" for key, value in lines)
        )
    return path


def _escaped(value: str) -> str:
    """A Java properties value: backslashes doubled, line breaks escaped."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _bindings(acl: AclSpec) -> list[AclBinding]:
    name = "kafka-cluster" if acl.resource_type == "cluster" else acl.resource_name
    pattern = ResourcePatternType[acl.pattern.upper()]
    permission = AclPermissionType[acl.permission.upper()]
    return [
        AclBinding(
            _RESOURCES[acl.resource_type],
            name,
            pattern,
            acl.principal,
            acl.host,
            AclOperation[operation.upper()],
            permission,
        )
        for operation in acl.operations
    ]


def apply_security(bootstrap: str, spec: SecuritySpec, report: Callable[[str], None]) -> None:
    """Create ``spec``'s SCRAM users and ACLs on the broker at ``bootstrap``; raises
    KafkaException when the broker refuses."""
    admin = clients.admin(bootstrap, **spec.admin_client())
    if spec.users:
        mechanism = ScramMechanism[spec.mechanism.replace("-", "_")]
        upserts: list[UserScramCredentialAlteration] = [
            UserScramCredentialUpsertion(
                user.name, ScramCredentialInfo(mechanism, 8192), user.password.encode()
            )
            for user in spec.users
        ]
        for name, future in admin.alter_user_scram_credentials(
            upserts, request_timeout=_TIMEOUT
        ).items():
            future.result(_TIMEOUT)
            report(f"user {name}: {spec.mechanism} credentials set")
    bindings = [binding for acl in spec.acls for binding in _bindings(acl)]
    if bindings:
        for future in admin.create_acls(bindings, request_timeout=_TIMEOUT).values():
            future.result(_TIMEOUT)
        report(f"{len(bindings)} ACLs in place")
