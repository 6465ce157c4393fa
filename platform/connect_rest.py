"""A small client of Kafka Connect's REST API and the reconciliation behind ``connect apply``.

``sluice connect apply`` and ``sluice up`` both make a worker run exactly a list of
:class:`~sluice.connect.deploy.ConnectorSpec`: validated by the worker first (nothing changes when
any is wrong), then created, updated, paused/resumed/stopped and, with ``prune``, the others
deleted.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from sluice.exit_codes import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from sluice.connect.deploy import ConnectorSpec

__all__ = ["ConnectRest", "RestError", "apply_specs", "apply_when_ready"]

_STATE_CALLS = {"running": "resume", "paused": "pause", "stopped": "stop"}


class RestError(CliError):
    """The worker answered with an error ``status`` (409: it has not joined its group yet)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ConnectRest:
    """Kafka Connect's REST API at ``url`` (errors become :class:`CliError`)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """Status and decoded body of one request (404 is returned, other errors raise)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            decoded = json.loads(raw) if raw else {}
            if error.code == HTTPStatus.NOT_FOUND:
                return error.code, decoded
            message = (
                decoded.get("message", error.reason)
                if isinstance(decoded, dict)
                else raw.decode(errors="replace")
            )
            raise RestError(f"{method} {path}: {error.code}: {message}", error.code) from None
        except (urllib.error.URLError, OSError) as error:
            raise CliError(f"cannot reach the Connect worker at {self.url}: {error}") from None

    def get(self, path: str) -> Any:
        """GET, 404 raised too."""
        status, body = self.call("GET", path)
        if status == HTTPStatus.NOT_FOUND:
            raise CliError(f"GET {path}: 404: {body.get('message', 'not found')}")
        return body


def apply_specs(
    rest: ConnectRest,
    specs: Sequence[ConnectorSpec],
    *,
    prune: bool,
    report: Callable[[str], None],
) -> None:
    """Make the worker run exactly ``specs`` (and, with ``prune``, nothing else).

    Every spec is validated by the worker first; with any problem a :class:`CliError` (exit
    code 2) lists them all at ``file:line: key`` and nothing changes. ``report`` is told what
    happened to each connector (``"orders: created (running)"``).
    """
    problems = []
    for spec in specs:  # the worker validates against the plugins it has
        plugin = spec.config["connector.class"]
        status, body = rest.call(
            "PUT", f"/connector-plugins/{urllib.parse.quote(plugin)}/config/validate", spec.config
        )
        if status == HTTPStatus.NOT_FOUND:
            problems.append(
                str(spec.error("connector.class", f"unknown connector class {plugin!r}"))
            )
            continue
        for entry in body.get("configs", []):
            for message in entry["value"]["errors"]:
                problems.append(str(spec.error(entry["value"]["name"], message)))
    if problems:
        raise CliError("\n".join(problems), exit_code=EXIT_USAGE)
    running = set(rest.get("/connectors"))
    for spec in specs:
        state = spec.state
        if spec.name not in running:
            rest.call(
                "POST",
                "/connectors",
                {"name": spec.name, "config": spec.config, "initial_state": state.upper()},
            )
            report(f"{spec.name}: created ({state})")
            continue
        current = rest.get(f"/connectors/{spec.name}/config")
        # The worker shows secrets as [hidden]: those keys compare equal (a change of a secret
        # alone is not seen; `PUT /connectors/{name}/config` applies one).
        unchanged = set(current) == set(spec.config) and all(
            current[key] in (value, "[hidden]") for key, value in spec.config.items()
        )
        if not unchanged:
            rest.call("PUT", f"/connectors/{spec.name}/config", spec.config)
        status_body = rest.get(f"/connectors/{spec.name}/status")
        if status_body["connector"]["state"].lower() != state:
            rest.call("PUT", f"/connectors/{spec.name}/{_STATE_CALLS[state]}")
        report(f"{spec.name}: {'unchanged' if unchanged else 'updated'} ({state})")
    if prune:
        for name in sorted(running - {spec.name for spec in specs}):
            rest.call("DELETE", f"/connectors/{name}")
            report(f"{name}: deleted")


def apply_when_ready(
    rest: ConnectRest,
    specs: Sequence[ConnectorSpec],
    *,
    prune: bool,
    report: Callable[[str], None],
    wait: float,
    unreachable_too: bool = False,
    check: Callable[[], None] | None = None,
) -> None:
    """:func:`apply_specs`, tried again for up to ``wait`` seconds while the worker answers 409
    (it has not joined its group yet, or the group is rebalancing: Kafka Connect's "try again
    later") — and, with ``unreachable_too``, while it does not answer at all (a worker starting).
    ``check`` is called before each try (to raise if the worker's process died)."""
    deadline = time.monotonic() + wait
    while True:
        if check is not None:
            check()
        try:
            apply_specs(rest, specs, prune=prune, report=report)
            return
        except RestError as error:
            if error.status != HTTPStatus.CONFLICT or time.monotonic() > deadline:
                raise
        except CliError as error:
            unreachable = unreachable_too and "cannot reach" in error.message
            if not unreachable or time.monotonic() > deadline:
                raise
        time.sleep(0.5)
