"""The kazoo session under the store: a connect string, bounded calls, watches, kazoo's errors.

kazoo's synchronous calls wait forever while ZooKeeper is unreachable; :class:`BoundedClient`
makes every call wait at most the connection timeout (``zookeeper.connection.timeout.ms``, as
Kafka's client does) and :func:`translate_errors` turns kazoo's exceptions into the store's, so
that nothing of kazoo leaves this package.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from sluice.broker.cluster.metadata_store import (
    MetadataStoreError,
    MetadataStoreUnavailableError,
)

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")


def split_connect_string(connect: str) -> tuple[str, str]:
    """``zookeeper.connect`` as hosts and chroot ("" for none).

    >>> split_connect_string("127.0.0.1:2181,127.0.0.2:2181/sluice/a")
    ('127.0.0.1:2181,127.0.0.2:2181', '/sluice/a')
    >>> split_connect_string("zk:2181")
    ('zk:2181', '')
    """
    hosts, slash, chroot = connect.partition("/")
    if not hosts or any(not h.rpartition(":")[2].isdigit() for h in hosts.split(",")):
        raise ValueError(f"zookeeper.connect {connect!r} is not host:port[,host:port...][/chroot]")
    chroot = (slash + chroot).rstrip("/")
    if "//" in chroot:
        raise ValueError(f"zookeeper.connect {connect!r} has an empty element in its chroot")
    return hosts, chroot


def translate_errors(method: Callable[P, R]) -> Callable[P, R]:
    """Decorate a store method: kazoo's exceptions become the store's (kazoo stays behind this
    package)."""

    @functools.wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError) as e:
            raise MetadataStoreUnavailableError(
                f"ZooKeeper did not answer ({type(e).__name__}); retry once the session is back"
            ) from e
        except KazooException as e:
            raise MetadataStoreError(f"ZooKeeper refused the request: {type(e).__name__}") from e

    return call


class BoundedClient:
    """kazoo's calls as the store uses them, each waiting at most ``timeout_s`` for its answer
    (kazoo's own synchronous calls wait forever while ZooKeeper is unreachable; Kafka waits
    ``zookeeper.connection.timeout.ms``). A call past it raises kazoo's timeout error; its
    request may still reach ZooKeeper once the connection is back."""

    def __init__(self, kazoo: Any, timeout_s: float) -> None:
        #: the kazoo client itself, for what needs it (watch recipes, listeners, stop)
        self.kazoo = kazoo
        self._timeout_s = timeout_s

    @property
    def session_id(self) -> int:
        """The id of the current session."""
        return int(self.kazoo.client_id[0])

    def get(self, path: str) -> Any:
        """``(data, stat)`` of ``path``."""
        return self.kazoo.get_async(path).get(timeout=self._timeout_s)

    def get_children(self, path: str) -> list[str]:
        """The names of ``path``'s children."""
        return list(self.kazoo.get_children_async(path).get(timeout=self._timeout_s))

    def exists(self, path: str) -> Any:
        """``path``'s stat, or None."""
        return self.kazoo.exists_async(path).get(timeout=self._timeout_s)

    def create(self, path: str, value: bytes = b"", **flags: bool) -> Any:
        """Create ``path`` (kazoo's flags: ephemeral, sequence, makepath, include_data)."""
        return self.kazoo.create_async(path, value, **flags).get(timeout=self._timeout_s)

    def set(self, path: str, value: bytes, version: int = -1) -> Any:
        """Set ``path``'s data if at ``version`` (-1: any); the new stat."""
        return self.kazoo.set_async(path, value, version).get(timeout=self._timeout_s)

    def delete(self, path: str, version: int = -1) -> None:
        """Delete ``path`` if at ``version`` (-1: any)."""
        self.kazoo.delete_async(path, version).get(timeout=self._timeout_s)

    def ensure_path(self, path: str) -> None:
        """Create ``path`` and its parents where missing."""
        self.kazoo.ensure_path_async(path).get(timeout=self._timeout_s)

    def transaction(self) -> Any:
        """A new ``multi`` to fill, then :meth:`commit`."""
        return self.kazoo.transaction()

    def commit(self, tx: Any) -> list[Any]:
        """Commit a ``multi``: a result per operation (exceptions when it failed)."""
        return list(tx.commit_async().get(timeout=self._timeout_s))

    def require_connected(self) -> None:
        """Raise kazoo's connection-loss error unless connected (a watch set while disconnected
        would wait for the connection without bound)."""
        if not self.kazoo.connected:
            raise ConnectionLoss("not connected to ZooKeeper")


class KazooWatch:
    """The cancel switch of a kazoo DataWatch/ChildrenWatch: once cancelled, no callback runs
    and kazoo drops the watch at its next event."""

    def __init__(self, description: str) -> None:
        self._description = description
        self._lock = threading.RLock()
        self._cancelled = False

    def cancel(self) -> None:
        """Stop the watch: no callback runs after this returns."""
        with self._lock:
            self._cancelled = True

    def deliver(self, call: Callable[[], None]) -> bool:
        """Run ``call`` unless cancelled; False tells kazoo to drop the watch."""
        with self._lock:
            if self._cancelled:
                return False
            try:
                call()
            except Exception:
                log.exception("callback of the watch on %s failed", self._description)
            return True


#: The longest wait between two rounds of connection attempts while ZooKeeper is unreachable.
#: Kazoo's default doubles the wait up to an hour; ZooKeeper counts a session's timeout from its
#: own (re)start, so after a long outage a client that came back on that schedule found its
#: session expired (a broker's registration, the controller's office gone). Kafka's ZooKeeper
#: client waits at most a second between rounds; so does this one.
RECONNECT_MAX_DELAY_S = 1.0


def new_client(hosts: str, session_timeout_ms: int | None = None) -> KazooClient:
    """A kazoo client for ``hosts`` (with any chroot) that keeps trying to reconnect at most
    :data:`RECONNECT_MAX_DELAY_S` apart, for as long as it is not stopped."""
    retry = KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=RECONNECT_MAX_DELAY_S)
    if session_timeout_ms is None:
        return KazooClient(hosts=hosts, connection_retry=retry)
    return KazooClient(hosts=hosts, timeout=session_timeout_ms / 1000, connection_retry=retry)


def start_client(client: Any, timeout_ms: int, unreachable: Exception) -> Any:
    """Start ``client``; past ``timeout_ms`` kazoo stops it, and ``unreachable`` is raised."""
    try:
        client.start(timeout=timeout_ms / 1000)
    except KazooTimeoutError:
        raise unreachable from None
    return client


def bounded(request: Callable[[], Any], timeout_ms: int, unreachable: Exception) -> Any:
    """The answer to an asynchronous kazoo ``request`` during connect, or ``unreachable``."""
    try:
        return request().get(timeout=timeout_ms / 1000)
    except (ConnectionLoss, SessionExpiredError, KazooTimeoutError):
        raise unreachable from None
