"""HTTPS and HTTP basic authentication of Sluice's HTTP APIs: the Connect REST API, the schema
registry and the REST proxy (each served by :mod:`sluice.http_server`).

**TLS** (:class:`TlsSettings`): the server's key and certificate chain in one PEM file
(Kafka's and Confluent's ``ssl.keystore.location`` with ``ssl.keystore.type=PEM``), the CAs of
client certificates (``ssl.truststore.location``) and whether a client must show one
(``ssl.client.authentication``: ``none``, ``requested``, ``required``) and the suites it
negotiates (``ssl.cipher.suites``, standard names: :mod:`sluice.cipher_suites`).
:func:`uvicorn_tls` turns them into the server's settings.

**Basic authentication** (:class:`BasicAuth`): users from a JAAS file, Kafka Connect's and
Confluent's format. One section per service (``KafkaConnect``, Confluent Schema Registry's
``authentication.realm`` ``SchemaRegistry``, REST Proxy's ``KafkaRest``) names a
``PropertyFileLoginModule`` and its users file::

    SchemaRegistry {
        org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required
        file="/etc/sluice/registry.password";
    };

With Kafka's module (``org.apache.kafka.connect.rest.basic.auth.extension.
PropertyFileLoginModule``) the users file holds ``user=password`` lines; with Jetty's (what
Confluent's services use) ``user: password[,role…]`` lines, the roles after the first comma
(Confluent's default ``authentication.roles=*`` lets every role in). Jetty's ``OBF:``, ``MD5:``
and ``CRYPT:`` passwords are refused: the file holds plain passwords, readable by its owner.
:func:`require_basic_auth` answers a request without a known user's credentials 401 with
``WWW-Authenticate: Basic`` and Confluent's error body ``{"error_code": 401, "message": …}``;
passwords are compared in constant time and never logged.

>>> auth = BasicAuth({"ops": "pw"})
>>> auth.allows("Basic b3BzOnB3"), auth.allows("Basic b3BzOng="), auth.allows(None)
(True, False, False)
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import re
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse

from sluice import cipher_suites
from sluice.client_properties import parse_jaas, read_entries
from sluice.errors import ConfigError

__all__ = [
    "CLIENT_AUTH",
    "BasicAuth",
    "HttpSecurity",
    "TlsSettings",
    "check_tls",
    "jaas_users",
    "pem_file",
    "require_basic_auth",
    "uvicorn_tls",
]

log = logging.getLogger(__name__)

_VERSIONS = (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)

CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}
"""``ssl.client.authentication`` values and what they ask of a client."""
_PROPERTY_FILE_MODULE = "PropertyFileLoginModule"
_JETTY_PACKAGE = "org.eclipse.jetty."
_SECTION = re.compile(r"(?P<name>[\w.-]+)\s*\{(?P<body>.*?)\}\s*;", re.DOTALL)


@dataclass(frozen=True)
class TlsSettings:
    """An API's TLS: its PEM key and chain, the key's password, client certificates."""

    keystore: Path
    key_password: str | None = field(default=None, repr=False)
    truststore: Path | None = None
    client_auth: ssl.VerifyMode = ssl.CERT_NONE
    cipher_suites: tuple[str, ...] = ()
    """``ssl.cipher.suites``: standard names (:mod:`sluice.cipher_suites`); empty: OpenSSL's."""


@dataclass(frozen=True)
class BasicAuth:
    """The users of HTTP basic authentication (name → password), never shown."""

    users: Mapping[str, str] = field(repr=False)

    def allows(self, header: str | None) -> bool:
        """Whether an ``Authorization`` header carries a known user and its password."""
        if not header or header[:6].lower() != "basic ":
            return False
        try:
            decoded = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return False
        user, colon, password = decoded.partition(":")
        expected = self.users.get(user)
        if not colon or expected is None:
            hmac.compare_digest(password, password)  # the same work for an unknown user
            return False
        return hmac.compare_digest(password.encode(), expected.encode())


@dataclass(frozen=True)
class HttpSecurity:
    """How an API is served: TLS (None: plain HTTP), basic authentication (None: none) and
    the realm named in ``WWW-Authenticate``."""

    tls: TlsSettings | None = None
    basic_auth: BasicAuth | None = None
    realm: str = "Sluice"

    @property
    def scheme(self) -> str:
        """``https`` or ``http``."""
        return "https" if self.tls is not None else "http"


def pem_file(path: Path, *, key: str, kind: str = "PEM") -> Path:
    """``path`` if it is a readable PEM file (``kind``: the store type named by the settings);
    ConfigError naming ``key`` otherwise."""
    if kind.strip().upper() != "PEM":
        raise ConfigError(f"{kind}: only PEM files are supported", key=key)
    try:
        text = path.read_bytes()[: 64 * 1024]
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror}", key=key) from None
    if b"-----BEGIN " not in text:
        raise ConfigError(f"{path} is not PEM (a JKS or PKCS12 store?)", key=key)
    return path


