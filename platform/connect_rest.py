"""A small client of Kafka Connect's REST API and the reconciliation behind ``connect apply``.

``sluice connect apply`` and ``sluice up`` both make a worker run exactly a list of
:class:`~sluice.connect.deploy.ConnectorSpec`: validated by the worker first (nothing changes when
any is wrong), then created, updated, paused/resumed/stopped and, with ``prune``, the others
deleted.

A REST API served on HTTPS with HTTP basic authentication (:mod:`sluice.connect.rest_security`)
is reached with a :class:`RestClientSecurity`: the CA that signed its certificate and a user and
password (never shown: not in a repr, not in a message). :func:`load_rest_config` reads them
from a client properties file::

    ssl.truststore.location=/etc/sluice/ca.pem      # PEM (ssl.truststore.type PEM)
    ssl.keystore.location=/etc/sluice/client.pem    # a client certificate: PEM key and chain
    basic.auth.user.info=operator:secret            # Confluent's USER_INFO form

>>> RestClientSecurity(user="ops", password="pw")
RestClientSecurity(ca_file=None, user='ops', cert_file=None)
>>> RestClientSecurity(user="ops", password="pw").headers()
{'Authorization': 'Basic b3BzOnB3'}
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sluice.client_properties import read_entries
from sluice.exit_codes import EXIT_USAGE, CliError

if TYPE_CHECKING:
    from sluice.connect.deploy import ConnectorSpec

__all__ = [
    "CA_OPTION",
    "ConnectRest",
    "RestClientSecurity",
    "RestError",
    "apply_specs",
    "apply_when_ready",
    "failure_reason",
    "load_rest_config",
    "write_rest_config",
]

_STATE_CALLS = {"running": "resume", "paused": "pause", "stopped": "stop"}
CA_OPTION = "--rest-ca-file"
"""The option that names the CA a REST API's certificate is checked with (named in errors)."""
_TRUSTSTORE = "ssl.truststore.location"
_USER_INFO = "basic.auth.user.info"
_KEYSTORE = "ssl.keystore.location"
_CONFIG_KEYS = (
    _TRUSTSTORE,
    "ssl.truststore.type",
    _KEYSTORE,
    "ssl.keystore.type",
    _USER_INFO,
    "basic.auth.credentials.source",
)


