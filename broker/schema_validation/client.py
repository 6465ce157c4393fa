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

A secured registry (HTTPS, HTTP basic authentication) is reached as Confluent Server reaches
it, with :class:`RegistryAccess` made from the broker's ``confluent.basic.auth.user.info``
(``confluent.basic.auth.credentials.source=USER_INFO``, the default when it is set; ``URL``:
``https://user:password@host`` in ``confluent.schema.registry.url``),
``confluent.ssl.truststore.location``
(the CA of the registry's certificate, PEM), ``confluent.ssl.keystore.location`` (a client
certificate: PEM key and chain) and ``confluent.ssl.key.password``. A 401 or 403 answer is an
unavailable registry (the batch is refused with a retriable error; the reason is logged).

Thread safety: the caches belong to the event loop; only :func:`_get` runs in the pool.

>>> client = RegistryClient(["http://127.0.0.1:1"], timeout_s=0.5)
>>> client.urls
('http://127.0.0.1:1',)
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "MAX_MISSES",
    "MISSING_TTL_S",
    "SUBJECTS_TTL_S",
    "RegisteredSchema",
    "RegistryAccess",
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


@dataclass(frozen=True)
class RegistryAccess:
    """How to reach a secured registry: basic-auth ``user_info`` (``user:password``, never
    shown), the PEM ``ca_file`` of its certificate (None: the system's CAs), a client
    certificate ``cert_file`` (PEM key and chain) and its key's password.

    >>> access = RegistryAccess.from_config({"confluent.basic.auth.user.info": "b:pw"})
    >>> access, access.headers()
    (RegistryAccess(ca_file=None, cert_file=None), {'Authorization': 'Basic Yjpwdw=='})
    """

    user_info: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    cert_file: str | None = None
    key_password: str | None = field(default=None, repr=False)

    @classmethod
    def from_config(cls, values: Mapping[str, Any]) -> RegistryAccess:
        """From the broker's ``confluent.basic.auth.*`` and ``confluent.ssl.*`` settings
        (``confluent.basic.auth.credentials.source``: ``USER_INFO`` when
        ``confluent.basic.auth.user.info`` is set, else ``URL``); ValueError when the user info
        is set with ``URL``, or missing with ``USER_INFO``."""
        user_info = values.get("confluent.basic.auth.user.info")
        source = values.get("confluent.basic.auth.credentials.source")
        source = str(source or ("USER_INFO" if user_info else "URL")).upper()
        if (source == "USER_INFO") != bool(user_info):
            raise ValueError(
                "confluent.basic.auth.user.info is used with (and only with) "
                "confluent.basic.auth.credentials.source=USER_INFO"
            )
        return cls(
            str(user_info) if user_info else None,
            values.get("confluent.ssl.truststore.location") or None,
            values.get("confluent.ssl.keystore.location") or None,
            values.get("confluent.ssl.key.password") or None,
        )

    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header, when there are credentials."""
        return _basic(self.user_info)

    def context(self) -> ssl.SSLContext | None:
        """The TLS context of ``https://`` URLs (None: the default one); OSError or
        ``ssl.SSLError`` when a file cannot be loaded."""
        if self.ca_file is None and self.cert_file is None:
            return None
        context = ssl.create_default_context(cafile=self.ca_file)
        if self.cert_file is not None:
            context.load_cert_chain(self.cert_file, password=self.key_password)
        return context


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
        access: RegistryAccess | None = None,
    ) -> None:
        self.access = access or RegistryAccess()
        self._context = self.access.context()
        # Confluent's basic.auth.credentials.source=URL: user:password@ in a URL (never shown)
        self._headers: dict[str, dict[str, str]] = {}
        plain = []
        for given in urls:
            url, user_info = _without_user_info(given.rstrip("/"))
            plain.append(url)
            login = self.access.headers() or _basic(user_info)
            self._headers[url] = {"Accept": _ACCEPT, **login}
        self.urls = tuple(plain)
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
            result = await loop.run_in_executor(
                self._pool, _get, self.urls, path, self.timeout_s, self._headers, self._context
            )
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


def _without_user_info(url: str) -> tuple[str, str | None]:
    """``url`` without its ``user:password@`` part, and that part (unquoted).

    >>> _without_user_info("https://ops:p%40ss@r:8081")
    ('https://r:8081', 'ops:p@ss')
    """
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    user_info, _, host = parts.netloc.rpartition("@")
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), urllib.parse.unquote(user_info)


def _basic(user_info: str | None) -> dict[str, str]:
    if user_info is None:
        return {}
    return {"Authorization": "Basic " + base64.b64encode(user_info.encode()).decode()}


def _get(
    urls: Sequence[str],
    path: str,
    timeout_s: float,
    headers: Mapping[str, Mapping[str, str]] | None = None,
    context: ssl.SSLContext | None = None,
) -> Any:
    """``GET`` ``path`` of the first URL that answers (blocking: runs in the pool); ``headers``
    by URL."""
    problems = []
    for url in urls:
        sent = dict((headers or {}).get(url) or {"Accept": _ACCEPT})
        request = urllib.request.Request(url + path, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s, context=context) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as answer:
            with answer:
                if answer.code in (400, 404, 422):  # no such id (or not a valid one)
                    return None
                hint = ""
                if answer.code in (401, 403):
                    hint = " (check confluent.basic.auth.user.info)"
                problems.append(f"{url}: HTTP {answer.code}{hint}")
        except (OSError, ValueError) as exc:  # refused, timed out, not JSON
            problems.append(f"{url}: {exc}")
    raise RegistryUnavailableError("; ".join(problems))
