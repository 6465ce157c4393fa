"""TLS for a listener: the server's ``ssl.SSLContext`` from Kafka's ``ssl.*`` keys, and the
principal of a client that showed a certificate (``ssl.principal.mapping.rules``).

Keys read (Kafka's names and meanings; PEM only — the JKS and PKCS12 keystores of the JVM are
refused with a message saying so):

- the broker's key and certificate chain: ``ssl.keystore.location`` (one PEM file holding
  both) or ``ssl.keystore.key`` with ``ssl.keystore.certificate.chain`` (the PEM text itself),
  ``ssl.key.password`` when the key is encrypted;
- the CAs it trusts for client certificates: ``ssl.truststore.location`` (a PEM bundle) or
  ``ssl.truststore.certificates`` (the PEM text);
- ``ssl.client.auth``: ``none`` (default), ``requested`` (a certificate is checked when shown)
  or ``required``;
- ``ssl.enabled.protocols``: a subset of ``TLSv1.2,TLSv1.3`` (the default);
- ``ssl.cipher.suites``: the suites negotiated, by their standard names (unset: the TLS
  library's defaults; :mod:`sluice.cipher_suites`);
- ``ssl.endpoint.identification.algorithm``: ``https`` (default) or empty, whether a broker
  connecting to another checks the host name in its certificate (a server has no use for it).

A client's principal is ``User:`` and its certificate's subject as Java's
``X500Principal.getName()`` writes it (RFC 2253: most specific first, ``CN=writeuser,OU=…``),
passed through the mapping rules (:class:`PrincipalMapper`: ``DEFAULT`` keeps the name,
``RULE:pattern/replacement/[LU]`` rewrites a name the pattern matches whole, ``$1`` for its
groups, then lower- or upper-cases it; the first rule that applies wins). Without a certificate
the principal is ``User:ANONYMOUS``.

>>> PrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT").name(
...     "CN=Writer,OU=ServiceUsers,O=Acme")
'writer'
>>> PrincipalMapper("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, DEFAULT").name("CN=x,O=Acme")
'CN=x,O=Acme'
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from cryptography import x509

from sluice import cipher_suites

__all__ = [
    "ANONYMOUS",
    "PrincipalMapper",
    "TlsConfigError",
    "client_context",
    "load_keystore",
    "peer_principal",
    "server_context",
]

ANONYMOUS: Final = "User:ANONYMOUS"

_RULE: Final = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER: Final = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")
_PARSER: Final = re.compile(_RULE)
_DIGITS: Final = re.compile(r"\d+")
_PROTOCOLS: Final = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH: Final = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


class TlsConfigError(ValueError):
    """A listener's ``ssl.*`` keys cannot make a context; the message names the key."""


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        mapped = self.pattern.sub(_python_replacement(self.replacement, self.pattern.groups), name)
        return (
            mapped.lower() if self.case == "L" else mapped.upper() if self.case == "U" else mapped
        )


def _python_replacement(java: str, groups: int) -> str:
    """Java's replacement text as ``re.sub``'s: ``\\x`` is a literal x, ``$n`` group n — read
    greedily while n is a group (``$12`` with one group is group 1 then "2"), literal when not
    even its first digit is one (as Kafka keeps it)."""
    out: list[str] = []
    i = 0
    while i < len(java):
        char = java[i]
        if char == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            i += 2
            continue
        digits = _DIGITS.match(java, i + 1) if char == "$" else None
        if digits is not None:
            number = digits.group(0)
            while int(number) > groups and len(number) > 1:
                number = number[:-1]
            if int(number) <= groups:
                out.append(f"\\g<{int(number)}>")
                i += 1 + len(number)
                continue
        out.append(char.replace("\\", "\\\\"))
        i += 1
    return "".join(out)


class PrincipalMapper:
    """Kafka's ``ssl.principal.mapping.rules`` (see the module docstring); ValueError for a
    rule that does not parse."""

    def __init__(self, rules: str | None = "DEFAULT") -> None:
        self.rules = []
        for text in (m.group(1) for m in _SPLITTER.finditer((rules or "DEFAULT").strip())):
            if not text:
                continue
            parsed = _PARSER.match(text)
            if parsed is None or parsed.end() != len(text) or parsed.group(5):
                raise ValueError(f"ssl.principal.mapping.rules: invalid rule {text!r}")
            if parsed.group(1):
                self.rules.append(_Rule(None))
            else:
                try:
                    pattern = re.compile(parsed.group(2))
                except re.error as error:
                    raise ValueError(
                        f"ssl.principal.mapping.rules: {parsed.group(2)!r}: {error}"
                    ) from None
                self.rules.append(_Rule(pattern, parsed.group(3), parsed.group(4)))

    def name(self, distinguished_name: str) -> str:
        """The principal name of ``distinguished_name``; ValueError when no rule applies."""
        for rule in self.rules:
            mapped = rule.apply(distinguished_name)
            if mapped is not None:
                return mapped
        raise ValueError(f"No rules apply to {distinguished_name}")


