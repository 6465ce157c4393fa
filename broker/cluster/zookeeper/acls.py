"""Kafka's ACL znodes on ZooKeeper: ``/kafka-acl/<Type>/<name>`` (literal patterns),
``/kafka-acl-extended/prefixed/<Type>/<name>`` (prefixed), each holding the resource's ACLs as
JSON, and the sequential notifications under ``/kafka-acl-changes`` and
``/kafka-acl-extended-changes`` that tell every broker to reload a resource.

The :class:`~sluice.broker.cluster.metadata_store.AclZnodeStore` of
:class:`~.store.ZooKeeperMetadataStore` (its ``acls``), on the store's session; what the znodes
mean is :mod:`sluice.broker.security.acls`'.
"""

from __future__ import annotations

from collections.abc import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch

from sluice.broker.cluster import znodes
from sluice.broker.cluster.zookeeper import znode_ops
from sluice.broker.cluster.zookeeper.session import BoundedClient, KazooWatch, translate_errors

__all__ = ["ZooKeeperAclZnodes"]


class ZooKeeperAclZnodes:
    """ACL znodes and their change notifications, on one :class:`BoundedClient`."""

    def __init__(self, client: BoundedClient, clock_ms: Callable[[], int]) -> None:
        self._client = client
        self._clock_ms = clock_ms

    @translate_errors
    def read_all(self) -> dict[str, bytes]:
        """The children of each ``<root>/<Type>`` of :data:`znodes.ACL_ROOTS`, with their data."""
        found: dict[str, bytes] = {}
        for root in znodes.ACL_ROOTS:
            try:
                types = self._client.get_children(root)
            except NoNodeError:
                continue
            for rtype in types:
                try:
                    names = self._client.get_children(f"{root}/{rtype}")
                except NoNodeError:
                    continue
                for name in names:
                    path = f"{root}/{rtype}/{name}"
                    try:
                        found[path], _ = self._client.get(path)
                    except NoNodeError:  # removed since the listing
                        continue
        return found

    @translate_errors
    def update(
        self, path: str, change: Callable[[bytes | None], bytes | None], notification: str
    ) -> None:
        """Kafka's ``updateResourceAcls``: a versioned write (create, set or delete) retried
        while another broker moves the znode, then a sequential change notification."""
        while True:
            try:
                current, stat = self._client.get(path)
            except NoNodeError:
                current, stat = None, None
            wanted = change(current)
            try:
                if stat is None:
                    if wanted is None:
                        break
                    self._client.create(path, wanted, makepath=True)
                elif wanted is None:
                    self._client.delete(path, version=stat.version)
                else:
                    self._client.set(path, wanted, version=stat.version)
                break
            except (NodeExistsError, NoNodeError, BadVersionError):
                continue
        changes = znodes.acl_changes_path(path)
        self._client.ensure_path(changes)
        self._client.create(
            f"{changes}/{znodes.ACL_CHANGE_PREFIX}", notification.encode(), sequence=True
        )
        znode_ops.purge_changes(self._client, changes, self._clock_ms())

    @translate_errors
    def watch_changes(self, callback: Callable[[], None]) -> KazooWatch:
        """Watch both change paths (literal and extended); ``callback`` at each new child."""
        for changes in znodes.ACL_CHANGE_ROOTS:
            self._client.ensure_path(changes)
        watch = KazooWatch("ACL changes")
        for changes in znodes.ACL_CHANGE_ROOTS:
            ChildrenWatch(self._client.kazoo, changes, lambda _children: watch.deliver(callback))
        return watch
