"""Serving Prometheus metrics: the ``/metrics`` endpoint of the broker, Connect and Streams.

Each component keeps its own :class:`~prometheus_client.CollectorRegistry` (never the global
default, so that several components in one process do not collide) and serves it on the address
given by ``--metrics-listen HOST:PORT`` (``SLUICE_METRICS_LISTEN`` for Streams apps). Metric
names are Kafka's JMX names in snake case:
``kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec`` becomes
``kafka_server_broker_topic_metrics_bytes_in_total``.

Two ways to serve:

- :func:`serve_metrics`: prometheus-client's HTTP server in a daemon thread (Connect workers and
  Streams apps, whose counters are plain integers safe to read from another thread);
- :func:`serve_metrics_async`: a tiny HTTP responder on the caller's asyncio loop (the broker),
  so that collectors read the broker's state on the thread that owns it.

Bad input is a :class:`~sluice.errors.ConfigError` naming the option:

>>> parse_listen("127.0.0.1:9404")
('127.0.0.1', 9404)
>>> parse_listen(":9404")
('0.0.0.0', 9404)
>>> parse_listen("nonsense")
Traceback (most recent call last):
...
sluice.errors.ConfigError: --metrics-listen: expected HOST:PORT, got 'nonsense'
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest, start_http_server

from sluice.errors import ConfigError

__all__ = [
    "ENV_LISTEN",
    "LISTEN_OPTION",
    "AsyncMetricsServer",
    "MetricsServer",
    "parse_listen",
    "serve_metrics",
    "serve_metrics_async",
]

LISTEN_OPTION = "--metrics-listen"
"""The command-line option every component takes (named in error messages)."""
ENV_LISTEN = "SLUICE_METRICS_LISTEN"
"""The environment variable a Streams app reads when not given an address."""

_MAX_HEAD = 16 * 1024

log = logging.getLogger("sluice.metrics")


def parse_listen(text: str, *, key: str = LISTEN_OPTION) -> tuple[str, int]:
    """``HOST:PORT`` (``:PORT`` for every interface, ``[::1]:PORT`` for IPv6) → ``(host, port)``."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"expected HOST:PORT, got {text!r}", key=key)
    return host.strip("[]") or "0.0.0.0", int(port)


class MetricsServer:
    """A ``/metrics`` endpoint served by a daemon thread; :meth:`close` stops it."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def host(self) -> str:
        """The address listened on."""
        return str(self._server.server_address[0])

    @property
    def port(self) -> int:
        """The port listened on (the real one when 0 was asked for)."""
        return int(self._server.server_port)

    @property
    def url(self) -> str:
        """``http://host:port/metrics``."""
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


def serve_metrics(
    listen: str, registry: CollectorRegistry, *, key: str = LISTEN_OPTION
) -> MetricsServer:
    """Serve ``registry`` on ``listen`` (``HOST:PORT``) from a daemon thread.

    Raises :class:`~sluice.errors.ConfigError` naming ``key`` when the address is malformed or
    cannot be listened on (port in use, unknown host).
    """
    host, port = parse_listen(listen, key=key)
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as error:
        raise ConfigError(f"cannot serve metrics on {listen}: {_reason(error)}", key=key) from None
    return MetricsServer(server, thread)


class AsyncMetricsServer:
    """A ``/metrics`` endpoint on an asyncio loop; ``await close()`` stops it."""

    def __init__(self, server: asyncio.Server, clients: set[asyncio.Task[None]]) -> None:
        self._server = server
        self._clients = clients

    @property
    def port(self) -> int:
        """The port listened on (the real one when 0 was asked for)."""
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop serving and release the port."""
        self._server.close()
        for task in list(self._clients):
            task.cancel()
        await self._server.wait_closed()


async def serve_metrics_async(
    listen: str, registry: CollectorRegistry, *, key: str = LISTEN_OPTION
) -> AsyncMetricsServer:
    """Serve ``registry`` on ``listen`` from the running loop (collectors run on it).

    Answers ``GET /metrics`` (and ``/``) with the text exposition format, one request per
    connection. Raises :class:`~sluice.errors.ConfigError` naming ``key`` as
    :func:`serve_metrics` does.
    """
    host, port = parse_listen(listen, key=key)
    clients: set[asyncio.Task[None]] = set()

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        clients.add(task)
        try:
            await _answer(registry, reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            clients.discard(task)
            writer.close()

    try:
        server = await asyncio.start_server(on_connect, host, port, limit=_MAX_HEAD)
    except OSError as error:
        raise ConfigError(f"cannot serve metrics on {listen}: {_reason(error)}", key=key) from None
    return AsyncMetricsServer(server, clients)


def _reason(error: OSError) -> str:
    """``Address already in use`` rather than the event loop's long wording."""
    return os.strerror(error.errno) if error.errno else str(error)


async def _answer(
    registry: CollectorRegistry, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
    method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
    path = rest.split(" ", 1)[0].split("?", 1)[0]
    if method not in ("GET", "HEAD"):
        status, body, ctype = "405 Method Not Allowed", b"only GET\n", "text/plain"
    elif path not in ("/metrics", "/"):
        status, body, ctype = "404 Not Found", b"see /metrics\n", "text/plain"
    else:
        try:
            status, body, ctype = "200 OK", generate_latest(registry), CONTENT_TYPE_LATEST
        except Exception:  # a collector's bug must not take the endpoint (or the loop) down
            log.exception("collecting metrics failed")
            status, body, ctype = "500 Internal Server Error", b"see the log\n", "text/plain"
    writer.write(
        f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n".encode("latin-1")
    )
    if method != "HEAD":
        writer.write(body)
    with contextlib.suppress(OSError):
        await writer.drain()