def peer_principal(
    ssl_object: ssl.SSLObject | ssl.SSLSocket | None, mapper: PrincipalMapper
) -> str:
    """The principal of the client on ``ssl_object``: ``User:<mapped subject>``, or
    :data:`ANONYMOUS` without a certificate."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    subject = x509.load_der_x509_certificate(der).subject.rfc4514_string()
    return f"User:{mapper.name(subject)}"


def server_context(keys: Mapping[str, str | None]) -> ssl.SSLContext:
    """A listener's server context from its ``ssl.*`` keys (see the module docstring)."""
    store_type = (keys.get("ssl.keystore.type") or "PEM").upper()
    if store_type != "PEM":
        raise TlsConfigError(
            f"ssl.keystore.type: {store_type} keystores are the JVM's; Sluice reads PEM "
            "(ssl.keystore.type=PEM)"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    load_keystore(context, keys)
    auth = (keys.get("ssl.client.auth") or "none").lower()
    if auth not in _CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth: none, requested or required, not {auth!r}")
    context.verify_mode = _CLIENT_AUTH[auth]
    _load_truststore(context, keys, needed=auth != "none")
    _limit(context, keys)
    return context


def client_context(keys: Mapping[str, str | None]) -> ssl.SSLContext:
    """A broker's client context towards another broker's TLS listener, from the same keys:
    the other broker's certificate is verified against ``ssl.truststore.*`` (else the system's
    CAs) and, unless ``ssl.endpoint.identification.algorithm`` is empty (Kafka's default:
    ``https``), its host name; ``ssl.keystore.*``, when set, is presented to a broker that asks
    for a client certificate."""
    if keys.get("ssl.truststore.location") or keys.get("ssl.truststore.certificates"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, host name included
        _load_truststore(context, keys, needed=True)
    else:
        context = ssl.create_default_context()
    if keys.get("ssl.keystore.location") or keys.get("ssl.keystore.key"):
        load_keystore(context, keys)
    algorithm = keys.get("ssl.endpoint.identification.algorithm")
    algorithm = "https" if algorithm is None else algorithm.strip()
    if algorithm.lower() not in ("https", ""):
        raise TlsConfigError(
            f"ssl.endpoint.identification.algorithm: https (check the host name) or empty "
            f"(do not), not {algorithm!r}"
        )
    if not algorithm:  # the certificate chain is still verified
        context.check_hostname = False
    _limit(context, keys)
    return context


def _limit(context: ssl.SSLContext, keys: Mapping[str, str | None]) -> None:
    """The versions (``ssl.enabled.protocols``) and suites (``ssl.cipher.suites``) allowed."""
    wanted = [
        p.strip() for p in (keys.get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
    ]
    unknown = [p for p in wanted if p not in _PROTOCOLS]
    if unknown or not wanted:
        raise TlsConfigError(f"ssl.enabled.protocols: {unknown or wanted} (TLSv1.2, TLSv1.3)")
    versions = sorted(_PROTOCOLS[p] for p in wanted)
    context.minimum_version, context.maximum_version = versions[0], versions[-1]
    try:
        cipher_suites.restrict(
            context, cipher_suites.parse(keys.get("ssl.cipher.suites")), versions
        )
    except cipher_suites.CipherSuiteError as error:
        raise TlsConfigError(f"ssl.cipher.suites: {error}") from None


def load_keystore(context: ssl.SSLContext, keys: Mapping[str, str | None]) -> None:
    """Load the key and certificate chain ``ssl.keystore.*`` name into ``context`` (again: the
    handshakes that follow present the new one); :class:`TlsConfigError` names what failed."""
    location, key, chain = (
        keys.get("ssl.keystore.location"),
        keys.get("ssl.keystore.key"),
        keys.get("ssl.keystore.certificate.chain"),
    )
    password = keys.get("ssl.key.password") or None
    try:
        if location:
            context.load_cert_chain(location, password=password)
        elif key and chain:
            # the ssl module loads keys from files only: a private file, gone once read
            with tempfile.NamedTemporaryFile("w", suffix=".pem", delete=True) as pem:
                os.chmod(pem.name, 0o600)
                pem.write(key.strip() + "\n" + chain.strip() + "\n")
                pem.flush()
                context.load_cert_chain(pem.name, password=password)
        else:
            raise TlsConfigError(
                "ssl.keystore.location (or ssl.keystore.key with "
                "ssl.keystore.certificate.chain) is needed for a TLS listener"
            )
    except (OSError, ssl.SSLError) as error:
        where = location or "ssl.keystore.key/ssl.keystore.certificate.chain"
        raise TlsConfigError(f"ssl.keystore: cannot load {where}: {error}") from None


def _load_truststore(
    context: ssl.SSLContext, keys: Mapping[str, str | None], *, needed: bool
) -> None:
    location, inline = keys.get("ssl.truststore.location"), keys.get("ssl.truststore.certificates")
    try:
        if location:
            context.load_verify_locations(cafile=location)
        elif inline:
            context.load_verify_locations(cadata=inline)
        elif needed:
            raise TlsConfigError(
                "ssl.client.auth checks client certificates: ssl.truststore.location "
                "(or ssl.truststore.certificates) must name the CAs that sign them"
            )
    except (OSError, ssl.SSLError) as error:
        raise TlsConfigError(
            f"ssl.truststore: cannot load {location or 'certificates'}: {error}"
        ) from None
