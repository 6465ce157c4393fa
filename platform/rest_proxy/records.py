"""API v3's produce endpoint, ``POST /v3/clusters/{cluster_id}/topics/{topic_name}/records``,
served as plain ASGI in front of the FastAPI application.

The proxy's one hot path: a produce request skips FastAPI's routing, dependency solving and
request objects (~7 µs a record at 100 records a request, more than parsing and producing
them). :class:`RecordsEndpoint` wraps the application (``app.add_middleware``), takes the
requests to that path and passes everything else on. It answers as the application's handlers
do: Confluent's ``{"error_code", "message"}`` bodies for a :class:`RestError`, 405 for another
method on the path, 500 (logged) for anything unforeseen.

A body with a ``Content-Length`` is read whole and answered at once: a single record with its
own status, several with 200 and one result per record (CRLF-separated). A chunked body is
produced and answered as it arrives (:mod:`sluice.rest_proxy.produce`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import StreamingResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sluice.rest_proxy.errors import BAD_REQUEST, RestError
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.produce import Producing, json_batches, json_values

__all__ = ["RecordsEndpoint"]

log = logging.getLogger("sluice.rest_proxy")

_PATH = re.compile(r"/v3/clusters/([^/]+)/topics/([^/]+)/records")
_JSON = [(b"content-type", b"application/json")]


class RecordsEndpoint:
    """ASGI middleware serving v3 produce with ``producing``; other requests go to ``app``."""

    def __init__(self, app: ASGIApp, pool: ClientPool, producing: Producing) -> None:
        self.app = app
        self.pool = pool
        self.producing = producing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (found := _PATH.fullmatch(scope["path"])) is None:
            await self.app(scope, receive, send)
            return
        answered = False

        async def sending(message: Message) -> None:
            nonlocal answered
            answered = True
            await send(message)

        try:
            if scope["method"] != "POST":
                raise RestError(405, "HTTP 405 Method Not Allowed")
            await self._produce(scope, receive, sending, found[1], found[2])
        except ClientDisconnect:
            pass
        except Exception as error:
            if answered:  # a streamed answer under way: only cutting it short is left
                log.error("POST %s failed while answering", scope["path"], exc_info=error)
                raise
            if not isinstance(error, RestError):
                log.error("POST %s failed", scope["path"], exc_info=error)
                error = RestError(500, f"Internal Server Error: {type(error).__name__}")
            await _answer(send, error.status, orjson.dumps(error.body()))

    async def _produce(
        self, scope: Scope, receive: Receive, send: Send, cluster_id: str, topic: str
    ) -> None:
        headers = dict(scope["headers"])
        content_type = headers.get(b"content-type", b"application/json").decode("latin-1")
        content_type = content_type.split(";")[0].strip()
        if content_type not in ("application/json", "") and not content_type.endswith("+json"):
            raise RestError(415, "HTTP 415 Unsupported Media Type")
        actual = await self.pool.cluster_id_soon()
        if cluster_id != actual:
            raise RestError(404, f"Cluster {cluster_id} cannot be found.")
        await self.pool.partitions_soon(topic)  # 40401 before anything is read
        if b"content-length" not in headers:  # chunked: produced and answered as it comes
            batches = json_batches(Request(scope, receive).stream().__aiter__())
            stream = _streamed(self.producing, actual, topic, batches)
            await _ResultStream(stream, media_type="application/json")(scope, receive, send)
            return
        values, failure = json_values(await _body(receive))
        if failure is not None and not values:
            raise failure
        if not values:
            raise RestError(BAD_REQUEST, "The request body is empty: expected JSON records")
        results = await self.producing.produce(actual, topic, values)
        if len(values) == 1 and failure is None:
            only = results[0]
            if isinstance(only, RestError):
                raise only
            await _answer(send, 200, only)
            return
        if failure is not None:
            results.append(failure)
        await _answer(send, 200, _joined(results))


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _answer(send: Send, status: int, body: bytes) -> None:
    headers = [*_JSON, (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _ResultStream(StreamingResponse):
    """A streamed answer that never reads the request: Starlette's own listens for the
    client's disconnect by reading it, which would swallow a chunked body still coming in."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.stream_response(send)
        except OSError:
            raise ClientDisconnect() from None


def _joined(results: list[bytes | RestError]) -> bytes:
    """The results of a stream, each a line ended by CRLF."""
    return b"".join(
        (orjson.dumps(r.body()) if isinstance(r, RestError) else r) + b"\r\n" for r in results
    )


async def _streamed(
    producing: Producing, cluster_id: str, topic: str, batches: AsyncIterator[list[Any]]
) -> AsyncIterator[bytes]:
    try:
        async for batch in batches:
            yield _joined(await producing.produce(cluster_id, topic, batch))
    except RestError as error:
        yield orjson.dumps(error.body()) + b"\r\n"
