"""The REST API served by uvicorn in a thread, on a socket bound before it returns.

>>> from sluice.schema_registry.log import MemoryLog
>>> from sluice.schema_registry.registry import SchemaRegistry
>>> from sluice.schema_registry.api import create_app
>>> from sluice.schema_registry.store import Store
>>> import json, urllib.request
>>> app = create_app(SchemaRegistry(MemoryLog(Store())))
>>> with serve(app, bind("127.0.0.1", 0)) as server:
...     json.load(urllib.request.urlopen(server.url + "/config"))
{'compatibilityLevel': 'BACKWARD'}
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn
from fastapi import FastAPI

__all__ = ["HttpServer", "bind", "serve", "url_of"]

log = logging.getLogger("sluice.schema_registry")


class HttpServer:
    """A running API (see :func:`serve`); stop it with :meth:`stop` or ``with``."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, address: Any) -> None:
        self._server = server
        self._thread = thread
        self.host: str = address[0]
        self.port: int = address[1]

    @property
    def url(self) -> str:
        """``http://host:port``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the requests under way, close the socket and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout_s)

    def __enter__(self) -> HttpServer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def bind(host: str, port: int) -> socket.socket:
    """A listening address (port 0: a free one); ``OSError`` if it is in use."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    """``http://host:port`` of a bound socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(app: FastAPI, sock: socket.socket, *, timeout_s: float = 10.0) -> HttpServer:
    """Serve ``app`` on the bound ``sock`` in a thread; ``OSError`` if the server does not
    start within ``timeout_s``."""
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="schema-registry-http", daemon=True
    )
    thread.start()
    running = HttpServer(server, thread, sock.getsockname())
    deadline = time.monotonic() + timeout_s
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        running.stop()
        sock.close()
        raise OSError(f"the schema registry's API did not start on {running.url}")
    log.info("schema registry listening on %s", running.url)
    return running
