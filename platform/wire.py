"""A minimal blocking Kafka-protocol client, for the APIs confluent-kafka's AdminClient lacks.

Everything above the broker talks to it through confluent-kafka (DESIGN.md §1). A few admin APIs
are not exposed there (ListTransactions, DescribeTransactions); this module speaks them itself,
with kio's message classes, over one TCP connection per broker: PLAINTEXT, or TLS and SASL
(PLAIN, SCRAM-SHA-256/512) as :class:`Security` says, from librdkafka's property names. Like
any Kafka client it works against Sluice and Apache Kafka alike::

    from sluice import wire

    with wire.connect("localhost:9092", timeout=10) as conn:
        answer = conn.call(wire.LIST_TRANSACTIONS, state_filters=("Ongoing",))

A frame is a 4-byte big-endian size, then a request header (v1, or v2 in flexible versions,
as kio's ``__header_schema__`` of the request says) and the body; the answer is a size, a
response header (``__header_schema__`` of the response) and the body. Requests on a connection
are answered in order, so one outstanding request at a time is all this client needs.

On connecting, ApiVersions tells which versions the broker serves; :meth:`Connection.call`
sends the highest version both sides know, filling in only the fields that version has.
Errors that the broker puts in a response are returned as they are (kio ``ErrorCode`` values);
only failures to talk at all raise :class:`WireError`.
"""

from __future__ import annotations

import datetime
import io
import socket
import ssl
import struct
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache
from types import TracebackType
from typing import Any, Final, cast

from kio._kio_native import get_field_reader
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import (
    read_compact_array_length,
    read_int64,
    read_legacy_array_length,
)
from kio.static.primitive import TZAware, i16, i32

from sluice.errors import SluiceError
from sluice.kio_compat import Reader, read_tagged_fields, tagged_readers

__all__ = [
    "DESCRIBE_TRANSACTIONS",
    "FIND_COORDINATOR",
    "LIST_TRANSACTIONS",
    "METADATA",
    "Api",
    "AuthenticationError",
    "BrokerUnreachableError",
    "Connection",
    "Node",
    "Security",
    "UnsupportedApiError",
    "WireError",
    "brokers",
    "connect",
    "connect_node",
    "decode_response",
    "encode_request",
    "parse_bootstrap",
]


class WireError(SluiceError):
    """Talking to a broker failed: the connection broke, timed out, or an answer was unreadable."""


class BrokerUnreachableError(WireError):
    """No connection could be opened; ``reason`` is the socket's own words (refused, resolve…)."""

    def __init__(self, address: str, reason: str) -> None:
        super().__init__(f"cannot connect to {address}: {reason}")
        self.address = address
        self.reason = reason


class UnsupportedApiError(WireError):
    """The broker serves no version of an API that this client can speak."""


class AuthenticationError(WireError):
    """The broker refused the SASL mechanism or the credentials."""


SECURITY_KEYS: Final = (
    "security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password",
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
)  # fmt: skip
"""The client properties (librdkafka's names) that :meth:`Security.from_config` applies."""
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class Security:
    """How a connection secures itself: TLS (``context``) and SASL (``mechanism``)."""

    protocol: str = "PLAINTEXT"
    context: ssl.SSLContext | None = field(default=None, compare=False)
    mechanism: str | None = None
    username: str = ""
    password: str = field(default="", repr=False)

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> Security:
        """From librdkafka's properties (:data:`SECURITY_KEYS`); ``ValueError`` names a key it
        cannot apply or a value it refuses.

        >>> Security.from_config({"security.protocol": "sasl_plaintext", "sasl.username": "a"})
        Security(protocol='SASL_PLAINTEXT', context=None, mechanism='PLAIN', username='a')
        """
        unknown = [key for key in config if key not in SECURITY_KEYS]
        if unknown:
            raise ValueError(
                f"{unknown[0]}: not applied by sluice.wire (it applies {', '.join(SECURITY_KEYS)})"
            )
        protocol = config.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in _PROTOCOLS:
            raise ValueError(f"security.protocol={protocol}: expected one of {_PROTOCOLS}")
        context = None
        if protocol in ("SSL", "SASL_SSL"):
            context = ssl.create_default_context(cafile=config.get("ssl.ca.location"))
            verify = config.get("ssl.endpoint.identification.algorithm", "https").lower()
            context.check_hostname = verify != "none"
            certificate = config.get("ssl.certificate.location")
            if certificate:
                context.load_cert_chain(
                    certificate, config.get("ssl.key.location"), config.get("ssl.key.password")
                )
        mechanism = None
        if protocol.startswith("SASL"):
            names = config.get("sasl.mechanism") or config.get("sasl.mechanisms") or "PLAIN"
            mechanism = names.upper()
            if mechanism not in _MECHANISMS:
                raise ValueError(f"sasl.mechanism={names}: sluice.wire speaks {_MECHANISMS}")
        return cls(
            protocol,
            context,
            mechanism,
            config.get("sasl.username", ""),
            config.get("sasl.password", ""),
        )


