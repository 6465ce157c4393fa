"""Kafka's ``ssl.cipher.suites`` on an ``ssl.SSLContext``: exactly the listed suites are negotiated.

Kafka takes the JSSE names of the suites, which are their standard (IANA) names —
``TLS_AES_128_GCM_SHA256`` (TLS 1.3), ``TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384`` (TLS 1.2);
unset or empty, every suite the TLS library enables by default. A client that offers none of
the listed suites fails the handshake. A name the library does not know, or does not allow,
is an error naming it (a JVM's broker stops with "Unsupported CipherSuite"): never a name
quietly dropped.

OpenSSL keeps the suites of TLS 1.2 and of TLS 1.3 in two lists. The TLS 1.2 ones go through
``SSLContext.set_ciphers`` under their OpenSSL names (``OPENSSL_cipher_name`` translates the
standard name). The ``ssl`` module has no call for the TLS 1.3 list, so
``SSL_CTX_set_ciphersuites`` is called through ``ctypes`` on the context's ``SSL_CTX``: the
function is looked up through the ``_ssl`` extension module itself (the OpenSSL the ``ssl``
module uses, whether linked in or shared), and the pointer, read from the context object, is
checked before use — its options must read back as ``SSLContext.options`` says — else the
key is refused with that reason. A list naming the suites of one version only turns the other
version off; one that names no suite of a version ``ssl.enabled.protocols`` allows is an error.

>>> import ssl
>>> both = [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3]
>>> context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
>>> restrict(context, ["TLS_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"], both)
>>> [cipher["name"] for cipher in context.get_ciphers()]
['TLS_AES_128_GCM_SHA256', 'ECDHE-ECDSA-AES128-GCM-SHA256']
>>> restrict(context, ["TLS_AES_256_GCM_SHA384"], both)
>>> context.minimum_version.name, context.get_ciphers()[0]["name"]
('TLSv1_3', 'TLS_AES_256_GCM_SHA384')
>>> restrict(context, ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"], [ssl.TLSVersion.TLSv1_3])
Traceback (most recent call last):
...
sluice.cipher_suites.CipherSuiteError: names only TLSv1.2 suites, ...TLSv1.3
"""

from __future__ import annotations

import ctypes
import functools
import ssl
from collections.abc import Sequence
from typing import Final

__all__ = ["TLS13_SUITES", "CipherSuiteError", "openssl_names", "parse", "restrict"]

TLS13_SUITES: Final = (
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_128_CCM_SHA256",
    "TLS_AES_128_CCM_8_SHA256",
)
"""TLS 1.3's suites (RFC 8446, B.4); every other name is a TLS 1.2 (or older) suite."""

_VERSION_NAMES: Final = {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}


class CipherSuiteError(ValueError):
    """The suites cannot be set; the message says why (the caller names the key)."""


def parse(value: str | None) -> list[str]:
    """The names of a ``ssl.cipher.suites`` value (comma-separated; blank: none, i.e. all).

    >>> parse(" TLS_AES_128_GCM_SHA256 ,TLS_AES_256_GCM_SHA384"), parse(None)
    (['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384'], [])
    """
    return [name.strip() for name in (value or "").split(",") if name.strip()]


def openssl_names(names: Sequence[str]) -> list[str]:
    """OpenSSL's names of TLS 1.2 suites given by their standard names (for a client whose
    ``ssl.cipher.suites`` is an OpenSSL cipher string: librdkafka's). Raises
    :class:`CipherSuiteError` for a TLS 1.3 suite (OpenSSL keeps those apart) or an unknown name.

    >>> openssl_names(["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_128_GCM_SHA256"])
    ['ECDHE-RSA-AES128-GCM-SHA256', 'AES128-GCM-SHA256']
    """
    tls13 = [name for name in names if name in TLS13_SUITES]
    if tls13:
        raise CipherSuiteError(f"{', '.join(tls13)}: TLS 1.3 suites, not in OpenSSL's cipher list")
    translated = [(name, _openssl_name(name)) for name in names]
    unknown = [name for name, openssl in translated if openssl is None]
    if unknown:
        raise CipherSuiteError(f"unknown cipher suite {', '.join(unknown)}")
    return [openssl for _, openssl in translated if openssl is not None]


