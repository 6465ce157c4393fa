"""A response that comes later: what a Produce handler returns when all that must happen in
request order — its appends — is done and only a wait for the in-sync replicas is left.

The server then reads the connection's next Produce requests while this one waits, and still
sends every response in request order (:mod:`sluice.broker.server`): one round trip of the
followers then commits many requests of one producer instead of one. Kafka does not need this
(it mutes a connection until its response is sent; its replication round trip is short enough);
here the round trip goes through three Python processes, and without it one producer's
``acks=all`` throughput is one request per round trip.

>>> import asyncio
>>> async def answer() -> str:
...     return "done"
>>> later = Deferred(answer())
>>> asyncio.run(later.answer)
'done'
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

__all__ = ["Deferred"]

R = TypeVar("R")


class Deferred(Generic[R]):
    """The response, once ``answer`` (a coroutine, awaited once by the server) returns it."""

    __slots__ = ("answer",)

    def __init__(self, answer: Coroutine[Any, Any, R]) -> None:
        self.answer = answer