class RestError(CliError):
    """The worker answered with an error ``status`` (409: it has not joined its group yet)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RestClientSecurity:
    """How to reach a secured REST API: ``ca_file`` (PEM) to check its certificate with (None:
    the system's CAs), ``user`` and ``password`` for HTTP basic authentication (None: none),
    ``cert_file`` (PEM: key and certificate chain) a client certificate to show when the API
    asks for one (``ssl.client.authentication``)."""

    ca_file: Path | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    cert_file: Path | None = None

    def context(self) -> ssl.SSLContext:
        """The TLS context of ``https://`` requests; CliError (exit 2) for an unusable CA file."""
        try:
            context = ssl.create_default_context(
                cafile=None if self.ca_file is None else str(self.ca_file)
            )
        except (OSError, ssl.SSLError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            raise CliError(
                f"{CA_OPTION}: cannot load {self.ca_file} (a PEM CA file): {reason}",
                exit_code=EXIT_USAGE,
            ) from None
        # a CA file may name an intermediate CA or the server's own certificate (curl's --cacert
        # and Python 3.13 trust those too)
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
        if self.cert_file is not None:
            try:
                context.load_cert_chain(str(self.cert_file))
            except (OSError, ssl.SSLError) as error:
                reason = error.strerror if isinstance(error, OSError) and error.strerror else error
                raise CliError(
                    f"{_KEYSTORE}: cannot load {self.cert_file} (PEM: the client's key and "
                    f"certificate chain): {reason}",
                    exit_code=EXIT_USAGE,
                ) from None
        return context

    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header, when there is a user."""
        if self.user is None:
            return {}
        token = base64.b64encode(f"{self.user}:{self.password or ''}".encode()).decode()
        return {"Authorization": f"Basic {token}"}


def load_rest_config(path: Path) -> RestClientSecurity:
    """A :class:`RestClientSecurity` from a client properties file (see the module docstring);
    CliError (exit 2) naming the file, line and key when it cannot be used."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot read: {error.strerror}", exit_code=EXIT_USAGE) from None
    ca_file: Path | None = None
    cert_file: Path | None = None
    user: str | None = None
    password: str | None = None
    for line, key, value in read_entries(text):
        where = f"{path}:{line}: {key}"
        if key not in _CONFIG_KEYS:
            raise CliError(f"{where}: unknown key (known: {', '.join(_CONFIG_KEYS)})",
                           exit_code=EXIT_USAGE)  # fmt: skip
        if key in ("ssl.truststore.type", "ssl.keystore.type") and value.strip().upper() != "PEM":
            raise CliError(f"{where}: only PEM files are supported", exit_code=EXIT_USAGE)
        if key == "basic.auth.credentials.source" and value.strip().upper() != "USER_INFO":
            raise CliError(f"{where}: only USER_INFO is supported", exit_code=EXIT_USAGE)
        if key == _TRUSTSTORE:
            ca_file = Path(value.strip()) if value.strip() else None
        elif key == _KEYSTORE:
            cert_file = Path(value.strip()) if value.strip() else None
        elif key == _USER_INFO:
            user, colon, password = value.partition(":")
            if not colon or not user:
                raise CliError(f"{where}: expected USER:PASSWORD", exit_code=EXIT_USAGE)
    return RestClientSecurity(ca_file, user, password, cert_file)


def write_rest_config(path: Path, security: RestClientSecurity) -> Path:
    """Write ``security`` as :func:`load_rest_config` reads it, readable by its owner only
    (it holds a password)."""
    import os

    import javaproperties

    lines = []
    if security.ca_file is not None:
        lines.append(javaproperties.join_key_value(_TRUSTSTORE, str(security.ca_file)))
    if security.cert_file is not None:
        lines.append(javaproperties.join_key_value(_KEYSTORE, str(security.cert_file)))
    if security.user is not None:
        user_info = f"{security.user}:{security.password or ''}"
        lines.append(javaproperties.join_key_value(_USER_INFO, user_info))
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an existing file keeps its mode through O_CREAT
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write("".join(f"{line}\n" for line in lines))
    return path


def failure_reason(
    error: BaseException, url: str, security: RestClientSecurity | None, status: int | None = None
) -> str | None:
    """What a refused or failed request means for a user, when it is about security: a 401
    (credentials missing or refused), a certificate that cannot be verified; None otherwise."""
    if status == HTTPStatus.UNAUTHORIZED:
        if security is None or security.user is None:
            return (
                "the Connect REST API asks for credentials (HTTP basic authentication): give "
                "--rest-user and a password (--rest-password-file, SLUICE_CONNECT_PASSWORD) "
                "or --rest-config"
            )
        return f"the Connect REST API refused the credentials of user {security.user!r}"
    reason = getattr(error, "reason", error)
    if isinstance(reason, ssl.SSLCertVerificationError):
        detail = reason.verify_message or str(reason)
        trusted = (
            f"the CA of {CA_OPTION} {security.ca_file}"
            if security is not None and security.ca_file is not None
            else "the system's CAs"
        )
        return (
            f"the TLS certificate of the Connect REST API at {url} cannot be verified with "
            f"{trusted} ({detail}): give the CA that signed it with {CA_OPTION} FILE "
            f"(or {_TRUSTSTORE} in --rest-config)"
        )
    return None


class ConnectRest:
    """Kafka Connect's REST API at ``url`` (errors become :class:`CliError`), reached with
    ``security`` (a CA, basic-auth credentials) when given."""

    def __init__(
        self, url: str, timeout: float = 30.0, security: RestClientSecurity | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.security = security
        self._context = (
            (security or RestClientSecurity()).context()
            if self.url.lower().startswith("https://")
            else None
        )

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """Status and decoded body of one request (404 is returned, other errors raise)."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.security is not None:
            headers.update(self.security.headers())
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout, context=self._context
            ) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                decoded = json.loads(raw) if raw else {}
            except ValueError:
                decoded = raw.decode(errors="replace")
            if error.code == HTTPStatus.NOT_FOUND:
                return error.code, decoded if isinstance(decoded, dict) else {}
            security = failure_reason(error, self.url, self.security, error.code)
            message = security or (
                decoded.get("message", error.reason) if isinstance(decoded, dict) else decoded
            )
            raise RestError(f"{method} {path}: {error.code}: {message}", error.code) from None
        except (urllib.error.URLError, OSError) as error:
            security = failure_reason(error, self.url, self.security)
            if security is not None:
                raise CliError(security) from None
            hint = ""
            if self._context is None and isinstance(error, ConnectionError):
                hint = " (a REST API on HTTPS? give --url https://…)"
            raise CliError(
                f"cannot reach the Connect worker at {self.url}: {error}{hint}"
            ) from None

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
