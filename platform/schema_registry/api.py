"""Confluent Schema Registry's REST API v1, served by FastAPI over a
:class:`~sluice.schema_registry.registry.SchemaRegistry`::

    GET    /                                               {}
    GET    /schemas/types                                  ["AVRO", "JSON", "PROTOBUF"]
    GET    /schemas/ids/{id}[?format=serialized]           {"schemaType"?, "references"?, "schema"}
    GET    /schemas/ids/{id}/schema                        the schema text
    GET    /schemas/ids/{id}/subjects[?subject=&deleted=]  ["s", ...]
    GET    /schemas/ids/{id}/versions[?subject=&deleted=]  [{"subject", "version"}]
    GET    /subjects[?subjectPrefix=&deleted=&deletedOnly=] ["s", ...]
    GET    /subjects/{s}/versions[?deleted=&deletedOnly=]  [1, 2]
    POST   /subjects/{s}/versions[?normalize=]             {"id"}            (write)
    GET    /subjects/{s}/versions/{v|latest}[?deleted=&format=]
                                                           {"subject", "version", "id", …}
    GET    /subjects/{s}/versions/{v}/schema               the schema text
    GET    /subjects/{s}/versions/{v}/referencedby         [ids]
    DELETE /subjects/{s}/versions/{v}[?permanent=]         v                 (write)
    POST   /subjects/{s}[?normalize=&deleted=]             {"subject", "version", "id", …}
    DELETE /subjects/{s}[?permanent=]                      [versions]        (write)
    GET    /config[/{s}][?defaultToGlobal=]                {"compatibilityLevel"}
    PUT    /config[/{s}]                                   {"compatibility"} (write)
    DELETE /config[/{s}]                                   {"compatibilityLevel"} (write)
    GET    /mode[/{s}][?defaultToGlobal=]                  {"mode"}
    PUT    /mode[/{s}][?force=]                            {"mode"}          (write)
    DELETE /mode/{s}                                       {"mode"}          (write)
    POST   /compatibility/subjects/{s}/versions[/{v}][?verbose=&normalize=]
                                                           {"is_compatible", "messages"?}

Bodies are JSON under any of Confluent's content types (``application/vnd.schemaregistry.v1+json``,
``application/vnd.schemaregistry+json``, ``application/json``, ``application/octet-stream``);
answers are ``application/vnd.schemaregistry.v1+json``. Errors are ``{"error_code", "message"}``
(:mod:`sluice.schema_registry.errors`); a body that is not JSON is 400, an unknown path 404, and
nothing a client sends is answered 500. Query flags are true when ``true`` in any case (as Java's
``Boolean.valueOf``; Python's client sends ``True``).

Writes run on the leader: an instance that is not answers with the leader's answer
(:mod:`sluice.schema_registry.forwarding`).
"""

from __future__ import annotations

import importlib
import json
import logging
import ssl
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from sluice.schema_registry import errors
from sluice.schema_registry.election import Election
from sluice.schema_registry.forwarding import FORWARDED_HEADER, forward
from sluice.schema_registry.registry import SchemaRegistry
from sluice.schemas.formats import SCHEMA_TYPES

__all__ = ["CONTENT_TYPE", "create_app"]

