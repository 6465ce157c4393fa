"""Versioned znode operations the ZooKeeper metadata store is written with.

Each takes the store's :class:`~.session.BoundedClient` (so every call is bounded by the
connection timeout): a value read with its version, a write conditional on the version read
(:class:`~sluice.broker.cluster.model.BadVersion` when someone wrote first), a write that
creates, watches that deliver decoded values until cancelled, a subtree listed for deletion.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from sluice.broker.cluster.model import BadVersion, Versioned
from sluice.broker.cluster.zookeeper.session import BoundedClient, KazooWatch

__all__ = [
    "CHANGE_EXPIRATION_MS",
    "failed",
    "purge_changes",
    "read",
    "set_or_create",
    "set_versioned",
    "subtree",
    "watch_children",
    "watch_data",
    "watch_versioned",
]

T = TypeVar("T")

#: Change notifications older than this are removed (Kafka's ``changeExpirationMs``).
CHANGE_EXPIRATION_MS = 15 * 60 * 1000


def read(client: BoundedClient, path: str, decode: Callable[[bytes], T]) -> Versioned[T] | None:
    """``path``'s value and version, or None when there is no such znode."""
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None
    return Versioned(decode(data), int(stat.version))


def watch_versioned(
    client: BoundedClient,
    path: str,
    decode: Callable[[bytes], T],
    callback: Callable[[Versioned[T] | None], None],
) -> KazooWatch:
    return watch_data(
        client,
        path,
        lambda data, stat: callback(
            None if data is None else Versioned(decode(data), int(stat.version))
        ),
    )


def set_versioned(
    client: BoundedClient, path: str, data: bytes, expected_version: int
) -> int | BadVersion:
    try:
        stat = client.set(path, data, version=expected_version)
    except (BadVersionError, NoNodeError):
        return BadVersion(path, expected_version)
    return int(stat.version)


def set_or_create(client: BoundedClient, path: str, data: bytes) -> None:
    try:
        client.set(path, data)
    except NoNodeError:
        try:
            client.create(path, data, makepath=True)
        except NodeExistsError:
            client.set(path, data)


def watch_data(
    client: BoundedClient, path: str, callback: Callable[[bytes | None, Any], None]
) -> KazooWatch:
    watch = KazooWatch(path)

    def on_change(data: bytes | None, stat: Any, event: Any = None) -> bool:
        if stat is None:  # no such node
            data = None
        return watch.deliver(lambda: callback(data, stat))

    client.require_connected()
    DataWatch(client.kazoo, path, on_change)
    return watch


def watch_children(
    client: BoundedClient, path: str, callback: Callable[[list[str]], None]
) -> KazooWatch:
    watch = KazooWatch(path)

    def on_change(children: list[str]) -> bool:
        return watch.deliver(lambda: callback(children))

    client.require_connected()
    ChildrenWatch(client.kazoo, path, on_change)
    return watch


def subtree(client: BoundedClient, path: str) -> list[str]:
    """``path`` and everything below it, children before parents (empty if missing)."""
    try:
        children = client.get_children(path)
    except NoNodeError:
        return []
    below = [p for child in children for p in subtree(client, f"{path}/{child}")]
    return [*below, path]


def failed(results: list[Any]) -> bool:
    """Whether a ``multi``'s results hold a failure (kazoo returns exceptions in the list)."""
    return any(isinstance(r, Exception) for r in results)


def purge_changes(client: BoundedClient, path: str, now_ms: int) -> None:
    """Remove the change notifications under ``path`` older than :data:`CHANGE_EXPIRATION_MS`
    (a change notification is read by every broker's watch within seconds), as Kafka's
    ``ZkNodeChangeNotificationListener`` purges them."""
    horizon = now_ms - CHANGE_EXPIRATION_MS
    for child in client.get_children(path):
        stat = client.exists(f"{path}/{child}")
        if stat is not None and stat.ctime < horizon:
            with contextlib.suppress(NoNodeError):
                client.delete(f"{path}/{child}")
