"""Interactive queries over HTTP: this instance's stores and the application's metadata, served
at ``application_server`` when ``serve_queries`` is set, so that a small client can find the
instance that holds a key (``/metadata/…``) and ask it (``/stores/…``).

- ``GET /metadata``: every instance with an ``application_server``, its stores and partitions;
- ``GET /metadata/{store}/keys/{key}``: ``{"active": "host:port", "standbys": [...],
  "partition": p}``;
- ``GET /stores/{store}/keys/{key}``: ``{"key": …, "value": …}``, 404 when this instance has
  none;
- ``GET /stores/{store}/keys/{key}/windows?from=&to=``: window stores ``[[start, value], …]``,
  session stores ``[[start, end, value], …]``;
- ``GET /stores/{store}/range?from=&to=``: ``[[key, value], …]`` in key order;
- ``GET /stores/{store}/all``: every entry, ``[[key, value], …]`` (windowed keys as
  ``[key, start]``).

Store reads take ``stale=true`` (standby replicas too) and ``max_lag=N`` (only standbys at most
``N`` changelog records behind). A key in a path is taken as text when the store's keys are
strings, else as JSON (``/keys/42``, ``/keys/%7B%22id%22%3A1%7D``). Errors are JSON bodies
``{"error_code": …, "message": …}``: 404 for an unknown store or a key not here, 400 for a key
that does not parse, 503 while the application is not running.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from sluice import http_server
from sluice.serde import STRING, Serde
from sluice.streams.errors import StreamsError
from sluice.streams.runtime.instances import StreamsMetadata

__all__ = ["query_app", "serve_queries"]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error_code": status, "message": message}, status_code=status)


def _plain(value: Any) -> Any:
    """A store's value as JSON can carry it (tuples as lists, bytes as text)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _metadata(m: StreamsMetadata) -> dict[str, Any]:
    return {
        "host": str(m.host_info),
        "stores": sorted(m.state_store_names),
        "partitions": sorted([list(tp) for tp in m.topic_partitions]),
        "standby_stores": sorted(m.standby_state_store_names),
        "standby_partitions": sorted([list(tp) for tp in m.standby_topic_partitions]),
    }


def query_app(streams: Any) -> FastAPI:
    """The API over ``streams`` (a :class:`~sluice.streams.runtime.streams.KafkaStreams`)."""
    app = FastAPI(title="Sluice Streams interactive queries", docs_url=None, redoc_url=None)

    def key_of(store: str, text: str) -> Any:
        spec = streams.topology.stores.get(store)
        if spec is None:
            raise LookupError(f"no store named {store!r}")
        serde: Serde = spec.build().key_serde
        if serde is STRING:
            return text
        try:
            return json.loads(text)
        except ValueError:
            raise ValueError(
                f"the key {text!r} is not JSON (the keys of {store!r} are not strings)"
            ) from None

    def answer(work: Any) -> Any:
        try:
            return work()
        except LookupError as error:
            return _error(404, str(error).strip("'\""))
        except ValueError as error:
            return _error(400, str(error))
        except StreamsError as error:
            status = 404 if "no store named" in str(error) else 503
            return _error(status, str(error))

    def view(store: str, request: Request) -> Any:
        stale = request.query_params.get("stale", "false").lower() == "true"
        lag = request.query_params.get("max_lag")
        if lag is not None and not lag.isdigit():
            raise ValueError(f"max_lag must be a whole number, got {lag!r}")
        return streams.store(store, stale=stale, max_lag=None if lag is None else int(lag))

    def bound(request: Request, name: str) -> Any:
        text = request.query_params.get(name)
        return None if text is None else text

    @app.get("/metadata")
    def metadata() -> Any:
        return answer(lambda: [_metadata(m) for m in streams.all_metadata()])

    @app.get("/metadata/{store}/keys/{key}")
    def key_metadata(store: str, key: str) -> Any:
        def work() -> Any:
            found = streams.query_metadata_for_key(store, key_of(store, key))
            if found is None:
                raise LookupError(f"no instance has the partition of {key!r} of {store!r} now")
            return {
                "active": str(found.active_host),
                "standbys": sorted(str(h) for h in found.standby_hosts),
                "partition": found.partition,
            }

        return answer(work)

    @app.get("/stores/{store}/keys/{key}")
    def get(store: str, key: str, request: Request) -> Any:
        def work() -> Any:
            value = view(store, request).get(key_of(store, key))
            if value is None:
                raise LookupError(f"{key!r} is not in {store!r} on this instance")
            return {"key": key_of(store, key), "value": _plain(value)}

        return answer(work)

    @app.get("/stores/{store}/keys/{key}/windows")
    def windows(store: str, key: str, request: Request) -> Any:
        def work() -> Any:
            low, high = (bound(request, "from"), bound(request, "to"))
            for text in (low, high):
                if text is not None and not text.lstrip("-").isdigit():
                    raise ValueError(f"from/to must be milliseconds, got {text!r}")
            found = view(store, request).fetch(
                key_of(store, key),
                None if low is None else int(low),
                None if high is None else int(high),
            )
            return _plain(found)

        return answer(work)

    @app.get("/stores/{store}/range")
    def key_range(store: str, request: Request) -> Any:
        def work() -> Any:
            low, high = (bound(request, "from"), bound(request, "to"))
            return _plain(
                list(
                    view(store, request).range(
                        None if low is None else key_of(store, low),
                        None if high is None else key_of(store, high),
                    )
                )
            )

        return answer(work)

    @app.get("/stores/{store}/all")
    def everything(store: str, request: Request) -> Any:
        return answer(lambda: _plain(list(view(store, request).all())))

    return app


def serve_queries(streams: Any, host: str, port: int) -> http_server.HttpServer:
    """Serve :func:`query_app` on ``host:port`` (port 0: a free one) in a thread."""
    return http_server.serve(
        query_app(streams),
        http_server.bind(host, port),
        what="the interactive-query API",
        thread_name="sluice-streams-queries",
    )
