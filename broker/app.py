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

import uvloop

from sluice.broker import metrics
from sluice.broker.broker import Broker
from sluice.broker.config import BrokerConfig
from sluice.broker.server import Server
from sluice.metrics import AsyncMetricsServer, serve_metrics_async

log = logging.getLogger("sluice.broker")


async def run(
    config: BrokerConfig,
    *,
    ready: asyncio.Event | None = None,
    metrics_listen: str | None = None,
) -> None:
    """Run the broker until SIGTERM/SIGINT (or cancellation); see the module docstring."""
    broker = Broker(config)
    server = Server(broker)
    exporter: AsyncMetricsServer | None = None
    if metrics_listen:
        exporter = await serve_metrics_async(metrics_listen, metrics.registry(broker, server))
    try:
        broker.open()
    except BaseException:
        if exporter is not None:
            await exporter.close()
        raise
    host, port = config.listener
    await server.start(host, port)
    broker.start_housekeeping()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(
        f"sluice broker {broker.node_id} accepting connections on {host}:{port} "
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
        await server.close()
        await broker.close()
        log.info("stopped cleanly")


def serve(config: BrokerConfig, *, metrics_listen: str | None = None) -> None:
    """Run the broker in the foreground (blocking) with uvloop; the caller sets up logging."""
    uvloop.run(run(config, metrics_listen=metrics_listen))
