"""What the broker knows about one Kafka API: :class:`ApiSpec`, a row of the table in
:mod:`sluice.broker.handlers`.

A handler is ``async handle(broker, request, client) -> response | None``, typed with the
request and response unions of :mod:`sluice.broker.protocol.messages` (every version the row
serves); it returns ``None`` when no response is due (Produce with acks=0), and a Produce that
waits for its in-sync replicas returns a :class:`~sluice.broker.protocol.deferred.Deferred`
response once its appends are done.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from sluice.broker.broker import Broker
from sluice.broker.protocol.context import Connection
from sluice.broker.protocol.deferred import Deferred

Req = TypeVar("Req")
Resp = TypeVar("Resp")

Handler = Callable[[Broker, Req, Connection], Awaitable[Resp | Deferred[Resp] | None]]
"""``async (broker, request, client) -> response``, or ``None`` when none is due, or a
:class:`~sluice.broker.protocol.deferred.Deferred` response (Produce waiting for its ISR)."""


@dataclass(frozen=True, slots=True)
class ApiSpec(Generic[Req, Resp]):
    """One API the broker serves.

    ``metric_name`` is the ``request`` label of the request metrics (Kafka's name, which is
    the API's name except for Fetch: ``FetchConsumer``); it defaults to ``name``.

    >>> async def ping(broker, request, client): ...
    >>> spec = ApiSpec(18, "ApiVersions", 0, 3, ping)
    >>> spec.serves(3), spec.serves(4), spec.metric
    (True, False, 'ApiVersions')
    """

    key: int
    name: str
    min_version: int
    max_version: int
    handler: Handler[Req, Resp]
    metric_name: str | None = None

    def serves(self, version: int) -> bool:
        """Whether ``version`` of this API is served."""
        return self.min_version <= version <= self.max_version

    @property
    def metric(self) -> str:
        """The ``request`` label of this API's request metrics."""
        return self.metric_name or self.name
