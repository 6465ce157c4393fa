"""What each request counts against its connection's client quotas, and the throttle time
put in its response (the server's side of :mod:`.manager`).

- Produce: its size in bytes against ``producer_byte_rate`` (the records are appended even
  when the quota is exceeded, as Kafka does; the client is held back after the response);
- Fetch of a consumer: the bytes of records its response carries against
  ``consumer_byte_rate`` (a follower's replica Fetch is exempt: replication has its own
  throttles);
- every request but ApiVersions, SaslHandshake, SaslAuthenticate and replica fetches: the
  time the handler ran (a Fetch's wait for ``min_bytes`` left out), in percent of a second,
  against ``request_percentage``.

A request's throttle time is the largest its quotas give; :func:`with_throttle` writes it in
the response's ``throttle_time_ms`` (responses without the field, or none at all — acks=0 —
are left as they are: the connection is muted all the same).
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any, Final

from sluice.broker.protocol.api_keys import (
    API_VERSIONS,
    FETCH,
    PRODUCE,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
)
from sluice.broker.protocol.codec import has_field
from sluice.broker.protocol.fetch_response import FetchAnswer
from sluice.broker.quotas.config import (
    CONSUMER_BYTE_RATE,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
)
from sluice.broker.quotas.manager import ClientQuotaManager, user_of

__all__ = ["EXEMPT", "fetch_max_bytes", "record_request", "with_throttle"]

EXEMPT: Final = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})
"""APIs no quota applies to (Kafka's: they come before a client is known)."""


def record_request(
    quotas: ClientQuotaManager,
    api_key: int,
    principal: str | None,
    client_id: str | None,
    request_size: int,
    response: Any,
    handler_s: float,
) -> int:
    """Record one request against the quotas of its connection; its throttle time in ms."""
    user = user_of(principal)
    client = client_id or ""
    throttle = 0
    if api_key == PRODUCE:
        throttle = quotas.record(PRODUCER_BYTE_RATE, user, client, request_size)
    elif api_key == FETCH and isinstance(response, FetchAnswer):
        handler_s -= response.waited_s
        size = 0
        for topic in response.topics:
            for partition in topic.partitions:
                records = partition.records
                size += len(records) if isinstance(records, bytes) else records.size
        if size:
            throttle = quotas.record(CONSUMER_BYTE_RATE, user, client, size)
    percentage = quotas.record(REQUEST_PERCENTAGE, user, client, max(handler_s, 0.0) * 100)
    return max(throttle, percentage)


def fetch_max_bytes(
    quotas: ClientQuotaManager, principal: str | None, client_id: str | None, max_bytes: int
) -> int:
    """A consumer's Fetch ``max_bytes`` capped to what its ``consumer_byte_rate`` lets through
    in the quota's windows (Kafka's ``maxQuotaWindowBytes``), so that one response cannot
    carry many seconds' worth of the quota at once."""
    cap = quotas.window_bytes(CONSUMER_BYTE_RATE, user_of(principal), client_id or "")
    return max_bytes if cap is None else min(max_bytes, cap)


def with_throttle(response: Any, throttle_ms: int) -> Any:
    """``response`` with ``throttle_time_ms`` set (a Fetch answer is changed in place)."""
    if isinstance(response, FetchAnswer):
        response.throttle_time_ms = throttle_ms
        return response
    if response is None or not has_field(type(response), "throttle_time"):
        return response
    return dataclasses.replace(response, throttle_time=datetime.timedelta(milliseconds=throttle_ms))
