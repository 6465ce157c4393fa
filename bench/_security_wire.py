"""The wire side of ``security.py``'s handshake and idle-connection figures: a blocking kio
connection (TLS or not), a SCRAM login over it, and the handshake loop of one client thread."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

USER, PASSWORD = "bench", "bench-secret"
MECHANISM = "SCRAM-SHA-512"
AUTH_THREADS = 4


class Frames:
    """One blocking connection speaking kio frames (TLS when ``context`` is given)."""

    def __init__(self, port: int, context: ssl.SSLContext | None) -> None:
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock = context.wrap_socket(sock, server_hostname="127.0.0.1") if context else sock
        self.correlation = 0

    def call(self, request: Any) -> Any:
        from sluice.wire import decode_response, encode_request

        self.correlation += 1
        self.sock.sendall(encode_request(request, correlation_id=self.correlation, client_id="b"))
        size = struct.unpack(">i", self._exactly(4))[0]
        _, response = decode_response(request.__api_key__, request.__version__, self._exactly(size))
        return response

    def _exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


class Scram:
    """The client side of SCRAM-SHA-512 (RFC 5802), the salted password derived once per salt:
    the client's PBKDF2 would otherwise cost more than the broker's whole exchange."""

    def __init__(self, user: str, password: str) -> None:
        self.user, self.password = user, password.encode()
        self._salted: dict[tuple[bytes, int], bytes] = {}

    def authenticate(self, frames: Frames) -> None:
        from kio.schema.errors import ErrorCode
        from kio.schema.sasl_authenticate.v2 import request as authenticate
        from kio.schema.sasl_handshake.v1 import request as handshake

        answer = frames.call(handshake.SaslHandshakeRequest(mechanism=MECHANISM))
        if answer.error_code != ErrorCode.none:
            raise RuntimeError(f"SaslHandshake: {answer.error_code}")
        nonce = base64.b64encode(secrets.token_bytes(18)).decode()
        first_bare = f"n={self.user},r={nonce}"
        answer = frames.call(
            authenticate.SaslAuthenticateRequest(auth_bytes=f"n,,{first_bare}".encode())
        )
        if answer.error_code != ErrorCode.none:
            raise RuntimeError(f"SaslAuthenticate: {answer.error_message}")
        server_first = answer.auth_bytes.decode()
        fields = dict(part.split("=", 1) for part in server_first.split(","))
        salt, iterations = base64.b64decode(fields["s"]), int(fields["i"])
        salted = self._salted.get((salt, iterations))
        if salted is None:
            salted = hashlib.pbkdf2_hmac("sha512", self.password, salt, iterations)
            self._salted[salt, iterations] = salted
        client_key = hmac.digest(salted, b"Client Key", "sha512")
        without_proof = f"c=biws,r={fields['r']}"
        message = f"{first_bare},{server_first},{without_proof}".encode()
        signature = hmac.digest(hashlib.sha512(client_key).digest(), message, "sha512")
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
        answer = frames.call(authenticate.SaslAuthenticateRequest(auth_bytes=final))
        if answer.error_code != ErrorCode.none:
            raise RuntimeError(f"SaslAuthenticate: {answer.error_message}")
        server_key = hmac.digest(salted, b"Server Key", "sha512")
        expected = base64.b64encode(hmac.digest(server_key, message, "sha512")).decode()
        if answer.auth_bytes.decode() != f"v={expected}":
            raise RuntimeError("the broker's server signature does not verify")


def tls_context(ca: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca)
    return context


def api_versions(frames: Frames) -> None:
    from kio.schema.api_versions.v3 import request as api_versions

    frames.call(
        api_versions.ApiVersionsRequest(client_software_name="b", client_software_version="1")
    )


def handshake_run(port: int, tls_ca: str | None, sasl: bool, seconds: float) -> tuple[int, float]:
    """New connections per second for ``seconds`` from ``AUTH_THREADS`` threads: each connects
    (TLS when ``tls_ca``), then authenticates with SCRAM (``sasl``) or asks ApiVersions, and
    closes. Returns (connections, seconds)."""
    context = tls_context(tls_ca) if tls_ca else None
    counts = [0] * AUTH_THREADS
    failures: list[str] = []
    stop = time.monotonic() + seconds

    def loop(slot: int) -> None:
        scram = Scram(USER, PASSWORD)
        while time.monotonic() < stop and not failures:
            try:
                frames = Frames(port, context)
                try:
                    api_versions(frames)  # what every client asks first
                    if sasl:
                        scram.authenticate(frames)
                finally:
                    frames.close()
            except (OSError, RuntimeError) as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
                return
            counts[slot] += 1

    # one untimed round first: imports and the salted password are not part of the figure
    warm = Frames(port, context)
    api_versions(warm)
    if sasl:
        Scram(USER, PASSWORD).authenticate(warm)
    warm.close()
    started = time.perf_counter()
    stop = time.monotonic() + seconds
    threads = [threading.Thread(target=loop, args=(i,)) for i in range(AUTH_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise RuntimeError(failures[0])
    return sum(counts), time.perf_counter() - started


HANDSHAKES = {
    "connect + ApiVersions, PLAINTEXT (reference)": ("PLAINTEXT", False, False),
    "connect + ApiVersions, SSL (TLS handshake)": ("SSL", True, False),
    "connect + ApiVersions + SCRAM-SHA-512, SASL_PLAINTEXT": ("SASL_PLAINTEXT", False, True),
    "connect + ApiVersions + SCRAM-SHA-512, SASL_SSL": ("SASL_SSL", True, True),
}


@dataclass(frozen=True)
class Handshakes:
    per_second: float
    broker_ms: float  # broker CPU milliseconds per connection
    runs: list[float]
