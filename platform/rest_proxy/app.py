"""The proxy's FastAPI application: API v3, API v2, and Confluent's error bodies.

Whatever goes wrong answers ``{"error_code", "message"}``: a :class:`RestError` with its code,
a body FastAPI cannot read with 400, an unknown path with 404, a wrong method with 405; an
unforeseen exception is logged and answered 500 (``error_code`` 500) without
taking the proxy down.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from sluice.rest_proxy.admin import ClusterAdmin
from sluice.rest_proxy.consumers import ConsumerInstances
from sluice.rest_proxy.errors import BAD_REQUEST, RestError
from sluice.rest_proxy.pool import ClientPool
from sluice.rest_proxy.produce import Producing
from sluice.rest_proxy.records import RecordsEndpoint
from sluice.rest_proxy.schemas import SchemaSerdes
from sluice.rest_proxy.v2 import v2_router
from sluice.rest_proxy.v3 import v3_router

__all__ = ["create_app"]

log = logging.getLogger("sluice.rest_proxy")

_REASONS = {404: "Not Found", 405: "Method Not Allowed", 415: "Unsupported Media Type"}


def _error(status: int, error_code: int, message: str) -> JSONResponse:
    return JSONResponse({"error_code": error_code, "message": message}, status_code=status)


def create_app(pool: ClientPool, serdes: SchemaSerdes, instances: ConsumerInstances) -> FastAPI:
    """The proxy's API over ``pool``'s clients, ``serdes``' registry and v2 ``instances``."""
    app = FastAPI(title="Sluice REST Proxy", docs_url=None, redoc_url=None, openapi_url=None)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=error)
        return _error(500, 500, f"Internal Server Error: {type(error).__name__}")

    @app.exception_handler(RestError)
    async def rest_error(request: Request, error: RestError) -> JSONResponse:
        return _error(error.status, error.error_code, error.message)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        reason = _REASONS.get(error.status_code, str(error.detail))
        return _error(error.status_code, error.status_code, f"HTTP {error.status_code} {reason}")

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
            for e in error.errors()
        )
        return _error(400, BAD_REQUEST, f"Invalid request: {problems}")

    @app.get("/")
    def root() -> dict[str, Any]:
        return {}

    app.include_router(v3_router(ClusterAdmin(pool)))
    app.include_router(v2_router(pool, instances, serdes))
    app.add_middleware(RecordsEndpoint, pool=pool, producing=Producing(pool, serdes))
    return app
