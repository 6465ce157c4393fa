"""Kafka Connect's REST API, served by FastAPI over a herder
(:class:`~sluice.connect.runtime.herder.Herder`).

Same paths, status codes and bodies as Kafka Connect (3.6), so that its tooling works::

    GET    /                                        200 {"version", "commit", "kafka_cluster_id"}
    GET    /connectors[?expand=status&expand=info]  200 [names] or {name: {"status", "info"}}
    POST   /connectors                              201 connector info (409 if it exists)
    GET    /connectors/{name}                       200 {"name", "config", "tasks", "type"}
    GET    /connectors/{name}/config                200 config (secrets shown as "[hidden]")
    PUT    /connectors/{name}/config                201 created / 200 reconfigured, info
    GET    /connectors/{name}/status                200 {"name", "connector", "tasks", "type"}
    GET    /connectors/{name}/tasks                 200 [{"id": {...}, "config": {...}}]
    GET    /connectors/{name}/tasks/{id}/status     200 {"id", "state", "worker_id"}
    POST   /connectors/{name}/restart               204; 202 + status with includeTasks/onlyFailed
    POST   /connectors/{name}/tasks/{id}/restart    204
    PUT    /connectors/{name}/pause | resume        202
    PUT    /connectors/{name}/stop                  204
    DELETE /connectors/{name}                       204
    GET    /connectors/{name}/offsets               200 {"offsets": [{"partition", "offset"}]}
    PATCH  /connectors/{name}/offsets               200 {"message"} (connector STOPPED, else 400)
    DELETE /connectors/{name}/offsets               200 {"message"} (connector STOPPED, else 400)
    GET    /connector-plugins[?connectorsOnly=false] 200 [{"class", "type", "version"}]
    GET    /connector-plugins/{plugin}/config       200 [config key definitions]
    PUT    /connector-plugins/{plugin}/config/validate
                                                    200 {"name", "error_count", "groups", "configs"}

Errors are ``{"error_code": <status>, "message": "..."}``: 400 for an invalid config or body,
404 for an unknown connector, task, plugin or path, 409 for an existing connector or while the
herder is rebalancing, 500 otherwise (401 without credentials when basic authentication is
on). :func:`serve` runs the API with uvicorn in a thread, over HTTPS when asked
(:mod:`sluice.connect.rest_security`).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Body, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from sluice.connect.rest_security import RestSecurity
from sluice.connect.runtime.herder import BadRequestError, Herder, HerderError
from sluice.http_server import HttpServer, bind
from sluice.http_server import serve as serve_app

__all__ = ["RestServer", "create_app", "serve"]

log = logging.getLogger("sluice.connect")

_REASONS = {404: "Not Found", 405: "Method Not Allowed", 415: "Unsupported Media Type"}


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error_code": status, "message": message}, status_code=status)


def _flag(value: str | None) -> bool:
    """A query flag as Java's ``Boolean.valueOf`` reads it."""
    return value is not None and value.strip().lower() == "true"


