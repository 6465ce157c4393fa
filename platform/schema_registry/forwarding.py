"""A follower's writes, sent to the leader over HTTP (Confluent's request forwarding).

A registry instance that is not the leader sends each write request (``POST``, ``PUT``,
``DELETE`` on the write routes) unchanged — method, path, query and body — to the leader's
advertised URL, and answers whatever the leader answered, status and body. The forwarded request
carries :data:`FORWARDED_HEADER` so that it is never forwarded twice: an instance that gets a
forwarded write but is no longer the leader answers 50003. No leader known, or the leader
unreachable, is also 50003 (Confluent's ``REQUEST_FORWARDING_FAILED_ERROR_CODE``).

On a secured registry the client's ``Authorization`` header goes along (the leader checks the
same users), and an ``https://`` leader is reached with the instance's TLS context (see
:func:`sluice.schema_registry.service.start`).
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from sluice.schema_registry import errors

__all__ = ["FORWARDED_HEADER", "Forwarded", "forward"]

FORWARDED_HEADER = "X-Sluice-Forwarded-By"
"""Names the instance that forwarded a request (its URL)."""

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@dataclass(frozen=True, slots=True)
class Forwarded:
    """The leader's answer."""

    status: int
    body: bytes
    content_type: str


def forward(
    leader_url: str,
    method: str,
    path_and_query: str,
    body: bytes | None,
    *,
    sender: str,
    timeout_s: float = 30.0,
    authorization: str | None = None,
    context: ssl.SSLContext | None = None,
) -> Forwarded:
    """Send one request to the leader and return its answer (any status); a 50003
    :class:`~sluice.schema_registry.errors.RegistryError` if it cannot be reached."""
    headers = {
        "Content-Type": _CONTENT_TYPE,
        "Accept": _CONTENT_TYPE,
        FORWARDED_HEADER: sender,
    }
    if authorization is not None:
        headers["Authorization"] = authorization
    try:
        request = urllib.request.Request(
            leader_url.rstrip("/") + path_and_query,
            data=body if body else None,
            method=method,
            headers=headers,
        )
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
            return Forwarded(
                response.status,
                response.read(),
                response.headers.get("Content-Type", _CONTENT_TYPE),
            )
    except urllib.error.HTTPError as answer:
        with answer:
            return Forwarded(
                answer.code, answer.read(), answer.headers.get("Content-Type", _CONTENT_TYPE)
            )
    except (urllib.error.URLError, OSError, ValueError) as error:  # ValueError: a bad URL
        reason = getattr(error, "reason", error)
        raise errors.forwarding_failed(
            f"Error while forwarding the request to the leader {leader_url}: {reason}"
        ) from None
