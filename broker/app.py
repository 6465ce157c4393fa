"""Running a broker in the foreground: ``sluice broker start``.

:func:`serve` recovers the data directory, listens, prints one line when it accepts
connections, and on SIGTERM or SIGINT stops accepting, closes connections, flushes and closes
every segment, and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

import uvloop

from sluice.broker.broker import Broker
from sluice.broker.server import Server
from sluice.config import BrokerConfig

log = logging.getLogger("sluice.broker")


async def run(config: BrokerConfig, *, ready: asyncio.Event | None = None) -> None:
    """Run the broker until SIGTERM/SIGINT (or cancellation)."""
    broker = Broker(config)
    broker.open()
    server = Server(broker)
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
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
        log.info("shutting down")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
        await server.close()
        await broker.close()
        log.info("stopped cleanly")


def serve(config: BrokerConfig) -> None:
    """Run the broker in the foreground (blocking) with uvloop; the caller sets up logging."""
    uvloop.run(run(config))
