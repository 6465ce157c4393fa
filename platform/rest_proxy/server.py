"""A running proxy: its clients, its consumer instances, and uvicorn serving the API.

:func:`serve` binds the address (an address in use fails there, not later), starts uvicorn in
a thread and a reaper thread that closes idle v2 consumer instances; :meth:`RestProxy.stop`
finishes the requests under way, closes every consumer instance and delivers what the shared
producer still holds.

With :class:`~sluice.http_security.HttpSecurity` the API is served on HTTPS and/or asks for
HTTP basic authentication (Confluent REST Proxy's ``listeners=https://…``, ``ssl.*``,
``authentication.method=BASIC`` with the ``KafkaRest`` realm); its Schema Registry client takes
:mod:`sluice.schemas.registry_client`'s settings (``schema_registry_config``).
"""

from __future__ import annotations

import logging
import socket
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from sluice.http_security import HttpSecurity, require_basic_auth, uvicorn_tls
from sluice.http_server import HttpServer, bind
from sluice.http_server import serve as serve_app
from sluice.rest_proxy.app import create_app
from sluice.rest_proxy.consumers import DEFAULT_INSTANCE_TIMEOUT_MS, ConsumerInstances
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.schemas import SchemaSerdes

__all__ = ["REALM", "ProxyConfig", "RestProxy", "serve", "serve_socket"]

log = logging.getLogger("sluice.rest_proxy")

REALM = "KafkaRest"
"""Confluent REST Proxy's default ``authentication.realm``: the JAAS section of its users."""


@dataclass(frozen=True)
class ProxyConfig:
    """What a proxy needs: the cluster, its clients' properties (librdkafka's, security
    included), a Schema Registry (optional; its client's settings: URL, credentials, CA, as
    :func:`~sluice.schemas.registry_client.registry_client_config` makes them), v2's
    ``consumer.instance.timeout.ms`` and the API's own HTTPS and basic authentication."""

    bootstrap: str
    client_config: dict[str, Any] = field(default_factory=dict)
    schema_registry_url: str | None = None
    consumer_instance_timeout_ms: int = DEFAULT_INSTANCE_TIMEOUT_MS
    request_timeout_s: float = 10.0
    schema_registry_config: dict[str, Any] = field(default_factory=dict)
    security: HttpSecurity = field(default_factory=lambda: HttpSecurity(realm=REALM))


class RestProxy:
    """A running proxy (see :func:`serve`); stop it with :meth:`stop` or ``with``."""

    def __init__(self, http: HttpServer, pool: ClientPool, instances: ConsumerInstances) -> None:
        self.http = http
        self.host, self.port = http.host, http.port
        self.pool = pool
        self.instances = instances
        self._stopped = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="rest-proxy-reaper", daemon=True)
        self._reaper.start()

    @property
    def url(self) -> str:
        """``http://host:port`` (``https://`` with TLS)."""
        return self.http.url

    def _reap(self) -> None:
        while not self._stopped.wait(1.0):
            for group, name in self.instances.expire():
                log.info("consumer instance %s of group %s closed: idle too long", name, group)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the requests under way, close consumers and the producer."""
        self._stopped.set()
        self.http.stop(timeout_s)
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
    return serve_socket(config, bind(host, port), timeout_s=timeout_s)


def serve_socket(config: ProxyConfig, sock: socket.socket, *, timeout_s: float = 10.0) -> RestProxy:
    """Serve the proxy for ``config`` on a bound ``sock`` (other processes may serve it too:
    :mod:`sluice.rest_proxy.workers`)."""
    pool = ClientPool(config.bootstrap, config.client_config, config.request_timeout_s)
    serdes = SchemaSerdes(config.schema_registry_url, config.schema_registry_config)
    instances = ConsumerInstances(pool, serdes, config.consumer_instance_timeout_ms)
    security = config.security
    try:
        app = create_app(pool, serdes, instances)
        if security.basic_auth is not None:
            require_basic_auth(app, security.basic_auth, security.realm, "REST proxy")
        http = serve_app(
            app,
            sock,
            what="the REST proxy",
            thread_name="rest-proxy",
            timeout_s=timeout_s,
            loop="uvloop",
            **uvicorn_tls(security.tls),
        )
    except OSError:
        instances.close_all()
        pool.close(timeout_s)
        raise
    return RestProxy(http, pool, instances)