def _password(user: str, value: str, jetty: bool, where: str, key: str) -> str:
    if not jetty:
        return value
    password = value.split(",", 1)[0].strip()
    if password.startswith(("OBF:", "MD5:", "CRYPT:")):
        raise ConfigError(
            f"{where}: user {user}: only plain passwords are supported (not Jetty's "
            f"{password.split(':', 1)[0]}:)",
            key=key,
        )
    return password


def jaas_users(jaas_path: Path, section: str, *, key: str) -> BasicAuth:
    """The users of the ``section`` of the JAAS file at ``jaas_path`` (see the module
    docstring); ConfigError naming ``key`` when the file, the section or its users file cannot
    be used."""
    try:
        text = jaas_path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read {jaas_path}: {error.strerror}", key=key) from None
    sections = {m["name"]: m["body"] for m in _SECTION.finditer(text)}
    if section not in sections:
        raise ConfigError(f"{jaas_path} has no {section} {{ … }}; section", key=key)
    try:
        module = parse_jaas(sections[section])
    except ValueError as error:
        raise ConfigError(f"{jaas_path}: {section}: {error}", key=key) from None
    if (
        module.login_module.rsplit(".", 1)[-1] != _PROPERTY_FILE_MODULE
        or "file" not in module.options
    ):
        raise ConfigError(
            f'{jaas_path}: {section}: expected a PropertyFileLoginModule with file="<users file>"',
            key=key,
        )
    users_path = Path(module.options["file"])
    try:
        entries = list(read_entries(users_path.read_text("utf-8")))
    except OSError as error:
        raise ConfigError(
            f"{jaas_path}: cannot read the users file {users_path}: {error.strerror}", key=key
        ) from None
    jetty = module.login_module.startswith(_JETTY_PACKAGE)
    users = {
        user: _password(user, value, jetty, f"{users_path}:{line}", key)
        for line, user, value in entries
    }
    if not users:
        raise ConfigError(f"{users_path} lists no user (user=password lines)", key=key)
    return BasicAuth(users)


def require_basic_auth(
    app: FastAPI, basic: BasicAuth, realm: str, what: str, message: str = "Unauthorized"
) -> None:
    """Answer every request of ``app`` without a known user's credentials 401, with
    ``WWW-Authenticate: Basic realm="<realm>"`` and ``{"error_code": 401, "message": message}``
    (Confluent's services say ``Unauthorized``; Kafka Connect "User cannot access the
    resource."). ``what`` names the API in the log line of a refusal."""

    @app.middleware("http")
    async def authenticate(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if basic.allows(request.headers.get("authorization")):
            return await call_next(request)
        log.info("%s request %s %s refused: no valid credentials from %s", what,
                 request.method, request.url.path,
                 request.client.host if request.client else "?")  # fmt: skip
        return JSONResponse(
            {"error_code": 401, "message": message},
            status_code=401,
            headers={"WWW-Authenticate": f'Basic realm="{realm}"'},
        )


def check_tls(tls: TlsSettings) -> None:
    """Load ``tls``'s files as the server will: ConfigError naming the key of one that cannot
    be (a PEM file without its key, a wrong key password, a truststore without a certificate)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(str(tls.keystore), password=tls.key_password)
    except (OSError, ssl.SSLError) as error:
        raise ConfigError(
            f"cannot load {tls.keystore} (PEM: the key, then the certificate chain): {error}",
            key="ssl.keystore.location",
        ) from None
    if tls.truststore is not None:
        try:
            context.load_verify_locations(cafile=str(tls.truststore))
        except (OSError, ssl.SSLError) as error:
            raise ConfigError(
                f"cannot load {tls.truststore} (PEM certificates): {error}",
                key="ssl.truststore.location",
            ) from None
    try:
        cipher_suites.restrict(context, tls.cipher_suites, _VERSIONS)
    except cipher_suites.CipherSuiteError as error:
        raise ConfigError(str(error), key="ssl.cipher.suites") from None


def uvicorn_tls(tls: TlsSettings | None) -> dict[str, Any]:
    """uvicorn's settings for ``tls`` (and ``scheme``, :func:`sluice.http_server.serve`'s)."""
    if tls is None:
        return {"scheme": "http"}
    options: dict[str, Any] = {
        "scheme": "https",
        "ssl_certfile": str(tls.keystore),
        "ssl_keyfile_password": tls.key_password,
        "ssl_ca_certs": None if tls.truststore is None else str(tls.truststore),
        "ssl_cert_reqs": tls.client_auth,
    }
    if tls.cipher_suites:
        suites = tls.cipher_suites

        def limited(_config: Any, default_factory: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
            context = default_factory()
            cipher_suites.restrict(context, suites, _VERSIONS)
            return context

        options["ssl_context_factory"] = limited
    return options
