"""Running a broker in the foreground: ``sluice broker start``.

:func:`serve` recovers the data directory, listens, prints one line when it accepts
connections, and on SIGTERM or SIGINT stops accepting, closes connections, flushes and closes
every segment, and returns. With ``metrics_listen`` (``--metrics-listen HOST:PORT``) it also
serves Prometheus metrics (:mod:`sluice.broker.metrics`) at ``/metrics`` on that address, from
the broker's event loop; an address that cannot be listened on is a
:class:`~sluice.errors.ConfigError`, raised before the data directory is touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Sequence

import uvloop

from sluice.broker import metrics
from sluice.broker.broker import Broker, new_cluster_id
from sluice.broker.config import BrokerConfig
from sluice.broker.security.inter_broker import (
    INTER_BROKER_KEYS,
    InterBrokerSecurity,
    inter_broker_security,
)
from sluice.broker.security.keystores import ListenerKeystores
from sluice.broker.security.listeners import Listener, parse_listeners
from sluice.broker.server import Server
from sluice.errors import ConfigError
from sluice.metrics import AsyncMetricsServer, serve_metrics_async

log = logging.getLogger("sluice.broker")


async def run(
    config: BrokerConfig,
    *,
    ready: asyncio.Event | None = None,
    metrics_listen: str | None = None,
) -> None:
    """Run the broker until SIGTERM/SIGINT (or cancellation); see the module docstring."""
    listeners = parse_listeners(config)
    # checked on one node too when set (Kafka's rules), used in a cluster only
    security = (
        inter_broker_security(config, listeners)
        if config["zookeeper.connect"] or INTER_BROKER_KEYS & config.explicit
        else None
    )
    broker = Broker(config)
    server = Server(broker)
    exporter: AsyncMetricsServer | None = None
    if metrics_listen:
        exporter = await serve_metrics_async(metrics_listen, metrics.registry(broker, server))
    keystores = ListenerKeystores(listeners, config)
    broker.reconfigurables.append(keystores)
    try:
        await _open(broker, listeners, security)
        _dynamic_keystores(keystores, broker.config)
        for listener in listeners:
            await server.start(listener.host, listener.port, listener)
        if broker.cluster is not None:
            await _join(broker)
        server.serve_requests()
    except BaseException:
        if exporter is not None:
            await exporter.close()
        await server.close()
        if broker.cluster is not None:
            await broker.cluster.close()
        raise
    broker.start_housekeeping()
    stop = asyncio.Event()
    broker.request_stop = stop.set  # every log directory (or the first) offline: stop
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    addresses = ", ".join(f"{lst.host}:{lst.port} ({lst.name})" for lst in listeners)
    print(
        f"sluice broker {broker.node_id} accepting connections on {addresses} "
        f"(cluster {broker.cluster_id}, data in {broker.data_dir})",
        flush=True,
    )
    if exporter is not None:
        log.info("Prometheus metrics at http://%s/metrics", metrics_listen)
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
        log.info("shutting down")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
        if exporter is not None:
            await exporter.close()
        if broker.cluster is not None:
            await broker.cluster.close()
        await server.close()
        await broker.close()
        log.info("stopped cleanly")
    if broker.log_dirs.must_stop():
        raise SystemExit(f"stopped: log directories offline ({broker.log_dirs.describe()})")


def _dynamic_keystores(keystores: ListenerKeystores, config: BrokerConfig) -> None:
    """The keystores set by AlterConfigs before the restart (read with the data directory's
    dynamic configs); one that no longer loads is reported and the listener keeps the keystore
    of ``server.properties``, as Kafka goes on with its static config then."""
    try:
        keystores.reconfigure(config)
    except ConfigError as error:
        log.error("dynamic keystore not used: %s", error)


async def _open(
    broker: Broker, listeners: Sequence[Listener], security: InterBrokerSecurity | None
) -> None:
    """Recover the data directory; in a cluster, connect to its metadata store first (its
    cluster id is the data directory's) and take no leadership until the cluster gives it;
    the member registers ``listeners`` and reaches the other brokers as ``security`` says."""
    config = broker.config
    connect = config["zookeeper.connect"]
    if not connect:
        broker.open()
        return
    # Imported here: one node never loads the cluster's code (nor kazoo).
    from sluice.broker.cluster.member import ClusterMember
    from sluice.broker.cluster.metadata_store import MetadataStoreError
    from sluice.broker.cluster.zookeeper import ZooKeeperMetadataStore
    from sluice.broker.quotas.store import ZooKeeperQuotaStore, follow
    from sluice.broker.security.acl_store import ZooKeeperAclStore
    from sluice.broker.security.credential_store import ZooKeeperScramStore

    try:
        store = await asyncio.to_thread(
            ZooKeeperMetadataStore.connect,
            connect,
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        )
    except (MetadataStoreError, ValueError) as exc:
        raise ConfigError(str(exc), key="zookeeper.connect") from None
    try:
        proposed = broker.stored_cluster_id() or new_cluster_id()
        cluster_id = await asyncio.to_thread(store.get_or_create_cluster_id, proposed)
        broker.open(cluster_id)
    except BaseException:
        await asyncio.to_thread(store.close)
        raise
    assert security is not None  # always read in a cluster
    broker.cluster = ClusterMember(broker, store, listeners=listeners, security=security)
    broker.scram_credentials = ZooKeeperScramStore(store.configs)
    broker.quota_store = quota_store = ZooKeeperQuotaStore(store.configs)
    broker.quota_watch = await follow(quota_store, broker.client_quotas.configure)
    broker.acl_store = ZooKeeperAclStore(store.acls)
    await _follow_acls(broker)
    broker.cluster.prepare()


async def _follow_acls(broker: Broker) -> None:
    """Load the cluster's ACLs and reload them at every change notification (a watch)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return
    loop = asyncio.get_running_loop()
    authorizer.replace(await asyncio.to_thread(broker.acl_store.load))
    reloading: set[asyncio.Task[None]] = set()

    async def reload() -> None:
        authorizer.replace(await asyncio.to_thread(broker.acl_store.load))

    def changed() -> None:
        task = loop.create_task(reload())
        reloading.add(task)
        task.add_done_callback(reloading.discard)

    def notified() -> None:  # on the ZooKeeper client's thread
        loop.call_soon_threadsafe(changed)

    await asyncio.to_thread(broker.acl_store.watch, notified)


async def _join(broker: Broker) -> None:
    from sluice.broker.cluster.metadata_store import BrokerIdInUseError, MetadataStoreError

    assert broker.cluster is not None
    try:
        await broker.cluster.start()
    except BrokerIdInUseError as exc:
        raise ConfigError(str(exc), key="broker.id") from None
    except MetadataStoreError as exc:
        raise ConfigError(str(exc), key="zookeeper.connect") from None


def serve(config: BrokerConfig, *, metrics_listen: str | None = None) -> None:
    """Run the broker in the foreground (blocking) with uvloop; the caller sets up logging."""
    uvloop.run(run(config, metrics_listen=metrics_listen))
