"""Where the ACLs are kept: a file of the data directory on one node, Kafka's ZooKeeper-era
znodes in a cluster (:mod:`sluice.broker.security.acls` has the znode layout and JSON).

- :class:`FileAclStore`: ``<data_dir>/acls.json``::

      {"version": 1, "acls": [{"resourceType": "Topic", "name": "orders",
                               "patternType": "LITERAL", "principal": "User:alice",
                               "permissionType": "Allow", "operation": "Read", "host": "*"}]}

  replaced atomically (temporary file, fsync, rename), so a crash leaves the old or the new
  ACLs; a file that does not parse is refused with its path, not guessed at.
- :class:`ZooKeeperAclStore`: one znode per resource pattern (``/kafka-acl/<Type>/<name>``,
  ``/kafka-acl-extended/prefixed/<Type>/<name>``), each change a versioned read-modify-write
  followed by a sequential notification under ``/kafka-acl-changes`` (literal) or
  ``/kafka-acl-extended-changes`` (prefixed); every broker watches both and reloads.

Both are blocking (file system, ZooKeeper): the broker calls them through ``run_blocking``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Final, Protocol

from sluice.broker.cluster.metadata_store import AclZnodeStore, Watch
from sluice.broker.log.files import write_atomically
from sluice.broker.security.acls import (
    AccessControlEntry,
    AclBinding,
    PatternType,
    ResourcePattern,
    ResourceType,
    from_znode,
    to_znode,
    znode_path,
)

__all__ = ["FILE_NAME", "AclStore", "FileAclStore", "ZooKeeperAclStore"]

FILE_NAME: Final = "acls.json"

_TYPES_BY_NAME: Final = {
    "Topic": ResourceType.TOPIC,
    "Group": ResourceType.GROUP,
    "Cluster": ResourceType.CLUSTER,
    "TransactionalId": ResourceType.TRANSACTIONAL_ID,
    "DelegationToken": ResourceType.DELEGATION_TOKEN,
    "User": ResourceType.USER,
}
_TYPE_NAMES: Final = {code: name for name, code in _TYPES_BY_NAME.items()}


class AclStore(Protocol):
    """The ACLs of the cluster (or of the one node)."""

    def load(self) -> list[AclBinding]:
        """Every binding stored."""
        ...

    def change(self, add: Iterable[AclBinding], remove: Iterable[AclBinding]) -> None:
        """Store ``add`` and forget ``remove`` (bindings not there are ignored)."""
        ...

    def watch(self, callback: Callable[[], None]) -> Watch | None:
        """Call ``callback`` (from any thread) when another broker changed the ACLs; None
        where no one else writes them (one node)."""
        ...


def _grouped(bindings: Iterable[AclBinding]) -> dict[ResourcePattern, set[AccessControlEntry]]:
    grouped: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for binding in bindings:
        grouped.setdefault(binding.pattern, set()).add(binding.entry)
    return grouped


class FileAclStore:
    """One node's ACLs, in ``<data_dir>/acls.json``."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / FILE_NAME

    def load(self) -> list[AclBinding]:
        if not self.path.exists():
            return []
        try:
            doc = json.loads(self.path.read_bytes())
            found = []
            for acl in doc["acls"]:
                pattern = ResourcePattern(
                    _TYPES_BY_NAME[acl["resourceType"]],
                    str(acl["name"]),
                    PatternType[acl["patternType"]],
                )
                (entry,) = from_znode(json.dumps({"acls": [acl]}).encode())
                found.append(AclBinding(pattern, entry))
            return found
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{self.path}: not an ACL file ({error})") from None

    def change(self, add: Iterable[AclBinding], remove: Iterable[AclBinding]) -> None:
        gone = set(remove)
        every = [b for b in self.load() if b not in gone]
        every += [b for b in dict.fromkeys(add) if b not in every]
        acls: list[dict[str, Any]] = []
        for pattern, entries in sorted(
            _grouped(every).items(), key=lambda item: (item[0].resource_type, item[0].name)
        ):
            for acl in json.loads(to_znode(sorted(entries, key=_entry_order)))["acls"]:
                acls.append(
                    {
                        "resourceType": _TYPE_NAMES[pattern.resource_type],
                        "name": pattern.name,
                        "patternType": pattern.pattern_type.name,
                        **acl,
                    }
                )
        write_atomically(self.path, json.dumps({"version": 1, "acls": acls}, indent=1).encode())

    def watch(self, callback: Callable[[], None]) -> Watch | None:
        return None


class ZooKeeperAclStore:
    """The cluster's ACLs, in Kafka's znodes (see the module docstring)."""

    def __init__(self, store: AclZnodeStore) -> None:
        self.store = store

    def load(self) -> list[AclBinding]:
        found = []
        for path, data in self.store.read_all().items():
            pattern = _pattern_of(path)
            if pattern is None:
                continue
            found += [AclBinding(pattern, entry) for entry in from_znode(data)]
        return found

    def change(self, add: Iterable[AclBinding], remove: Iterable[AclBinding]) -> None:
        adding, removing = _grouped(add), _grouped(remove)
        for pattern in dict.fromkeys([*adding, *removing]):
            plus, minus = adding.get(pattern, set()), removing.get(pattern, set())

            def updated(
                data: bytes | None,
                plus: set[AccessControlEntry] = plus,
                minus: set[AccessControlEntry] = minus,
            ) -> bytes | None:
                entries = set() if data is None else set(from_znode(data))
                entries = (entries - minus) | plus
                return to_znode(sorted(entries, key=_entry_order)) if entries else None

            notification = (
                f"{_TYPE_NAMES[pattern.resource_type]}:{pattern.name}"
                if pattern.pattern_type == PatternType.LITERAL
                else json.dumps(
                    {
                        "version": 1,
                        "resourceType": _TYPE_NAMES[pattern.resource_type],
                        "name": pattern.name,
                        "patternType": pattern.pattern_type.name,
                    }
                )
            )
            self.store.update(znode_path(pattern), updated, notification)

    def watch(self, callback: Callable[[], None]) -> Watch | None:
        return self.store.watch_changes(callback)


def _pattern_of(path: str) -> ResourcePattern | None:
    for prefix, pattern_type in (
        ("/kafka-acl-extended/prefixed/", PatternType.PREFIXED),
        ("/kafka-acl/", PatternType.LITERAL),
    ):
        if path.startswith(prefix):
            rtype, _, name = path[len(prefix) :].partition("/")
            if rtype in _TYPES_BY_NAME and name:
                return ResourcePattern(_TYPES_BY_NAME[rtype], name, pattern_type)
    return None


def _entry_order(entry: AccessControlEntry) -> tuple[str, str, int, int]:
    return entry.principal, entry.host, entry.operation, entry.permission
