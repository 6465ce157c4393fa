"""Kafka client properties files (Java clients' keys) as librdkafka's configuration.

Kafka's tools take ``--command-config FILE``: a Java ``.properties`` file of client settings
written for the Java client. Sluice's clients are librdkafka's (confluent-kafka), whose keys
differ where the JVM shows through. :func:`load_client_properties` reads such a file and
translates it:

==========================================  ===================================================
Java client key                             librdkafka
==========================================  ===================================================
``sasl.jaas.config`` (PLAIN, SCRAM)         ``sasl.username``, ``sasl.password``
``sasl.jaas.config`` (OAUTHBEARER)          unsecured: ``enable.sasl.oauthbearer.unsecure.jwt``,
                                            ``sasl.oauthbearer.config``; ``clientId``/
                                            ``clientSecret``: ``sasl.oauthbearer.method=oidc``,
                                            ``sasl.oauthbearer.client.id``/``.client.secret``
``ssl.truststore.location`` (PEM)           ``ssl.ca.location``
``ssl.truststore.certificates``             ``ssl.ca.pem``
``ssl.keystore.location`` (PEM: key+chain)  ``ssl.certificate.location`` + ``ssl.key.location``
``ssl.keystore.key``                        ``ssl.key.pem``
``ssl.keystore.certificate.chain``          ``ssl.certificate.pem``
``ssl.endpoint.identification.algorithm``   the same; empty means ``none``
``ssl.cipher.suites`` (standard names)      OpenSSL's names (``TLS_ECDHE_RSA_WITH_AES_128_``
                                            ``GCM_SHA256``: ``ECDHE-RSA-AES128-GCM-SHA256``);
                                            TLS 1.3 suites refused (librdkafka sets only the
                                            TLS 1.2 list); a value of OpenSSL's names is kept
``ssl.truststore.type``, ``ssl.keystore.``  checked (``PEM`` only: JKS and PKCS12 are the
``type``                                    JVM's and refused), then dropped
==========================================  ===================================================

Every other key is librdkafka's own and passes through unchanged (librdkafka refuses the ones it
does not know, naming them); a few Java-only keys with no librdkafka meaning are refused here.
Every error names the file, the line and the key (:class:`~sluice.errors.ConfigError`).
The file is parsed by ``javaproperties`` (``java.util.Properties``' rules: ``=``, ``:`` or white
space between key and value, ``#``/``!`` comments, backslash escapes and continuations).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import javaproperties

from sluice import cipher_suites
from sluice.errors import ConfigError

__all__ = ["ClientProperties", "load_client_properties", "parse_jaas", "read_entries", "translate"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_STANDARD_SUITE = re.compile(r"\s*(TLS|SSL)_")  # Java's names; OpenSSL's look like ECDHE-RSA-…

JAVA_ONLY = {
    "ssl.protocol": "librdkafka negotiates the highest TLS version both sides support",
    "ssl.enabled.protocols": "librdkafka negotiates the highest TLS version both sides support",
    "ssl.keymanager.algorithm": "a JVM setting",
    "ssl.trustmanager.algorithm": "a JVM setting",
    "ssl.provider": "a JVM setting",
    "ssl.secure.random.implementation": "a JVM setting",
    "ssl.engine.factory.class": "a Java class",
    "sasl.login.class": "a Java class",
    "sasl.login.callback.handler.class": "a Java class",
    "sasl.client.callback.handler.class": "a Java class",
}
"""Java client keys that librdkafka has no equivalent for, and why."""

_PEM_ONLY = "only PEM files are supported (librdkafka reads no JKS or PKCS12 store)"


@dataclass
class ClientProperties:
    """librdkafka properties translated from a file, and where each came from."""

    config: dict[str, str] = field(default_factory=dict)
    origins: dict[str, tuple[int, str]] = field(default_factory=dict)
    """librdkafka key → (line, Java key) in the file."""

    def pairs(self) -> list[str]:
        """``KEY=VALUE`` strings, as ``-X`` takes them."""
        return [f"{key}={value}" for key, value in self.config.items()]


def read_entries(text: str) -> Iterator[tuple[int, str, str]]:
    r"""``(line, key, value)`` of each property in a ``.properties`` text, the line being where
    the property starts (a later duplicate key wins, as in Java, when put in a dict).

    >>> list(read_entries("# comment\na = 1\nb: two \\\n   words\nc\\=d 3\n"))
    [(2, 'a', '1'), (3, 'b', 'two words'), (5, 'c=d', '3')]
    """
    line = 1
    for element in javaproperties.parse(text):
        if isinstance(element, javaproperties.KeyValue):
            yield line, element.key, element.value
        line += len(_LINE_BREAK.findall(element.source))


@dataclass(frozen=True)
class JaasModule:
    """One login module of a ``sasl.jaas.config``: its class, flag and options."""

    login_module: str
    flag: str
    options: dict[str, str]


_JAAS_TOKEN = re.compile(
    r"""\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<punct>[=;])|(?P<word>[^\s=;"]+))""", re.DOTALL
)
_FLAGS = ("required", "requisite", "sufficient", "optional")


def _jaas_tokens(text: str) -> Iterator[tuple[str, str]]:
    position = 0
    while position < len(text):
        if not text[position:].strip():
            return
        found = _JAAS_TOKEN.match(text, position)
        if found is None:
            # only an unclosed quote gets here; what follows it is not shown (a password?)
            start = position + len(text[position:]) - len(text[position:].lstrip())
            raise ValueError(f"the quote at character {start + 1} is never closed")
        position = found.end()
        if found["quoted"] is not None:
            yield "value", re.sub(r"\\(.)", r"\1", found["quoted"][1:-1], flags=re.DOTALL)
        elif found["punct"] is not None:
            yield found["punct"], found["punct"]
        else:
            yield "value", found["word"]


def parse_jaas(text: str) -> JaasModule:
    """A client's ``sasl.jaas.config``: exactly one ``LoginModule flag key=value… ;``, as
    Kafka's ``JaasConfig`` reads it (values quoted with ``"`` or bare words).

    >>> parse_jaas('org.apache.kafka.common.security.scram.ScramLoginModule required '
    ...            'username="alice" password="a \\\\"b\\\\" c";').options
    {'username': 'alice', 'password': 'a "b" c'}
    """
    tokens = list(_jaas_tokens(text))
    if len(tokens) < 3 or tokens[-1][0] != ";" or tokens[0][0] != "value":
        raise ValueError('expected `LoginModule required key="value" … ;`')
    if any(kind == ";" for kind, _ in tokens[:-1]):
        raise ValueError("a client takes exactly one login module")
    login_module, (kind, flag) = tokens[0][1], tokens[1]
    if kind != "value" or flag.lower() not in _FLAGS:
        raise ValueError(f"expected a flag ({', '.join(_FLAGS)}) after {login_module}")
    options: dict[str, str] = {}
    rest = tokens[2:-1]
    if len(rest) % 3:
        raise ValueError("expected key=value options")
    for i in range(0, len(rest), 3):
        (k_kind, key), (eq, _), (v_kind, value) = rest[i : i + 3]
        if k_kind != "value" or eq != "=" or v_kind != "value":
            raise ValueError("expected key=value options")
        options[key] = value
    return JaasModule(login_module, flag.lower(), options)


def _jaas_config(module: JaasModule) -> dict[str, str]:
    """The librdkafka properties of a login module, or ValueError saying what is missing."""
    name = module.login_module.rsplit(".", 1)[-1]
    options = module.options
    if name in ("ScramLoginModule", "PlainLoginModule"):
        missing = [o for o in ("username", "password") if o not in options]
        if missing:
            raise ValueError(f"{name} needs {' and '.join(missing)}")
        return {"sasl.username": options["username"], "sasl.password": options["password"]}
    if name == "OAuthBearerLoginModule":
        if "clientId" in options:
            config = {
                "sasl.oauthbearer.method": "oidc",
                "sasl.oauthbearer.client.id": options["clientId"],
                "sasl.oauthbearer.client.secret": options.get("clientSecret", ""),
            }
            if "scope" in options:
                config["sasl.oauthbearer.scope"] = options["scope"]
            return config
        if "unsecuredLoginStringClaim_sub" in options:
            parts = [f"principal={options['unsecuredLoginStringClaim_sub']}"]
            scopes = options.get("unsecuredLoginListClaim_scope", "")
            if scopes:  # Java's list claim: its first character is the delimiter
                listed = [s for s in scopes[1:].split(scopes[0]) if s]
                parts.append(f"scope={','.join(listed)}")
            if "unsecuredLoginLifetimeSeconds" in options:
                parts.append(f"lifeSeconds={options['unsecuredLoginLifetimeSeconds']}")
            return {"enable.sasl.oauthbearer.unsecure.jwt": "true",
                    "sasl.oauthbearer.config": " ".join(parts)}  # fmt: skip
        raise ValueError(
            "OAuthBearerLoginModule needs clientId/clientSecret (OIDC) or "
            "unsecuredLoginStringClaim_sub (unsecured tokens, for development)"
        )
    raise ValueError(
        f"{module.login_module} is not supported (PlainLoginModule, ScramLoginModule, "
        "OAuthBearerLoginModule are)"
    )


def _is_pem(path: Path) -> bool:
    with path.open("rb") as file:
        return b"-----BEGIN " in file.read(64 * 1024)


class _Translator:
    def __init__(self, entries: dict[str, tuple[int, str]], source: str) -> None:
        self.entries = entries
        self.source = source
        self.out = ClientProperties()

    def error(self, key: str, message: str) -> ConfigError:
        line = self.entries[key][0] if key in self.entries else None
        return ConfigError(message, key=key, source=self.source, line=line)

    def put(self, key: str, value: str, java_key: str) -> None:
        self.out.config[key] = value
        self.out.origins[key] = (self.entries[java_key][0], java_key)

    def check_type(self, type_key: str, location_key: str) -> None:
        """``ssl.*store.type`` is PEM; a store file without that type is PEM by its content."""
        if type_key in self.entries:
            kind = self.entries[type_key][1].strip().upper()
            if kind != "PEM":
                raise self.error(type_key, f"{kind or 'an empty type'}: {_PEM_ONLY}")
            return
        if location_key in self.entries:
            location = Path(self.entries[location_key][1])
            try:
                pem = _is_pem(location)
            except OSError as exc:
                raise self.error(location_key, f"cannot read {location}: {exc.strerror}") from None
            if not pem:
                raise self.error(
                    location_key,
                    f"{location} is not PEM (a JKS or PKCS12 store?): {_PEM_ONLY}; convert it "
                    "with keytool/openssl, or set ssl.ca.location etc. to PEM files",
                )

    def run(self) -> ClientProperties:
        for key, (_, value) in self.entries.items():
            if key in JAVA_ONLY:
                raise self.error(
                    key,
                    f"a Java client setting librdkafka has no equivalent for ({JAVA_ONLY[key]}); "
                    "remove it",
                )
            if key == "sasl.jaas.config":
                try:
                    config = _jaas_config(parse_jaas(value))
                except ValueError as exc:
                    raise self.error(key, str(exc)) from None
                for name, translated in config.items():
                    self.put(name, translated, key)
            elif key in ("ssl.truststore.type", "ssl.keystore.type"):
                pass  # checked below
            elif key == "ssl.truststore.location":
                self.check_type("ssl.truststore.type", key)
                self.put("ssl.ca.location", value, key)
            elif key == "ssl.truststore.certificates":
                self.put("ssl.ca.pem", value, key)
            elif key == "ssl.keystore.location":
                self.check_type("ssl.keystore.type", key)
                self.put("ssl.certificate.location", value, key)
                self.put("ssl.key.location", value, key)
            elif key == "ssl.keystore.key":
                self.put("ssl.key.pem", value, key)
            elif key == "ssl.keystore.certificate.chain":
                self.put("ssl.certificate.pem", value, key)
            elif key in ("ssl.truststore.password", "ssl.keystore.password"):
                raise self.error(
                    key,
                    "PEM files take no store password (Kafka refuses it too); "
                    "an encrypted key's password is ssl.key.password",
                )
            elif key == "ssl.endpoint.identification.algorithm":
                self.put(key, value.strip() or "none", key)
            elif key == "ssl.cipher.suites" and _STANDARD_SUITE.match(value):
                try:
                    names = cipher_suites.openssl_names(cipher_suites.parse(value))
                except cipher_suites.CipherSuiteError as exc:
                    raise self.error(
                        key, f"{exc} (librdkafka limits the TLS 1.2 suites only: name those)"
                    ) from None
                self.put(key, ":".join(names), key)
            else:
                self.put(key, value, key)
        for type_key in ("ssl.truststore.type", "ssl.keystore.type"):
            self.check_type(type_key, "")
        return self.out


def translate(entries: Iterable[tuple[int, str, str]], source: str) -> ClientProperties:
    """The librdkafka properties for Java client ``(line, key, value)`` entries of ``source``
    (the file's name, for errors); a later entry of a key replaces an earlier one."""
    latest = {key: (line, value) for line, key, value in entries}
    return _Translator(latest, source).run()


def load_client_properties(path: Path) -> ClientProperties:
    """Read and translate a client properties file (``--command-config``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", source=str(path)) from None
    except UnicodeDecodeError:
        raise ConfigError("not a text file (UTF-8)", source=str(path)) from None
    return translate(read_entries(text), str(path))
