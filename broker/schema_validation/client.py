"""The few Schema Registry lookups the broker makes, cached, off the event loop.

Two questions are asked of the registry (Confluent's REST API v1):

- ``GET /schemas/ids/{id}?format=serialized`` → the schema of an id (a Protobuf one as its
  base64 ``FileDescriptorProto``) (``schema``, ``schemaType``; absent type:
  AVRO). A schema id never changes its schema, so an answer is kept for good.
- ``GET /schemas/ids/{id}/subjects`` → the subjects the id is registered under. Kept
  :data:`SUBJECTS_TTL_S`, since registrations and deletes change it.

A *negative* answer (HTTP 404: error 40403 "Schema not found"; 400 and 422 too, an id the
registry calls invalid) is kept only
:data:`MISSING_TTL_S`, so that a schema registered a moment after a refused record is accepted
soon after. When an id's cached subjects lack the one wanted, they are asked again at once (a
serializer may just have registered the same schema under a new subject), and that miss is then
kept :data:`MISSING_TTL_S`: a stream of refused records costs one request per second.

Requests run in a small thread pool (:mod:`urllib.request`: the broker adds no HTTP library)
through :meth:`asyncio.loop.run_in_executor`, so a cold lookup delays only the Produce request
that needs it; concurrent lookups of one id share one request. The URLs of
``confluent.schema.registry.url`` are tried in order until one answers (as Confluent's clients
fail over); when none does, :class:`RegistryUnavailableError`.

Thread safety: the caches belong to the event loop; only :func:`_get` runs in the pool.

>>> client = RegistryClient(["http://127.0.0.1:1"], timeout_s=0.5)
>>> client.urls
('http://127.0.0.1:1',)
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "MAX_MISSES",
    "MISSING_TTL_S",
    "SUBJECTS_TTL_S",
    "RegisteredSchema",
    "RegistryClient",
    "RegistryUnavailableError",
]

SUBJECTS_TTL_S = 60.0
"""How long the subjects of an id are trusted."""
MISSING_TTL_S = 1.0
"""How long an unknown id (or an id without the wanted subject) is trusted to stay so."""
MAX_MISSES = 10_000
"""Negative answers kept at most (per kind)."""
_K = TypeVar("_K")
_ACCEPT = "application/vnd.schemaregistry.v1+json, application/json"


class RegistryUnavailableError(Exception):
    """No registry URL answered (refused, timed out, or a 5xx answer)."""


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """A schema as ``GET /schemas/ids/{id}`` gives it."""

    schema_type: str
    """AVRO, JSON or PROTOBUF."""
    schema: str


class RegistryClient:
    """Cached lookups of schema ids; ``clock`` (seconds, monotonic) decides when entries expire."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.urls = tuple(url.rstrip("/") for url in urls)
        self.timeout_s = timeout_s
        self._clock = clock
        self._schemas: dict[int, RegisteredSchema] = {}
        self._missing: dict[int, float] = {}
        """Ids the registry did not know, with when it said so."""
        self._subjects: dict[int, tuple[frozenset[str], float]] = {}
        self._subject_misses: dict[tuple[int, str], float] = {}
        """(id, subject) the id was found without, with when."""
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="sluice-schema-registry")
        self.requests = 0
        """HTTP requests made (answered or not): what the caches saved shows here."""

    def close(self) -> None:
        """Stop the lookup threads (requests in flight finish)."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def schema(self, schema_id: int) -> RegisteredSchema | None:
        """The schema of ``schema_id``; None when the registry has no such id."""
        if (known := self._schemas.get(schema_id)) is not None:
            return known
        if self._recently_missing(schema_id):
            return None
        # a Protobuf schema as its FileDescriptorProto (Confluent's format=serialized, what
        # its deserializers ask for); Avro and JSON schemas come as their text either way
        body = await self._lookup(f"/schemas/ids/{schema_id}?format=serialized")
        if body is None:
            self._remember_miss(self._missing, schema_id, self._clock())
            return None
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise RegistryUnavailableError(f"unexpected answer to GET /schemas/ids/{schema_id}")
        found = RegisteredSchema(str(body.get("schemaType") or "AVRO"), body["schema"])
        self._schemas[schema_id] = found
        return found

    async def subjects(self, schema_id: int, wanted: str) -> frozenset[str] | None:
        """The subjects ``schema_id`` is registered under (None: no such id). Cached ones are
        asked again when older than :data:`SUBJECTS_TTL_S`, or when they lack ``wanted``
        (a registration made since) unless they were fetched for that very miss less than
        :data:`MISSING_TTL_S` ago."""
        now = self._clock()
        if (cached := self._subjects.get(schema_id)) is not None:
            subjects, at = cached
            if now - at < SUBJECTS_TTL_S:
                if wanted in subjects:
                    return subjects
                missed = self._subject_misses.get((schema_id, wanted))
                if missed is not None and now - missed < MISSING_TTL_S:
                    return subjects
        elif self._recently_missing(schema_id):
            return None
        body = await self._lookup(f"/schemas/ids/{schema_id}/subjects")
        now = self._clock()
        if body is None:
            self._subjects.pop(schema_id, None)
            self._remember_miss(self._missing, schema_id, now)
            return None
        if not isinstance(body, list):
            raise RegistryUnavailableError(
                f"unexpected answer to GET /schemas/ids/{schema_id}/subjects"
            )
        found = frozenset(str(subject) for subject in body)
        self._subjects[schema_id] = (found, now)
        self._missing.pop(schema_id, None)
        if wanted not in found:
            self._remember_miss(self._subject_misses, (schema_id, wanted), now)
        return found

    def _remember_miss(self, misses: dict[_K, float], key: _K, now: float) -> None:
        """Note a negative answer; past :data:`MAX_MISSES` entries, expired ones are dropped
        (ids come from clients: the table must not grow without bound)."""
        if len(misses) >= MAX_MISSES:
            for old in [k for k, at in misses.items() if now - at >= MISSING_TTL_S]:
                del misses[old]
            if len(misses) >= MAX_MISSES:
                misses.clear()
        misses[key] = now

    def _recently_missing(self, schema_id: int) -> bool:
        at = self._missing.get(schema_id)
        return at is not None and self._clock() - at < MISSING_TTL_S

    async def _lookup(self, path: str) -> Any:
        """The decoded body of ``GET path`` (None on 404); one request per path at a time."""
        if (running := self._inflight.get(path)) is not None:
            return await asyncio.shield(running)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._inflight[path] = future
        try:
            self.requests += 1
            result = await loop.run_in_executor(self._pool, _get, self.urls, path, self.timeout_s)
        except BaseException as exc:  # waiters get the error; a cancellation is ours alone
            shared = exc if isinstance(exc, Exception) else RegistryUnavailableError("cancelled")
            future.set_exception(shared)
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        else:
            future.set_result(result)
            return result
        finally:
            del self._inflight[path]


def _get(urls: Sequence[str], path: str, timeout_s: float) -> Any:
    """``GET`` ``path`` of the first URL that answers (blocking: runs in the pool)."""
    problems = []
    for url in urls:
        request = urllib.request.Request(url + path, headers={"Accept": _ACCEPT})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as answer:
            with answer:
                if answer.code in (400, 404, 422):  # no such id (or not a valid one)
                    return None
                problems.append(f"{url}: HTTP {answer.code}")
        except (OSError, ValueError) as exc:  # refused, timed out, not JSON
            problems.append(f"{url}: {exc}")
    raise RegistryUnavailableError("; ".join(problems))
