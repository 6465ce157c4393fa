"""An HTTP API (a FastAPI app) served by uvicorn in a thread, on a socket bound before the call
returns: what the Connect REST API, the schema registry and the REST proxy each run.

:func:`bind` binds the address (an address in use raises ``OSError`` there, port 0 picks a free
one); :func:`serve` starts uvicorn on that socket and returns once it accepts requests, as an
:class:`HttpServer` that :meth:`~HttpServer.stop` (or ``with``) ends.

>>> from fastapi import FastAPI
>>> import json, urllib.request
>>> app = FastAPI()
>>> _ = app.get("/")(lambda: {"ok": True})
>>> with serve(app, bind("127.0.0.1", 0), what="the example API") as server:
...     json.load(urllib.request.urlopen(server.url + "/"))
{'ok': True}
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

log = logging.getLogger(__name__)


class HttpServer:
    """A running API (see :func:`serve`); stop it with :meth:`stop` or ``with``."""

    def __init__(
        self, server: uvicorn.Server, thread: threading.Thread, address: Any, scheme: str = "http"
    ) -> None:
        self.server = server
        self.thread = thread
        self.host: str = address[0]
        self.port: int = address[1]
        self.scheme = scheme

    @property
    def url(self) -> str:
        """``http://host:port`` (``https://`` with TLS)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the requests under way, close the socket and wait for the thread."""
        self.server.should_exit = True
        self.thread.join(timeout_s)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(timeout_s)

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


def serve(
    app: FastAPI,
    sock: socket.socket,
    *,
    what: str,
    thread_name: str = "http",
    timeout_s: float = 10.0,
    scheme: str = "http",
    **options: Any,
) -> HttpServer:
    """Serve ``app`` on the bound ``sock`` in a thread named ``thread_name``; ``options`` are
    more of uvicorn's settings (TLS, the event loop). ``OSError`` naming ``what`` if the server
    does not start within ``timeout_s``."""
    config = uvicorn.Config(
        app, log_config=None, log_level="warning", lifespan="off", access_log=False, **options
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=thread_name, daemon=True
    )
    thread.start()
    running = HttpServer(server, thread, sock.getsockname(), scheme)
    deadline = time.monotonic() + timeout_s
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        running.stop()
        sock.close()
        raise OSError(f"{what} did not start on {running.url}")
    log.info("%s listening on %s", what, running.url)
    return running
