"""Network partitions for the fault tests: a fault proxy on every link of a cluster.

Every connection of a :class:`~tests.cluster.brokers.BrokerCluster` built by
:func:`cluster_behind` goes through a :class:`FaultNetwork`, a small asyncio TCP proxy that
runs in a thread of the test process:

* **broker i → ZooKeeper**: broker ``i``'s ``zookeeper.connect`` names a proxy port of its own,
  which forwards to the real ZooKeeper; the link is ``(i, ZOOKEEPER)``;
* **anyone → broker i**: broker ``i`` listens on its own port but *advertises* (its
  ``advertised.listeners``, what Metadata and ``/brokers/ids/<i>`` tell) a proxy port in
  front of it, so clients and the other brokers' replica fetchers reach it through the proxy.
  The proxy reads the ``client_id`` of the first request of each connection: a replica
  fetcher (``sluice-replica-fetcher-<j>-<fetcher id>``) or transaction marker channel
  (``broker-<j>-txn-markers``) makes the link ``(j, i)``, anything else ``(CLIENTS, i)``.

:meth:`FaultNetwork.cut` makes links silent in both directions, as a ``blackhole`` route or a
DROP rule would: bytes already accepted are held, not forwarded (nor a FIN: a connection
closed on one side stays open on the other), new connections are accepted and then hang, and
nothing is reset — the endpoints find out only by their own timeouts, as across a real
partition. :meth:`FaultNetwork.heal` lets everything flow again (what TCP's retransmissions do
after a real partition heals); connections that an endpoint gave up on meanwhile are closed
on the other side then.

Why a proxy and not ``ip rule … blackhole`` or iptables: brokers on one host talk over
loopback, where policy routing rules are bypassed (``from all lookup local`` comes first and
matches every local address), and a broker's outgoing connections all leave from 127.0.0.1,
so no address rule can tell a follower's fetch from a client's request to the same leader;
a network namespace per broker with veth pairs needs root, IP forwarding and a ZooKeeper
reachable from every namespace. The proxy needs no privilege, changes nothing outside the
test process (so two such tests may run at once, and nothing is left behind if one dies), and
its links are exactly Kafka's: follower → leader (Fetch), broker → ZooKeeper, client → broker.

Thread-safety: the public methods may be called from any thread; the proxy's state lives on
its own event loop. :meth:`FaultNetwork.close` (or the context manager) stops every server and
connection and the thread, bounded in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import struct
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from tests.cluster.brokers import BrokerCluster

__all__ = ["CLIENTS", "ZOOKEEPER", "FaultNetwork", "Node", "cluster_behind"]

ZOOKEEPER = "zookeeper"
"""The ZooKeeper node of a :class:`FaultNetwork`."""
CLIENTS = "clients"
"""Every connection to a broker that is not another broker's (the tests' clients)."""
Node = int | str
"""A broker id, :data:`ZOOKEEPER` or :data:`CLIENTS`."""

HOST = "127.0.0.1"
CHUNK = 65536
CALL_TIMEOUT = 10.0
"""The bound on one call into the proxy's loop from another thread."""
BROKER_CLIENT_IDS = (
    re.compile(r"sluice-replica-fetcher-(\d+)(?:-\d+)?"),  # broker id, fetcher id
    re.compile(r"broker-(\d+)-txn-markers"),
)
"""The ``client_id`` of a broker's own connections to another broker, with its id."""
_HEADER = struct.Struct(">ihhih")
"""The start of a Kafka request: size, api key, api version, correlation id, client_id length
(a nullable non-compact string in every request header version)."""

T = TypeVar("T")
Upstream = Callable[[], tuple[str, int]]
"""Where a proxy forwards to, asked at each new connection."""


def source_of(first_request: bytes) -> Node:
    """Who opened a connection to a broker, from its first request's ``client_id``.

    >>> head = _HEADER.pack(40, 1, 12, 7, 25) + b"sluice-replica-fetcher-3"
    >>> source_of(head)
    3
    >>> source_of(_HEADER.pack(20, 18, 3, 1, 7) + b"rdkafka")
    'clients'
    """
    *_, length = _HEADER.unpack_from(first_request)
    client_id = first_request[_HEADER.size : _HEADER.size + max(length, 0)].decode(errors="replace")
    for pattern in BROKER_CLIENT_IDS:
        found = pattern.fullmatch(client_id)
        if found:
            return int(found.group(1))
    return CLIENTS


