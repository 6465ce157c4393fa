"""The ``security:`` section of ``sluice.yaml``, read into a :class:`~sluice.up.spec.SecuritySpec`:
the listener's protocol and mechanism, PEM files that must exist, the admin and users (passwords
from ``${env:VAR}`` placeholders or files, never from the file itself) and ACLs. Problems are
reported to the file's reader at their line and key, as every other section's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Protocol

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sluice.up.spec import AclSpec, SecuritySpec, UserSpec
from sluice.yaml_positions import Entry, line

__all__ = ["Reading", "SecuritySection"]

_KEYS = (
    "protocol",
    "mechanism",
    "keystore",
    "truststore",
    "admin",
    "users",
    "acls",
    "connect_user",
    "streams_user",
)
_USER = ("name", "password", "password_file")
_ACL = (
    "principal",
    "topic",
    "group",
    "cluster",
    "transactional_id",
    "pattern",
    "operations",
    "permission",
    "host",
)
_ACL_RESOURCES = ("topic", "group", "cluster", "transactional_id")
_ACL_OPERATIONS = (
    "all",
    "read",
    "write",
    "create",
    "delete",
    "alter",
    "describe",
    "cluster_action",
    "describe_configs",
    "alter_configs",
    "idempotent_write",
)
_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class Reading(Protocol):
    """What the section needs of the file's reader: where relative paths start, how to report
    a problem, and its typed accessors."""

    base: Path

    def problem(self, key: str | None, message: str, at: int | None) -> None: ...

    def mapping(self, node: Node, prefix: str, allowed: tuple[str, ...]) -> dict[str, Entry]: ...

    def scalar(self, entry: Entry | None, key: str) -> str | None: ...

    def strings(self, entry: Entry | None, key: str) -> tuple[str, ...]: ...

    def unique(self, names: list[tuple[str, str, int]], key: str) -> None: ...


class SecuritySection:
    """Reads the ``security:`` section through the file's reader."""

    def __init__(self, reader: Reading) -> None:
        self.reader = reader

    def read(self, entry: Entry) -> SecuritySpec | None:
        """The section, or None (its problems reported to the reader)."""
        keys = self.reader.mapping(entry.value, "security.", _KEYS)
        if not keys and not isinstance(entry.value, MappingNode):
            return None
        protocol = (
            self.reader.scalar(keys.get("protocol"), "security.protocol") or "SASL_SSL"
        ).upper()
        if protocol not in ("SASL_SSL", "SASL_PLAINTEXT"):
            self.reader.problem(
                "security.protocol",
                f"must be SASL_SSL or SASL_PLAINTEXT, not {protocol!r}",
                keys["protocol"].line,
            )
        mechanism = (
            self.reader.scalar(keys.get("mechanism"), "security.mechanism") or "SCRAM-SHA-512"
        )
        if mechanism.upper() not in _MECHANISMS:
            self.reader.problem(
                "security.mechanism",
                f"must be one of {', '.join(_MECHANISMS)}, not {mechanism!r}",
                keys["mechanism"].line,
            )
        keystore = self.pem(keys.get("keystore"), "security.keystore")
        truststore = self.pem(keys.get("truststore"), "security.truststore")
        if protocol == "SASL_SSL":
            for key, _found in (("keystore", keystore), ("truststore", truststore)):
                if key not in keys:
                    self.reader.problem(
                        f"security.{key}",
                        "SASL_SSL needs the broker's PEM key and "
                        "chain (keystore:) and its CA (truststore:)",
                        entry.line,
                    )
        admin_user, admin_password = "admin", ""
        if "admin" not in keys:
            self.reader.problem(
                "security.admin",
                "missing: the super user sluice up logs in as (name:, password: or password_file:)",
                entry.line,
            )
        else:
            admin = self.user(keys["admin"].value, "security.admin")
            if admin is not None:
                admin_user, admin_password = admin.name, admin.password
        users: list[UserSpec] = []
        if "users" in keys:
            node = keys["users"].value
            if not isinstance(node, SequenceNode):
                self.reader.problem("security.users", "must be a list", keys["users"].line)
            else:
                users = [
                    u
                    for i, n in enumerate(node.value)
                    if (u := self.user(n, f"security.users[{i}]")) is not None
                ]
        self.reader.unique([(u.name, "user", u.line) for u in users], "security.users")
        acls: list[AclSpec] = []
        if "acls" in keys:
            node = keys["acls"].value
            if not isinstance(node, SequenceNode):
                self.reader.problem("security.acls", "must be a list", keys["acls"].line)
            else:
                acls = [
                    a
                    for i, n in enumerate(node.value)
                    if (a := self.acl(n, f"security.acls[{i}]")) is not None
                ]
        known = {admin_user, *(u.name for u in users)}
        chosen: dict[str, str | None] = {}
        for key in ("connect_user", "streams_user"):
            chosen[key] = self.reader.scalar(keys.get(key), f"security.{key}")
            if chosen[key] is not None and chosen[key] not in known:
                self.reader.problem(
                    f"security.{key}",
                    f"{chosen[key]!r} is neither the admin nor one of security.users",
                    keys[key].line,
                )
        return SecuritySpec(
            protocol=protocol,
            mechanism=mechanism.upper(),
            keystore=keystore,
            truststore=truststore,
            admin_user=admin_user,
            admin_password=admin_password,
            users=tuple(users),
            acls=tuple(acls),
            connect_user=chosen["connect_user"],
            streams_user=chosen["streams_user"],
        )

    def pem(self, entry: Entry | None, key: str) -> Path | None:
        value = self.reader.scalar(entry, key)
        if value is None or entry is None:
            return None
        path = self.reader.base / value
        try:
            pem = b"-----BEGIN " in path.read_bytes()[: 64 * 1024]
        except OSError as error:
            self.reader.problem(key, f"cannot read {path}: {error.strerror}", entry.line)
            return None
        if not pem:
            self.reader.problem(key, f"{path} is not a PEM file", entry.line)
            return None
        return path

    def user(self, node: Node, where: str) -> UserSpec | None:
        keys = self.reader.mapping(node, where + ".", _USER)
        name = self.reader.scalar(keys.get("name"), where + ".name")
        if "name" not in keys:
            self.reader.problem(where, "missing: name:", line(node))
        given = [k for k in ("password", "password_file") if k in keys]
        if len(given) != 1:
            self.reader.problem(
                where,
                "give one of password: (${env:VAR} for a variable) or password_file:",
                line(node),
            )
            return None
        password = self.secret(keys[given[0]], f"{where}.{given[0]}", given[0] == "password_file")
        if name is None or password is None:
            return None
        return UserSpec(name, password, line(node))

    def secret(self, entry: Entry, key: str, from_file: bool) -> str | None:
        """A password from the file (``${env:VAR}`` placeholders) or a file; never shown."""
        if not isinstance(entry.value, ScalarNode) or not entry.value.value:
            self.reader.problem(key, "must be a single value", entry.line)
            return None
        written = str(entry.value.value)
        if from_file:
            path = self.reader.base / written
            try:
                return path.read_text(encoding="utf-8").rstrip("\r\n")
            except (OSError, UnicodeDecodeError) as error:
                reason = getattr(error, "strerror", None) or "not UTF-8 text"
                self.reader.problem(key, f"cannot read {path}: {reason}", entry.line)
                return None
        missing = [v for v in _ENV.findall(written) if v not in os.environ]
        if missing:
            self.reader.problem(
                key, f"the environment variable {missing[0]} is not set", entry.line
            )
            return None
        return _ENV.sub(lambda m: os.environ[m[1]], written)

    def acl(self, node: Node, where: str) -> AclSpec | None:
        keys = self.reader.mapping(node, where + ".", _ACL)
        principal = self.reader.scalar(keys.get("principal"), where + ".principal")
        if principal is not None and ":" not in principal:
            self.reader.problem(
                where + ".principal",
                f"must be TYPE:NAME (User:alice), not {principal!r}",
                keys["principal"].line,
            )
        resources = [k for k in _ACL_RESOURCES if k in keys]
        if "principal" not in keys or len(resources) != 1:
            self.reader.problem(
                where,
                "needs principal: and one of topic:, group:, cluster:, transactional_id:",
                line(node),
            )
            return None
        resource = resources[0]
        name = self.reader.scalar(keys[resource], f"{where}.{resource}")
        pattern = (self.reader.scalar(keys.get("pattern"), where + ".pattern") or "literal").lower()
        if pattern not in ("literal", "prefixed"):
            self.reader.problem(
                where + ".pattern",
                f"must be literal or prefixed, not {pattern!r}",
                keys["pattern"].line,
            )
        permission = (
            self.reader.scalar(keys.get("permission"), where + ".permission") or "allow"
        ).lower()
        if permission not in ("allow", "deny"):
            self.reader.problem(
                where + ".permission",
                f"must be allow or deny, not {permission!r}",
                keys["permission"].line,
            )
        operations = tuple(
            o.lower() for o in self.reader.strings(keys.get("operations"), where + ".operations")
        )
        if not operations:
            self.reader.problem(
                where + ".operations", "missing: a list (read, write, …)", line(node)
            )
        for operation in operations:
            if operation not in _ACL_OPERATIONS:
                self.reader.problem(
                    where + ".operations",
                    f"unknown operation {operation!r}; known: {', '.join(_ACL_OPERATIONS)}",
                    keys["operations"].line,
                )
        if principal is None or name is None:
            return None
        host = self.reader.scalar(keys.get("host"), where + ".host") or "*"
        return AclSpec(principal, resource, name, pattern, operations, permission, host, line(node))