PLAINTEXT: Final = Security()


@dataclass(frozen=True, slots=True)
class Api:
    """An API key with the versions this client speaks (the fields it uses exist in all)."""

    key: int
    name: str
    min_version: int
    max_version: int


API_VERSIONS: Final = Api(18, "ApiVersions", 0, 3)
SASL_HANDSHAKE: Final = Api(17, "SaslHandshake", 1, 1)
SASL_AUTHENTICATE: Final = Api(36, "SaslAuthenticate", 0, 2)
METADATA: Final = Api(3, "Metadata", 1, 12)
FIND_COORDINATOR: Final = Api(10, "FindCoordinator", 1, 3)  # v4 batches keys: other shape
DESCRIBE_TRANSACTIONS: Final = Api(65, "DescribeTransactions", 0, 0)
LIST_TRANSACTIONS: Final = Api(66, "ListTransactions", 0, 2)
DESCRIBE_ACLS: Final = Api(29, "DescribeAcls", 1, 3)


@dataclass(frozen=True, slots=True)
class Node:
    """A broker as Metadata or FindCoordinator name it."""

    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.node_id} ({self.host}:{self.port})"


_SIZE = struct.Struct(">i")
_ERROR_CODE = struct.Struct(">h")
_MAX_FRAME = 100 * 1024 * 1024


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """``host:port[,host:port…]`` → addresses; IPv6 hosts in brackets.

    >>> parse_bootstrap("a:9092, [::1]:9093")
    [('a', 9092), ('::1', 9093)]
    """
    addresses: list[tuple[str, int]] = []
    for item in text.split(","):
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"expected HOST:PORT, got {item.strip()!r}")
        addresses.append((host.removeprefix("[").removesuffix("]"), int(port)))
    return addresses


@cache
def _request_codec(api_key: int, version: int) -> tuple[type[Any], Any, Any, type[Any]]:
    schema = load_request_schema(api_key, version)
    header = schema.__header_schema__
    return schema, entity_writer(header), entity_writer(schema), header


@cache
def _field_names(api_key: int, version: int) -> frozenset[str]:
    return frozenset(f.name for f in fields(load_request_schema(api_key, version)))


@cache
def _response_codec(api_key: int, version: int) -> tuple[Any, Any]:
    schema = load_response_schema(api_key, version)
    body_reader = entity_reader(schema)
    if _has_timestamp(schema):
        body_reader = _lenient_reader(schema)
    return entity_reader(schema.__header_schema__), body_reader