log = logging.getLogger("sluice.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
"""What every answer is."""

_ACCEPTED = {
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
}
LEADER_WAIT_S = 15.0
"""How long a write waits for a leader to be elected (a killed leader's session times out in
10 s) before it is refused with 50003."""

_REASONS = {404: "Not Found", 405: "Method Not Allowed", 415: "Unsupported Media Type"}
_FORMAT_MODULES = {"AVRO": "avro", "JSON": "json_schema", "PROTOBUF": "protobuf"}


class RegistryResponse(JSONResponse):
    media_type = CONTENT_TYPE


def _answer(body: Any, status: int = 200) -> Response:
    return RegistryResponse(body, status_code=status)


def _text(text: str) -> Response:
    return Response(text, media_type=CONTENT_TYPE)


def _flag(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _page(items: list[Any], offset: str | None, limit: str | None) -> list[Any]:
    """Confluent's ``offset``/``limit`` paging (a negative limit: no limit)."""
    try:
        start = max(int(offset or 0), 0)
        count = int(limit) if limit not in (None, "") else -1
    except ValueError:
        raise errors.invalid_request("offset and limit must be integers") from None
    return items[start:] if count < 0 else items[start : start + count]


def _schema_id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise errors.schema_not_found() from None


async def _raw_body(request: Request) -> bytes:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    body = await request.body()
    if body and kind and kind not in _ACCEPTED:
        raise errors.RegistryError(415, 415, "HTTP 415 Unsupported Media Type")
    return body


RawBody = Annotated[bytes, Depends(_raw_body)]


def _json(body: bytes) -> Any:
    if not body.strip():
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise errors.RegistryError(
            400, 400, f"Unrecognized JSON in the request body: {error}"
        ) from None


def _strict(request: Request) -> bool:
    return request.headers.get("confluent-accept-unknown-properties", "").lower() != "true"


def available_types() -> list[str]:
    """The schema types whose format loads here (``GET /schemas/types``)."""
    found = []
    for name in SCHEMA_TYPES:
        try:
            importlib.import_module(f"sluice.schemas.formats.{_FORMAT_MODULES[name]}")
        except ImportError:
            continue
        found.append(name)
    return found


def create_app(
    registry: SchemaRegistry,
    election: Election | None = None,
    forwarding_context: ssl.SSLContext | None = None,
) -> FastAPI:
    """The REST API of ``registry``; with ``election``, writes on a follower are forwarded to
    the leader (without one, this instance writes: a single registry), an ``https://`` leader
    reached with ``forwarding_context``."""
    app = FastAPI(
        title="Sluice Schema Registry",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        default_response_class=RegistryResponse,
    )

    @app.middleware("http")
    async def unexpected(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        try:
            return await call_next(request)
        except Exception as error:
            log.exception("%s %s failed", request.method, request.url.path)
            return _answer({"error_code": 50001, "message": f"Internal error: {error}"}, 500)

    @app.exception_handler(errors.RegistryError)
    async def registry_error(request: Request, error: errors.RegistryError) -> Response:
        return _answer(error.body(), error.status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> Response:
        reason = _REASONS.get(error.status_code, str(error.detail))
        return _answer(
            {"error_code": error.status_code, "message": f"HTTP {error.status_code} {reason}"},
            error.status_code,
        )

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> Response:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
            for e in error.errors()
        )
        return _answer({"error_code": 422, "message": f"Invalid request: {problems}"}, 422)

    def write(request: Request, body: bytes, action: Callable[[Any], Any]) -> Response:
        """Run ``action`` on the JSON body here if this instance leads, else forward."""
        if election is None or election.is_leader():
            return _answer(action(_json(body)))
        if request.headers.get(FORWARDED_HEADER):
            raise errors.forwarding_failed(
                f"{election.url} got a request forwarded by "
                f"{request.headers[FORWARDED_HEADER]} but is not the leader"
            )
        leader = election.wait_for_leader(LEADER_WAIT_S)
        if leader is None:
            raise errors.forwarding_failed(
                f"No leader elected within {LEADER_WAIT_S:g} s (a rebalance under way?)"
            )
        if leader == election.url:  # became the leader meanwhile
            return _answer(action(_json(body)))
        raw_path = request.scope.get("raw_path")  # still percent-encoded, as the client sent it
        path = raw_path.decode("latin-1") if raw_path else urllib.parse.quote(request.url.path)
        path += f"?{request.url.query}" if request.url.query else ""
        answer = forward(
            leader,
            request.method,
            path,
            body,
            sender=election.url,
            authorization=request.headers.get("authorization"),
            context=forwarding_context,
        )
        if 200 <= answer.status < 300:
            registry.catch_up()  # read-your-write here too: the leader's record, read back
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)

    # -- root and schemas ------------------------------------------------------------------

    @app.get("/")
    def root() -> Any:
        return {}

    @app.get("/schemas/types")
    def schema_types() -> Any:
        return available_types()

    @app.get("/schemas/ids/{schema_id}")
    def schema_by_id(schema_id: str, format: str | None = None) -> Any:
        return registry.get_schema(_schema_id(schema_id), format)

    @app.get("/schemas/ids/{schema_id}/schema")
    def schema_text(schema_id: str) -> Response:
        return _text(registry.get_schema_text(_schema_id(schema_id)))

    @app.get("/schemas/ids/{schema_id}/subjects")
    def schema_subjects(
        schema_id: str,
        subject: str | None = None,
        deleted: str | None = None,
        offset: str | None = None,
        limit: str | None = None,
    ) -> Any:
        found = registry.schema_subjects(_schema_id(schema_id), subject, _flag(deleted))
        return _page(found, offset, limit)

    @app.get("/schemas/ids/{schema_id}/versions")
    def schema_versions(
        schema_id: str,
        subject: str | None = None,
        deleted: str | None = None,
        offset: str | None = None,
        limit: str | None = None,
    ) -> Any:
        found = registry.schema_versions(_schema_id(schema_id), subject, _flag(deleted))
        return _page(found, offset, limit)

    # -- subjects --------------------------------------------------------------------------

    @app.get("/subjects")
    def subjects(
        prefix: Annotated[str | None, Query(alias="subjectPrefix")] = None,
        deleted: str | None = None,
        deleted_only: Annotated[str | None, Query(alias="deletedOnly")] = None,
        deleted_only_snake: Annotated[str | None, Query(alias="deleted_only")] = None,
        offset: str | None = None,
        limit: str | None = None,
    ) -> Any:
        only = _flag(deleted_only) or _flag(deleted_only_snake)
        found = registry.subjects(prefix or "", _flag(deleted), only)
        return _page(found, offset, limit)

    @app.get("/subjects/{subject:path}/versions")
    def versions(
        subject: str,
        deleted: str | None = None,
        deleted_only: Annotated[str | None, Query(alias="deletedOnly")] = None,
        offset: str | None = None,
        limit: str | None = None,
    ) -> Any:
        found = registry.versions(subject, _flag(deleted), _flag(deleted_only))
        return _page(found, offset, limit)

    @app.post("/subjects/{subject:path}/versions")
    def register(
        subject: str, request: Request, body: RawBody, normalize: str | None = None
    ) -> Response:
        strict = _strict(request)
        return write(
            request,
            body,
            lambda payload: registry.register(
                subject, payload, normalize=_flag(normalize), strict=strict
            ),
        )

    @app.get("/subjects/{subject:path}/versions/{version}")
    def get_version(
        subject: str, version: str, deleted: str | None = None, format: str | None = None
    ) -> Any:
        return registry.get_version(subject, version, _flag(deleted), format)

    @app.get("/subjects/{subject:path}/versions/{version}/schema")
    def get_version_schema(subject: str, version: str, deleted: str | None = None) -> Response:
        return _text(registry.get_version_schema(subject, version, _flag(deleted)))

    @app.get("/subjects/{subject:path}/versions/{version}/referencedby")
    def referenced_by(
        subject: str, version: str, offset: str | None = None, limit: str | None = None
    ) -> Any:
        return _page(registry.referenced_by(subject, version), offset, limit)

    @app.delete("/subjects/{subject:path}/versions/{version}")
    def delete_version(
        subject: str, version: str, request: Request, body: RawBody, permanent: str | None = None
    ) -> Response:
        return write(
            request,
            body,
            lambda _: registry.delete_version(subject, version, _flag(permanent)),
        )

    @app.post("/subjects/{subject:path}")
    def lookup(
        subject: str,
        request: Request,
        body: RawBody,
        normalize: str | None = None,
        deleted: str | None = None,
    ) -> Any:
        return registry.lookup(
            subject,
            _json(body),
            normalize=_flag(normalize),
            deleted=_flag(deleted),
            strict=_strict(request),
        )

    @app.delete("/subjects/{subject:path}")
    def delete_subject(
        subject: str, request: Request, body: RawBody, permanent: str | None = None
    ) -> Response:
        return write(request, body, lambda _: registry.delete_subject(subject, _flag(permanent)))

    # -- config ----------------------------------------------------------------------------

    @app.get("/config")
    def global_config() -> Any:
        return registry.get_config(None)

    @app.put("/config")
    def put_global_config(request: Request, body: RawBody) -> Response:
        return write(request, body, lambda payload: registry.set_config(None, payload))

    @app.delete("/config")
    def delete_global_config(request: Request, body: RawBody) -> Response:
        return write(request, body, lambda _: registry.delete_config(None))

    @app.get("/config/{subject:path}")
    def subject_config(
        subject: str,
        default_to_global: Annotated[str | None, Query(alias="defaultToGlobal")] = None,
    ) -> Any:
        return registry.get_config(subject, _flag(default_to_global))

    @app.put("/config/{subject:path}")
    def put_subject_config(subject: str, request: Request, body: RawBody) -> Response:
        return write(request, body, lambda payload: registry.set_config(subject, payload))

    @app.delete("/config/{subject:path}")
    def delete_subject_config(subject: str, request: Request, body: RawBody) -> Response:
        return write(request, body, lambda _: registry.delete_config(subject))

    # -- mode ------------------------------------------------------------------------------

    @app.get("/mode")
    def global_mode() -> Any:
        return registry.get_mode(None)

    @app.put("/mode")
    def put_global_mode(request: Request, body: RawBody, force: str | None = None) -> Response:
        return write(request, body, lambda payload: registry.set_mode(None, payload, _flag(force)))

    @app.get("/mode/{subject:path}")
    def subject_mode(
        subject: str,
        default_to_global: Annotated[str | None, Query(alias="defaultToGlobal")] = None,
    ) -> Any:
        return registry.get_mode(subject, _flag(default_to_global))

    @app.put("/mode/{subject:path}")
    def put_subject_mode(
        subject: str, request: Request, body: RawBody, force: str | None = None
    ) -> Response:
        return write(
            request, body, lambda payload: registry.set_mode(subject, payload, _flag(force))
        )

    @app.delete("/mode/{subject:path}")
    def delete_subject_mode(subject: str, request: Request, body: RawBody) -> Response:
        return write(request, body, lambda _: registry.delete_mode(subject))

    # -- compatibility ---------------------------------------------------------------------

    @app.post("/compatibility/subjects/{subject:path}/versions/{version}")
    def compatibility(
        subject: str,
        version: str,
        request: Request,
        body: RawBody,
        normalize: str | None = None,
        verbose: str | None = None,
    ) -> Any:
        return registry.test_compatibility(
            subject,
            version,
            _json(body),
            normalize=_flag(normalize),
            verbose=_flag(verbose),
            strict=_strict(request),
        )

    @app.post("/compatibility/subjects/{subject:path}/versions")
    def compatibility_all(
        subject: str,
        request: Request,
        body: RawBody,
        normalize: str | None = None,
        verbose: str | None = None,
    ) -> Any:
        return registry.test_compatibility(
            subject,
            None,
            _json(body),
            normalize=_flag(normalize),
            verbose=_flag(verbose),
            strict=_strict(request),
        )

    return app
