"""A running proxy: its clients, its consumer instances, and uvicorn serving the API.

:func:`serve` binds the address (an address in use fails there, not later), starts uvicorn in
a thread and a reaper thread that closes idle v2 consumer instances; :meth:`RestProxy.stop`
finishes the requests under way, closes every consumer instance and delivers what the shared
producer still holds.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import uvicorn

from sluice.rest_proxy.app import create_app
from sluice.rest_proxy.consumers import DEFAULT_INSTANCE_TIMEOUT_MS, ConsumerInstances
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.schemas import SchemaSerdes

__all__ = ["ProxyConfig", "RestProxy", "serve"]

log = logging.getLogger("sluice.rest_proxy")


@dataclass(frozen=True)
class ProxyConfig:
    """What a proxy needs: the cluster, its clients' properties (librdkafka's, security
    included), a Schema Registry (optional) and v2's ``consumer.instance.timeout.ms``."""

    bootstrap: str
    client_config: dict[str, Any] = field(default_factory=dict)
    schema_registry_url: str | None = None
    consumer_instance_timeout_ms: int = DEFAULT_INSTANCE_TIMEOUT_MS
    request_timeout_s: float = 10.0


class RestProxy:
    """A running proxy (see :func:`serve`); stop it with :meth:`stop` or ``with``."""

    def __init__(
        self,
        server: uvicorn.Server,
        thread: threading.Thread,
        address: Any,
        pool: ClientPool,
        instances: ConsumerInstances,
    ) -> None:
        self.server = server
        self.thread = thread
        self.host: str = address[0]
        self.port: int = address[1]
        self.pool = pool
        self.instances = instances
        self._stopped = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="rest-proxy-reaper", daemon=True)
        self._reaper.start()

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _reap(self) -> None:
        while not self._stopped.wait(1.0):
            for group, name in self.instances.expire():
                log.info("consumer instance %s of group %s closed: idle too long", name, group)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the requests under way, close consumers and the producer."""
        self._stopped.set()
        self.server.should_exit = True
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(timeout_s)
        self._reaper.join(timeout_s)
        self.instances.close_all()
        self.pool.close(timeout_s)

    def __enter__(self) -> RestProxy:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def serve(
    config: ProxyConfig, host: str = "127.0.0.1", port: int = 8082, *, timeout_s: float = 10.0
) -> RestProxy:
    """Serve the proxy for ``config`` on ``host:port`` (0: a free port) in a thread."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    pool = ClientPool(config.bootstrap, config.client_config, config.request_timeout_s)
    serdes = SchemaSerdes(config.schema_registry_url)
    instances = ConsumerInstances(pool, serdes, config.consumer_instance_timeout_ms)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(pool, serdes, instances),
            log_config=None,
            log_level="warning",
            lifespan="off",
            loop="uvloop",
            access_log=False,
        )
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="rest-proxy", daemon=True
    )
    thread.start()
    running = RestProxy(server, thread, sock.getsockname(), pool, instances)
    deadline = time.monotonic() + timeout_s
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        running.stop()
        sock.close()
        raise OSError(f"the REST proxy did not start on {running.url}")
    log.info("REST proxy listening on %s", running.url)
    return running