class FaultNetwork:
    """Proxies in front of ZooKeeper (one per broker) and of every broker, whose links can be
    cut and healed. See the module docstring."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="netfault", daemon=True)
        self._thread.start()
        self._cut: set[frozenset[Node]] = set()
        self._changed = asyncio.Condition()  # bound to the loop at its first use, there
        self._servers: list[asyncio.Server] = []
        self._upstreams: dict[int, tuple[str, int]] = {}
        self._connections: set[asyncio.Task[None]] = set()
        self._events: list[tuple[float, str]] = []
        self._started = time.monotonic()
        self._closed = False

    def __enter__(self) -> FaultNetwork:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the topology --------------------------------------------------------------------------

    def zookeeper_proxy(self, broker_id: int, zookeeper: tuple[str, int]) -> int:
        """A port whose connections are broker ``broker_id``'s to ``zookeeper``; the link
        ``(broker_id, ZOOKEEPER)``."""
        return self._call(self._listen(broker_id, ZOOKEEPER, lambda: zookeeper))

    def broker_proxy(self, broker_id: int) -> int:
        """A port in front of broker ``broker_id`` (to advertise); where it forwards is set by
        :meth:`route` before the first connection arrives."""

        def upstream() -> tuple[str, int]:
            try:
                return self._upstreams[broker_id]
            except KeyError:
                raise RuntimeError(f"no route to broker {broker_id}: call route() first") from None

        return self._call(self._listen(None, broker_id, upstream))

    def route(self, broker_id: int, address: tuple[str, int]) -> None:
        """Forward the connections to broker ``broker_id``'s proxy to ``address``."""
        self._upstreams[broker_id] = address

    # -- faults --------------------------------------------------------------------------------

    def cut(self, a: Node, b: Node) -> None:
        """Silence every connection between ``a`` and ``b``, both ways, until :meth:`heal`."""
        if a == b:
            raise ValueError(f"a node cannot be cut from itself ({a!r})")
        self._call(self._set(lambda links: links.add(frozenset((a, b))), f"cut {a} | {b}"))

    def isolate(self, node: Node, *others: Node) -> None:
        """Cut ``node`` from each of ``others``."""
        for other in others:
            self.cut(node, other)

    def mend(self, a: Node, b: Node) -> None:
        """Undo the cut between ``a`` and ``b`` (the others stay)."""
        self._call(self._set(lambda links: links.discard(frozenset((a, b))), f"mend {a} | {b}"))

    def heal(self) -> None:
        """Undo every cut."""
        self._call(self._set(lambda links: links.clear(), "heal"))

    def describe(self) -> str:
        """What was cut and healed when (seconds since the network started), for messages."""
        return ", ".join(f"{at:.1f}s {what}" for at, what in self._events) or "no fault"

    def close(self) -> None:
        """Stop every proxy, connection and the thread (bounded); idempotent."""
        if self._closed:
            return
        with contextlib.suppress(Exception):
            self._call(self._shutdown())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CALL_TIMEOUT)
        if not self._thread.is_alive():
            self._loop.close()

    # -- on the loop ---------------------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise RuntimeError("the fault network is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(CALL_TIMEOUT)

    async def _set(self, change: Callable[[set[frozenset[Node]]], None], what: str) -> None:
        async with self._changed:
            change(self._cut)
            self._events.append((time.monotonic() - self._started, what))
            self._changed.notify_all()

    async def _passable(self, a: Node, b: Node) -> None:
        """Return once the link between ``a`` and ``b`` is not cut."""
        link = frozenset((a, b))
        async with self._changed:
            await self._changed.wait_for(lambda: link not in self._cut)

    async def _listen(self, source: Node | None, target: Node, upstream: Upstream) -> int:
        async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._connections.add(task)
            try:
                await self._proxy(reader, writer, source, target, upstream)
            finally:
                self._connections.discard(task)

        server = await asyncio.start_server(accepted, HOST, 0)
        self._servers.append(server)
        port: int = server.sockets[0].getsockname()[1]
        return port

    async def _proxy(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        source: Node | None,
        target: Node,
        upstream: Upstream,
    ) -> None:
        first = b""
        out: asyncio.StreamWriter | None = None
        try:
            if source is None:  # a broker's proxy: who is it? (Kafka clients speak first)
                first = await reader.readexactly(_HEADER.size)
                *_, length = _HEADER.unpack(first)
                first += await reader.readexactly(max(length, 0))
                source = source_of(first)
            await self._passable(source, target)
            host, port = upstream()
            in_, out = await asyncio.open_connection(host, port)
            out.write(first)
            pumps = [
                asyncio.ensure_future(self._pump(reader, out, source, target)),
                asyncio.ensure_future(self._pump(in_, writer, source, target)),
            ]
            try:  # until one side ends: then the other is closed too
                await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        except (OSError, asyncio.IncompleteReadError, RuntimeError):
            pass  # an endpoint went away or was never reached: close the other side too
        finally:
            for side in (writer, out):
                if side is not None:
                    side.close()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, a: Node, b: Node
    ) -> None:
        """Copy ``reader`` to ``writer`` while the link is up; hold bytes (and the end of the
        stream) while it is cut."""
        while True:
            data = await reader.read(CHUNK)
            await self._passable(a, b)
            if not data:
                return
            writer.write(data)
            await writer.drain()

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.wait(list(self._connections), timeout=CALL_TIMEOUT / 2)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), CALL_TIMEOUT / 2)


def cluster_behind(
    network: FaultNetwork,
    root: Path,
    zookeeper: tuple[str, int],
    chroot: str,
    size: int = 3,
    config: Mapping[str, str] | None = None,
) -> BrokerCluster:
    """A :class:`BrokerCluster` (not started) whose every link passes through ``network``:
    broker ``i`` reaches ``zookeeper`` (with ``chroot``) through a proxy of its own and
    advertises a proxy in front of its listener. The harness's own ZooKeeper session
    (:meth:`BrokerCluster.store`) goes straight to ZooKeeper."""
    host, port = zookeeper
    zk_ports = {i: network.zookeeper_proxy(i, zookeeper) for i in range(1, size + 1)}
    fronts = {i: network.broker_proxy(i) for i in range(1, size + 1)}
    cluster = BrokerCluster(
        root,
        f"{host}:{port}{chroot}",
        size,
        config,
        {i: {"advertised.listeners": f"PLAINTEXT://{HOST}:{fronts[i]}"} for i in fronts},
        zookeeper_connect={i: f"{HOST}:{zk_ports[i]}{chroot}" for i in zk_ports},
    )
    for i in cluster.ids:
        network.route(i, (HOST, cluster.broker(i).port))
    return cluster