def restrict(
    context: ssl.SSLContext, names: Sequence[str], enabled: Sequence[ssl.TLSVersion]
) -> None:
    """Let ``context`` negotiate only the suites ``names`` (standard names), within the TLS
    versions ``enabled``; nothing is changed for an empty list. Raises
    :class:`CipherSuiteError` for an unknown or unavailable name, or when no enabled version
    is left with a suite."""
    if not names:
        return
    tls13 = [name for name in names if name in TLS13_SUITES]
    standard = [name for name in names if name not in TLS13_SUITES]
    tls12 = openssl_names(standard)
    named = {ssl.TLSVersion.TLSv1_3} if tls13 else set()
    if tls12:
        named.add(ssl.TLSVersion.TLSv1_2)
    usable = sorted(named.intersection(enabled))
    if not usable:
        raise CipherSuiteError(
            f"names only {' and '.join(_VERSION_NAMES[v] for v in sorted(named))} suites, "
            f"and ssl.enabled.protocols allows {' and '.join(_VERSION_NAMES[v] for v in enabled)}"
        )
    context.minimum_version, context.maximum_version = usable[0], usable[-1]
    if tls12:
        try:
            context.set_ciphers(":".join(tls12))
        except ssl.SSLError:
            raise CipherSuiteError(
                f"none of {', '.join(standard)} is allowed by this OpenSSL"
            ) from None
        allowed = {cipher["name"] for cipher in context.get_ciphers()}
        refused = [
            name for name, openssl in zip(standard, tls12, strict=True) if openssl not in allowed
        ]
        if refused:
            raise CipherSuiteError(f"{', '.join(refused)} not allowed by this OpenSSL")
    _set_tls13_suites(context, ":".join(tls13))


def _openssl_name(standard: str) -> str | None:
    """OpenSSL's name of a suite's standard name (None: unknown to this OpenSSL)."""
    found = _library().OPENSSL_cipher_name(standard.encode("ascii", "replace"))
    return None if found in (None, b"(NONE)") else found.decode()


def _set_tls13_suites(context: ssl.SSLContext, suites: str) -> None:
    """``SSL_CTX_set_ciphersuites`` on ``context`` (an empty string: no TLS 1.3 suite)."""
    library = _library()
    # PySSLContext begins with PyObject_HEAD, then its SSL_CTX pointer (CPython's _ssl.c)
    pointer = ctypes.c_void_p.from_address(id(context) + object.__basicsize__).value
    if not pointer or library.SSL_CTX_get_options(pointer) != context.options:
        raise CipherSuiteError("cannot reach the OpenSSL context of this Python's ssl module")
    if library.SSL_CTX_set_ciphersuites(pointer, suites.encode("ascii")) != 1:
        raise CipherSuiteError(f"OpenSSL refused the TLS 1.3 suites {suites}")


@functools.cache
def _library() -> ctypes.CDLL:
    """OpenSSL's functions as the ``ssl`` module's ``_ssl`` extension resolves them."""
    import _ssl

    try:
        library = ctypes.CDLL(_ssl.__file__)
        for name in ("OPENSSL_cipher_name", "SSL_CTX_get_options", "SSL_CTX_set_ciphersuites"):
            getattr(library, name)
    except (OSError, AttributeError) as error:  # an ssl module built without them in reach
        raise CipherSuiteError(
            f"this Python's ssl module does not expose OpenSSL's suite functions: {error}"
        ) from None
    library.OPENSSL_cipher_name.argtypes = [ctypes.c_char_p]
    library.OPENSSL_cipher_name.restype = ctypes.c_char_p
    library.SSL_CTX_get_options.argtypes = [ctypes.c_void_p]
    library.SSL_CTX_get_options.restype = ctypes.c_uint64
    library.SSL_CTX_set_ciphersuites.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    library.SSL_CTX_set_ciphersuites.restype = ctypes.c_int
    return library
