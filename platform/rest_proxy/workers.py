"""Several proxy processes serving one address (``sluice rest-proxy start --workers N``).

One proxy is one event loop: parsing, base64 and the producer's Python callbacks cost ~10 µs
a record of one core, whatever the cores. :func:`serve_workers` binds the address once (an
address in use fails there, as with one process) and serves it from this process and
``workers - 1`` child processes (spawned, not forked: none inherits librdkafka's threads), each
with its own clients, all accepting from the one listening socket: the kernel hands each new
connection to whichever process accepts first. Confluent REST Proxy's answer to the same need
is many threads in one JVM; several Python processes are the equivalent here.

**Consumer instances stay in the process that created them**, as a v2 consumer instance of
Confluent's stays on the proxy instance that created it: a request for it that a new
connection brings to another worker is answered 40403 (instance not found). Clients of v2
consumers keep one connection per consumer (HTTP keep-alive) or use ``--workers 1``.

A child stops with the parent (:meth:`ProxyWorkers.stop`, or on its own SIGINT/SIGTERM, or
when the parent has died), finishing its requests and delivering what its producer holds.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import socket
import threading
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from types import FrameType, TracebackType

from sluice.http_server import bind, url_of
from sluice.rest_proxy.server import ProxyConfig, RestProxy, serve_socket

__all__ = ["ProxyWorkers", "serve_workers"]

log = logging.getLogger("sluice.rest_proxy")

_SPAWN = multiprocessing.get_context("spawn")


class ProxyWorkers:
    """Proxies in this process and in child processes on one socket (see
    :func:`serve_workers`); stop them with :meth:`stop` or ``with``."""

    def __init__(self, local: RestProxy, children: list[BaseProcess], stopping: Event) -> None:
        self.local = local
        self.children = children
        self._stopping = stopping

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return self.local.url

    @property
    def workers(self) -> int:
        """How many processes serve the address."""
        return 1 + len(self.children)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop every worker: each finishes its requests and delivers what it holds."""
        self._stopping.set()
        self.local.stop(timeout_s)
        for child in self.children:
            child.join(timeout_s + 5)
            if child.is_alive():
                log.warning("REST proxy worker %s did not stop: killed", child.pid)
                child.kill()
                child.join(5)

    def __enter__(self) -> ProxyWorkers:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def serve_workers(
    config: ProxyConfig,
    host: str = "127.0.0.1",
    port: int = 8082,
    workers: int = 2,
    *,
    timeout_s: float = 30.0,
    log_level: str = "WARNING",
) -> ProxyWorkers:
    """Serve the proxy for ``config`` on ``host:port`` (0: a free port) from ``workers``
    processes, this one included; returns once every worker accepts requests (``OSError`` if
    one does not within ``timeout_s``). ``log_level`` is the children's."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    sock = bind(host, port)
    stopping = _SPAWN.Event()
    children: list[BaseProcess] = []
    try:
        for number in range(1, workers):
            started = _SPAWN.Event()
            child: BaseProcess = _SPAWN.Process(
                target=_worker,
                args=(config, sock, started, stopping, log_level, timeout_s),
                name=f"rest-proxy-worker-{number}",
                daemon=True,
            )
            child.start()
            children.append(child)
            if not started.wait(timeout_s) or not child.is_alive():
                raise OSError(f"REST proxy worker {number} did not start on {url_of(sock)}")
        local = serve_socket(config, sock, timeout_s=timeout_s)
    except BaseException:
        stopping.set()
        for child in children:
            child.join(timeout_s)
            if child.is_alive():
                child.kill()
        sock.close()
        raise
    return ProxyWorkers(local, children, stopping)


def _worker(
    config: ProxyConfig,
    sock: socket.socket,
    started: Event,
    stopping: Event,
    log_level: str,
    timeout_s: float,
) -> None:
    """A child's life: serve ``sock`` until told to stop, signalled, or orphaned."""
    logging.basicConfig(
        level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    signalled = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        signalled.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    proxy = serve_socket(config, sock, timeout_s=timeout_s)
    started.set()
    parent = multiprocessing.parent_process()
    try:
        while not signalled.is_set() and not stopping.wait(0.5):
            if parent is not None and not parent.is_alive():
                break
    finally:
        proxy.stop()
