"""Kafka's dynamic configs on ZooKeeper: ``/config/<type>/<name>`` (JSON ``{"version": 1,
"config": {...}}``) and the sequential notifications ``/config/changes/config_change_<n>``
(``{"version": 2, "entity_path": "<type>/<name>"}``) that tell every broker to re-read one.

The :class:`~sluice.broker.cluster.metadata_store.EntityConfigStore` of
:class:`~.store.ZooKeeperMetadataStore` (its ``configs``), on the store's session. Topic and
broker overrides, user and client quotas and SCRAM credentials all live here, as in Kafka; a
user's quotas and credentials share one znode, so every change is a versioned read-modify-write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from sluice.broker.cluster import znodes
from sluice.broker.cluster.model import ConfigChange
from sluice.broker.cluster.zookeeper import znode_ops
from sluice.broker.cluster.zookeeper.session import BoundedClient, KazooWatch, translate_errors

__all__ = ["ZooKeeperEntityConfigs"]


class ZooKeeperEntityConfigs:
    """Dynamic configs and their change notifications, on one :class:`BoundedClient`."""

    def __init__(self, client: BoundedClient, clock_ms: Callable[[], int]) -> None:
        self._client = client
        self._clock_ms = clock_ms

    @translate_errors
    def get(self, entity_type: str, name: str) -> dict[str, str]:
        """``/config/<type>/<name>``'s config (empty when the znode is missing)."""
        path = znodes.config_path(_entity_type(entity_type), name)
        config = znode_ops.read(
            self._client, path, lambda data: znodes.decode_entity_config(path, data)
        )
        return {} if config is None else config.value

    @translate_errors
    def set(self, entity_type: str, name: str, config: Mapping[str, str]) -> None:
        """Kafka's ``changeConfigs``: write the config, then a change notification."""
        entity_type = _entity_type(entity_type)
        znode_ops.set_or_create(
            self._client, znodes.config_path(entity_type, name), znodes.encode_entity_config(config)
        )
        self._notify(entity_type, name)

    @translate_errors
    def entities(self, entity_type: str) -> frozenset[str]:
        """The children of ``/config/<type>`` (empty when it is missing)."""
        try:
            return frozenset(
                self._client.get_children(f"{znodes.CONFIG}/{_entity_type(entity_type)}")
            )
        except NoNodeError:
            return frozenset()

    @translate_errors
    def update(
        self,
        entity_type: str,
        name: str,
        change: Callable[[dict[str, str]], dict[str, str]],
    ) -> None:
        """A versioned read-modify-write of ``/config/<type>/<name>`` (retried on a concurrent
        write), then Kafka's change notification ``<type>/<name>``."""
        entity_type = _entity_type(entity_type)
        path = znodes.config_path(entity_type, name)
        while True:
            try:
                data, stat = self._client.get(path)
            except NoNodeError:
                data, stat = None, None
            current = {} if data is None else znodes.decode_entity_config(path, data)
            wanted = znodes.encode_entity_config(change(dict(current)))
            try:
                if stat is None:
                    self._client.create(path, wanted, makepath=True)
                else:
                    self._client.set(path, wanted, version=stat.version)
                break
            except (NodeExistsError, BadVersionError):
                continue
        self._notify(entity_type, name)

    @translate_errors
    def children(self, entity_type: str, name: str, child_type: str) -> frozenset[str]:
        """The children of ``/config/<type>/<name>/<child_type>`` (empty when it is missing)."""
        path = f"{znodes.config_path(_entity_type(entity_type), name)}/{child_type}"
        try:
            return frozenset(self._client.get_children(path))
        except NoNodeError:
            return frozenset()

    @translate_errors
    def changes(self, after: int) -> list[ConfigChange]:
        """The notifications numbered above ``after``, in order."""
        return self._read_changes(self._client.get_children(znodes.CONFIG_CHANGES), after)

    @translate_errors
    def watch_changes(self, callback: Callable[[list[ConfigChange]], None]) -> KazooWatch:
        """Call ``callback`` with every notification present, now and at every new one."""
        return znode_ops.watch_children(
            self._client,
            znodes.CONFIG_CHANGES,
            lambda children: callback(self._read_changes(children, -1)),
        )

    def _notify(self, entity_type: str, name: str) -> None:
        """A sequential change notification; notifications past their expiry removed."""
        self._client.create(
            f"{znodes.CONFIG_CHANGES}/{znodes.CONFIG_CHANGE_PREFIX}",
            znodes.encode_config_change(f"{entity_type}/{name}"),
            sequence=True,
        )
        znode_ops.purge_changes(self._client, znodes.CONFIG_CHANGES, self._clock_ms())

    def _read_changes(self, children: Iterable[str], after: int) -> list[ConfigChange]:
        numbered = sorted(
            (znodes.sequence_number(c, znodes.CONFIG_CHANGE_PREFIX), c)
            for c in children
            if c.startswith(znodes.CONFIG_CHANGE_PREFIX)
        )
        changes = []
        for number, child in numbered:
            if number <= after:
                continue
            try:
                data, _ = self._client.get(f"{znodes.CONFIG_CHANGES}/{child}")
            except NoNodeError:  # purged since the listing
                continue
            changes.append(znodes.decode_config_change(child, data))
        return changes


def _entity_type(entity_type: str) -> str:
    if entity_type not in znodes.CONFIG_ENTITY_TYPES:
        raise ValueError(
            f"config entity type {entity_type!r} is not one of {znodes.CONFIG_ENTITY_TYPES}"
        )
    return entity_type