def _config(payload: Any) -> dict[str, str]:
    """A request's connector config: a JSON object of strings (scalars are turned into text)."""
    if not isinstance(payload, dict):
        raise BadRequestError("The connector config must be a JSON object")
    config = {}
    for key, value in payload.items():
        if value is None:
            continue
        if isinstance(value, dict | list):
            raise BadRequestError(f"The value of {key} must be a string, not {value!r}")
        config[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return config


def _named(name: str, config: dict[str, str]) -> dict[str, str]:
    included = config.get("name")
    if included is not None and included != name:
        raise BadRequestError(
            f"Connector name configuration ({included}) doesn't match connector name in the "
            f"URL ({name})"
        )
    return {**config, "name": name}


def create_app(herder: Herder, security: RestSecurity | None = None) -> FastAPI:
    """The REST API of ``herder``; see the module docstring. With ``security``'s basic
    authentication, a request without a known user's credentials is answered 401."""
    app = FastAPI(title="Sluice Connect", docs_url=None, redoc_url=None)
    basic = security.basic_auth if security is not None else None

    if basic is not None:

        @app.middleware("http")
        async def authenticate(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            if basic.allows(request.headers.get("authorization")):
                return await call_next(request)
            log.info("REST request %s %s refused: no valid credentials from %s",
                     request.method, request.url.path,
                     request.client.host if request.client else "?")  # fmt: skip
            response = _error(401, "User cannot access the resource.")
            response.headers["WWW-Authenticate"] = 'Basic realm="Kafka Connect"'
            return response

    @app.middleware("http")
    async def unexpected(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        try:
            return await call_next(request)
        except Exception as error:
            log.exception("%s %s failed", request.method, request.url.path)
            return _error(500, str(error) or type(error).__name__)

    @app.exception_handler(HerderError)
    async def herder_error(request: Request, error: HerderError) -> JSONResponse:
        return _error(error.status, str(error))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        reason = _REASONS.get(error.status_code, str(error.detail))
        return _error(error.status_code, f"HTTP {error.status_code} {reason}")

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg', '')}"
            for e in error.errors()
        )
        return _error(400, f"Invalid request: {problems}")

    @app.get("/")
    def server_info() -> dict[str, Any]:
        return herder.server_info()

    # -- connectors ------------------------------------------------------------------------

    @app.get("/connectors")
    def list_connectors(expand: Annotated[list[str] | None, Query()] = None) -> Any:
        if not expand:
            return herder.connectors()
        wanted = {part.strip() for value in expand for part in value.split(",")}
        expanded: dict[str, dict[str, Any]] = {}
        for name in herder.connectors():
            entry: dict[str, Any] = {}
            try:
                if "status" in wanted:
                    entry["status"] = herder.connector_status(name)
                if "info" in wanted:
                    entry["info"] = herder.connector_info(name)
            except HerderError:  # deleted while we looked
                continue
            expanded[name] = entry
        return expanded

    @app.post("/connectors", status_code=201)
    def create_connector(response: Response, payload: Annotated[Any, Body()] = None) -> Any:
        if not isinstance(payload, dict):
            raise BadRequestError("The request body must be a JSON object")
        name = str(payload.get("name") or "").strip()
        if payload.get("config") is None:
            raise BadRequestError("The request needs a 'config' object")
        config = _named(name, _config(payload["config"]))
        initial_state = str(payload.get("initial_state") or "RUNNING").upper()
        info = herder.create_connector(name, config, initial_state)
        response.headers["Location"] = f"/connectors/{name}"
        return info

    @app.get("/connectors/{name}")
    def connector_info(name: str) -> Any:
        return herder.connector_info(name)

    @app.get("/connectors/{name}/config")
    def connector_config(name: str) -> Any:
        return herder.connector_config(name)

    @app.put("/connectors/{name}/config")
    def put_connector_config(
        name: str, response: Response, payload: Annotated[Any, Body()] = None
    ) -> Any:
        created, info = herder.put_connector_config(name, _named(name, _config(payload)))
        if created:
            response.status_code = 201
            response.headers["Location"] = f"/connectors/{name}"
        return info

    @app.get("/connectors/{name}/status")
    def connector_status(name: str) -> Any:
        return herder.connector_status(name)

    @app.get("/connectors/{name}/tasks")
    def task_configs(name: str) -> Any:
        return herder.task_configs(name)

    @app.get("/connectors/{name}/tasks/{task}/status")
    def task_status(name: str, task: int) -> Any:
        return herder.task_status(name, task)

    @app.post("/connectors/{name}/restart")
    def restart_connector(
        name: str,
        include_tasks: Annotated[str | None, Query(alias="includeTasks")] = None,
        only_failed: Annotated[str | None, Query(alias="onlyFailed")] = None,
    ) -> Response:
        status = herder.restart_connector(name, _flag(include_tasks), _flag(only_failed))
        if status is None:
            return Response(status_code=204)
        return JSONResponse(status, status_code=202)

    @app.post("/connectors/{name}/tasks/{task}/restart", status_code=204)
    def restart_task(name: str, task: int) -> Response:
        herder.restart_task(name, task)
        return Response(status_code=204)

    @app.put("/connectors/{name}/pause", status_code=202)
    def pause(name: str) -> Response:
        herder.pause(name)
        return Response(status_code=202)

    @app.put("/connectors/{name}/resume", status_code=202)
    def resume(name: str) -> Response:
        herder.resume(name)
        return Response(status_code=202)

    @app.put("/connectors/{name}/stop", status_code=204)
    def stop(name: str) -> Response:
        herder.stop(name)
        return Response(status_code=204)

    @app.delete("/connectors/{name}", status_code=204)
    def delete_connector(name: str) -> Response:
        herder.delete_connector(name)
        return Response(status_code=204)

    # -- offsets ---------------------------------------------------------------------------

    @app.get("/connectors/{name}/offsets")
    def connector_offsets(name: str) -> Any:
        return herder.connector_offsets(name)

    @app.patch("/connectors/{name}/offsets")
    def alter_offsets(name: str, payload: Annotated[Any, Body()] = None) -> Any:
        offsets = payload.get("offsets") if isinstance(payload, dict) else None
        if not isinstance(offsets, list) or not offsets:
            raise BadRequestError(
                "Partitions / offsets need to be provided for an alter offsets request"
            )
        return herder.alter_offsets(name, offsets)

    @app.delete("/connectors/{name}/offsets")
    def reset_offsets(name: str) -> Any:
        return herder.reset_offsets(name)

    # -- plugins ---------------------------------------------------------------------------

    @app.get("/connector-plugins")
    def plugins(connectors_only: Annotated[str, Query(alias="connectorsOnly")] = "true") -> Any:
        return herder.plugins(connectors_only.strip().lower() != "false")

    @app.get("/connector-plugins/{plugin}/config")
    def plugin_config(plugin: str) -> Any:
        return herder.plugin_config(plugin)

    @app.put("/connector-plugins/{plugin}/config/validate")
    def validate(plugin: str, payload: Annotated[Any, Body()] = None) -> Any:
        return herder.validate(_config(payload), plugin)

    return app


RestServer = HttpServer
"""A running REST API (see :func:`serve`); stop it with :meth:`~HttpServer.stop` or ``with``."""


def serve(
    herder: Herder,
    host: str = "127.0.0.1",
    port: int = 8083,
    *,
    timeout_s: float = 10.0,
    security: RestSecurity | None = None,
) -> RestServer:
    """Serve the REST API of ``herder`` on ``host:port`` (0: any free port) in a thread, with
    ``security``'s TLS and basic authentication (:mod:`sluice.connect.rest_security`).

    The socket is bound before this returns (an address in use raises ``OSError`` here), and
    the server accepts requests once it returns.
    """
    sock = bind(host, port)
    tls = security.tls if security is not None else None
    return serve_app(
        create_app(herder, security),
        sock,
        what="Connect REST API",
        thread_name="connect-rest",
        timeout_s=timeout_s,
        scheme="http" if tls is None else "https",
        ssl_certfile=None if tls is None else str(tls.keystore),
        ssl_keyfile_password=None if tls is None else tls.key_password,
        ssl_ca_certs=None if tls is None or tls.truststore is None else str(tls.truststore),
        ssl_cert_reqs=ssl.CERT_NONE if tls is None else tls.client_auth,
    )