def encode_request(request: Any, *, correlation_id: int, client_id: str | None) -> bytes:
    """The whole frame (size prefix included) of a kio request instance, at its version."""
    api_key, version = int(request.__api_key__), int(request.__version__)
    _, header_writer, body_writer, header_schema = _request_codec(api_key, version)
    header = header_schema(
        request_api_key=i16(api_key),
        request_api_version=i16(version),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buf = io.BytesIO()
    buf.write(b"\0\0\0\0")
    header_writer(buf, header)
    body_writer(buf, request)
    view = buf.getbuffer()
    _SIZE.pack_into(view, 0, len(view) - 4)
    del view
    return buf.getvalue()


def decode_response(api_key: int, version: int, frame: bytes | memoryview) -> tuple[int, Any]:
    """``(correlation_id, body)`` of a response frame (without its size prefix) to a request
    of ``api_key`` at ``version``. An ApiVersions answer refusing the version (error 35) has a
    v0 body, as Kafka writes it. kio's exceptions on unreadable bytes pass through."""
    header_reader, body_reader = _response_codec(api_key, version)
    header, offset = header_reader(frame, 0)
    if api_key == API_VERSIONS.key and version > 0 and len(frame) >= offset + 2:
        (code,) = _ERROR_CODE.unpack_from(frame, offset)
        if code == ErrorCode.unsupported_version:  # the body is v0's
            body_reader = _response_codec(api_key, 0)[1]
    body, _ = body_reader(frame, offset)
    return int(header.correlation_id), body


# --- timestamps kio refuses ------------------------------------------------------------------
# kio reads a non-nullable ``datetime_i64`` only if it is >= 0, but Kafka sends -1 for "none"
# (DescribeTransactions' start time of a transactional id in state Empty). Bodies of such
# schemas are read field by field with kio's own field readers, except those timestamps, which
# become datetimes before the epoch (-1 -> 1969-12-31T23:59:59.999Z). Unknown tagged fields
# are skipped, as Kafka's readers do (sluice.kio_compat, shared with the broker's codec).


def _element(annotation: Any) -> Any:
    """``tuple[X, ...]`` -> ``X``; anything else unchanged."""
    if typing.get_origin(annotation) is tuple:
        return typing.get_args(annotation)[0]
    return annotation


def _has_timestamp(schema: type[Any]) -> bool:
    """Whether ``schema`` or an entity nested in it has a non-nullable ``datetime_i64``."""
    for f in fields(schema):
        kind = _element(f.type)
        if kind is TZAware or (is_dataclass(kind) and _has_timestamp(cast(type[Any], kind))):
            return True
    return False


_Reader = Reader


def _read_timestamp(buffer: Any, offset: int) -> tuple[datetime.datetime, int]:
    millis, size = read_int64(buffer, offset)
    return datetime.datetime.fromtimestamp(millis / 1000, tz=datetime.UTC), size


def _array_of(schema: type[Any], item: _Reader) -> _Reader:
    read_length = read_compact_array_length if schema.__flexible__ else read_legacy_array_length

    def read(buffer: Any, offset: int) -> tuple[Any, int]:
        length, size = read_length(buffer, offset)
        if length is None or length < 0:
            return None, size
        items = []
        for _ in range(length):
            value, item_size = item(buffer, offset + size)
            items.append(value)
            size += item_size
        return tuple(items), size

    return read


_LENIENT: dict[type[Any], _Reader] = {}


def _lenient_reader(schema: type[Any]) -> _Reader:
    """A reader of ``schema`` that accepts negative timestamps (cached)."""
    if (cached := _LENIENT.get(schema)) is not None:
        return cached
    plain: list[tuple[str, _Reader]] = []
    tagged = tagged_readers(schema)
    for f in fields(schema):
        if f.metadata.get("tag") is not None:
            continue
        kind = _element(f.type)
        reader: _Reader
        if kind is TZAware and f.type is TZAware:
            reader = _read_timestamp
        elif is_dataclass(kind) and _has_timestamp(cast(type[Any], kind)):
            reader = _lenient_reader(cast(type[Any], kind))
            if f.type is not kind:
                reader = _array_of(schema, reader)
        else:
            reader = get_field_reader(schema, f, False, False)
        plain.append((f.name, reader))

    def read(buffer: Any, offset: int) -> tuple[Any, int]:
        start = offset
        values: dict[str, Any] = {}
        for name, field_reader in plain:
            values[name], size = field_reader(buffer, offset)
            offset += size
        if schema.__flexible__:
            offset = read_tagged_fields(buffer, offset, tagged, values)
        return schema(**values), offset - start

    _LENIENT[schema] = read
    return read


class Connection:
    """One blocking connection to one broker; not thread-safe. Use as a context manager."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout: float,
        client_id: str,
        security: Security = PLAINTEXT,
    ) -> None:
        self.host = host
        self.port = port
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.client_id = client_id
        self._correlation = 0
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except socket.gaierror as exc:
            raise BrokerUnreachableError(
                self.address, f"Failed to resolve '{self.address}': {exc.strerror}"
            ) from None
        except TimeoutError:
            raise BrokerUnreachableError(
                self.address, f"Connect to {self.address} timed out after {timeout:g}s"
            ) from None
        except OSError as exc:
            raise BrokerUnreachableError(
                self.address, f"Connect to {self.address} failed: {exc.strerror or exc}"
            ) from None
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if security.context is not None:
            try:
                self._sock = security.context.wrap_socket(self._sock, server_hostname=host)
            except (OSError, ssl.SSLError) as exc:
                self._sock.close()
                raise BrokerUnreachableError(self.address, f"TLS handshake failed: {exc}") from None
        try:
            self.versions = self._api_versions()
            if security.mechanism is not None:
                self._authenticate(security)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def version_of(self, api: Api) -> int:
        """The highest version of ``api`` both sides speak, or :class:`UnsupportedApiError`."""
        served = self.versions.get(api.key)
        if served is not None:
            high = min(served[1], api.max_version)
            if high >= max(served[0], api.min_version):
                return high
        spoken = f"{api.min_version}-{api.max_version}"
        if api.min_version == api.max_version:
            spoken = str(api.min_version)
        raise UnsupportedApiError(
            f"the broker at {self.address} does not serve {api.name} "
            f"(API key {api.key}, version {spoken})"
        )

    def call(self, api: Api, **values: Any) -> Any:
        """Send ``api`` at the best common version, built from ``values`` (those the version
        has; the others are dropped), and return the response body."""
        version = self.version_of(api)
        schema = _request_codec(api.key, version)[0]
        names = _field_names(api.key, version)
        request = schema(**{k: v for k, v in values.items() if k in names})
        return self._exchange(api, version, request)

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        """ApiVersions v3; a broker that does not know v3 answers a v0 body with error 35."""
        schema = _request_codec(API_VERSIONS.key, 3)[0]
        request = schema(client_software_name="sluice", client_software_version="1")
        answer = self._exchange(API_VERSIONS, 3, request)
        if answer.error_code == ErrorCode.unsupported_version:
            schema = _request_codec(API_VERSIONS.key, 0)[0]
            answer = self._exchange(API_VERSIONS, 0, schema())
        if answer.error_code != ErrorCode.none:
            raise WireError(f"{self.address} refused ApiVersions: {answer.error_code.name}")
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}

    def _authenticate(self, security: Security) -> None:
        """SaslHandshake, then SaslAuthenticate with PLAIN or SCRAM (``scramp``'s client)."""
        mechanism = cast(str, security.mechanism)
        answer = self.call(SASL_HANDSHAKE, mechanism=mechanism)
        if answer.error_code != ErrorCode.none:
            raise AuthenticationError(
                f"{self.address} does not take SASL {mechanism} ({answer.error_code.name}; "
                f"it takes {', '.join(answer.mechanisms) or 'none'})"
            )

        def step(token: bytes) -> bytes:
            answer = self.call(SASL_AUTHENTICATE, auth_bytes=token)
            if answer.error_code != ErrorCode.none:
                raise AuthenticationError(
                    f"{self.address} refused the credentials: "
                    f"{answer.error_message or answer.error_code.name}"
                )
            return bytes(answer.auth_bytes)

        if mechanism == "PLAIN":
            step(f"\0{security.username}\0{security.password}".encode())
            return
        from scramp import ScramClient, ScramException

        client = ScramClient([mechanism], security.username, security.password)
        try:
            client.set_server_first(step(client.get_client_first().encode()).decode())
            client.set_server_final(step(client.get_client_final().encode()).decode())
        except ScramException as exc:
            raise AuthenticationError(f"SCRAM with {self.address} failed: {exc}") from None

    def _exchange(self, api: Api, version: int, request: Any) -> Any:
        self._correlation += 1
        frame = encode_request(request, correlation_id=self._correlation, client_id=self.client_id)
        try:
            self._sock.sendall(frame)
            size = _SIZE.unpack(self._read(4))[0]
            if not 0 <= size <= _MAX_FRAME:
                raise WireError(f"{self.address} sent a frame of {size} bytes to {api.name}")
            answer = self._read(size)
        except TimeoutError:
            raise WireError(f"{self.address} did not answer {api.name} in time") from None
        except OSError as exc:
            raise WireError(
                f"{self.address} did not answer {api.name}: {exc.strerror or exc}"
            ) from None
        return self._decode(api, version, answer)

    def _decode(self, api: Api, version: int, answer: bytes) -> Any:
        try:
            correlation_id, body = decode_response(api.key, version, answer)
        except Exception as exc:  # kio raises several types on bad bytes; all mean the same
            raise WireError(
                f"unreadable {api.name} v{version} answer from {self.address}: {exc}"
            ) from None
        if correlation_id != self._correlation:
            raise WireError(
                f"{self.address} answered request {correlation_id} instead of {self._correlation}"
            )
        return body

    def _read(self, count: int) -> bytes:
        chunks: list[bytes] = []
        while count:
            chunk = self._sock.recv(min(count, 1 << 20))
            if not chunk:
                raise ConnectionResetError("closed the connection")
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)


def connect(
    bootstrap: str,
    *,
    timeout: float,
    client_id: str = "sluice-wire",
    security: Security = PLAINTEXT,
) -> Connection:
    """A connection to the first broker of ``bootstrap`` that accepts one.

    Raises :class:`BrokerUnreachableError` (with the last address's reason) if none does, and
    ``ValueError`` if ``bootstrap`` is not ``host:port[,host:port…]``.
    """
    last: BrokerUnreachableError | None = None
    for host, port in parse_bootstrap(bootstrap):
        try:
            return Connection(host, port, timeout=timeout, client_id=client_id, security=security)
        except BrokerUnreachableError as exc:
            last = exc
    assert last is not None  # parse_bootstrap never returns an empty list
    raise last


def connect_node(
    node: Node, *, timeout: float, client_id: str = "sluice-wire", security: Security = PLAINTEXT
) -> Connection:
    """A connection to one broker that Metadata or FindCoordinator named."""
    return Connection(node.host, node.port, timeout=timeout, client_id=client_id, security=security)


def brokers(conn: Connection) -> list[Node]:
    """Every broker of the cluster (Metadata asking for no topic), by node id."""
    answer = conn.call(
        METADATA,
        topics=(),
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    return sorted(
        (Node(int(b.node_id), b.host, int(b.port)) for b in answer.brokers),
        key=lambda n: n.node_id,
    )
