"""The broker's named listeners and the SASL and TLS configuration of each (Kafka's
``listeners``, ``listener.security.protocol.map``, ``advertised.listeners``,
``sasl.enabled.mechanisms``, ``ssl.*`` and the per-listener ``listener.name.<l>.…`` keys).

``listeners=PLAINTEXT://127.0.0.1:9092,CLIENT://127.0.0.1:9093`` with
``listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:SASL_PLAINTEXT``: the broker listens on
each; a connection knows the listener it came in on, and Metadata, FindCoordinator and
DescribeCluster answer that listener's advertised endpoint (``advertised.listeners``, by name;
else the listener's own address). A listener name missing from the map is a configuration error
naming the key, as in Kafka; a name without ``NAME://`` is PLAINTEXT (Sluice's older form).

A SASL listener's mechanisms are ``listener.name.<l>.sasl.enabled.mechanisms``, else
``sasl.enabled.mechanisms`` (Sluice's default PLAIN: Kafka's, GSSAPI, is not implemented).
PLAIN's users are the ``user_<name>="<password>"`` options of
``listener.name.<l>.plain.sasl.jaas.config`` (required when PLAIN is enabled); SCRAM checks the
broker's stored credentials; OAUTHBEARER validates with Kafka's unsecured validator (options
``unsecuredValidatorPrincipalClaimName``, ``unsecuredValidatorRequiredScope``,
``unsecuredValidatorAllowableClockSkewMs`` of ``listener.name.<l>.oauthbearer.sasl.jaas.config``)
unless ``sasl.oauthbearer.jwks.endpoint.url`` names a JWKS (KIP-768: signature, issuer, audience).

An SSL or SASL_SSL listener's server context comes from the ``ssl.*`` keys, each overridden by
``listener.name.<l>.ssl.…`` (:func:`sluice.broker.security.tls.server_context`: PEM only); with
``ssl.client.auth`` a client certificate's subject is its principal, through
``ssl.principal.mapping.rules``.

A cluster member serves all its listeners too and registers every advertised endpoint; which
one the brokers use among themselves is :mod:`sluice.broker.security.inter_broker`'s matter.

>>> from sluice.broker.config import BrokerConfig
>>> config = BrokerConfig.from_properties({
...     "listeners": "PLAINTEXT://127.0.0.1:9092,SASL_PLAINTEXT://0.0.0.0:9093",
...     "listener.name.sasl_plaintext.plain.sasl.jaas.config":
...         'PlainLoginModule required user_alice="alice-secret";'})
>>> [(lst.name, lst.protocol, lst.advertised[1]) for lst in parse_listeners(config)]
[('PLAINTEXT', 'PLAINTEXT', 9092), ('SASL_PLAINTEXT', 'SASL_PLAINTEXT', 9093)]
>>> parse_listeners(config)[1].sasl.mechanisms
('PLAIN',)
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.broker.config import BrokerConfig, parse_listener, render
from sluice.broker.config_keys.security_keys import SSL_KEYS
from sluice.broker.security.credentials import ScramCredential, jaas_options, plain_users
from sluice.broker.security.sasl import (
    JwksValidator,
    OAuthBearerServer,
    PlainServer,
    SaslServer,
    ScramServer,
    TokenValidator,
    UnsecuredValidator,
)
from sluice.broker.security.tls import (
    PrincipalMapper,
    TlsConfigError,
    peer_principal,
    server_context,
)
from sluice.errors import ConfigError

__all__ = [
    "Listener",
    "ListenerSasl",
    "ListenerTls",
    "listener_tls",
    "parse_listeners",
    "tls_keys",
]


@dataclass(frozen=True)
class ListenerSasl:
    """What a SASL listener authenticates with (see the module docstring)."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict, repr=False)
    validator: TokenValidator | None = None
    failed_delay_ms: int = 100
    """``connection.failed.authentication.delay.ms``."""
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)
    """``connections.max.reauth.ms`` by mechanism (KIP-368; 0 or missing: no limit)."""

    def server(
        self, mechanism: str, scram_lookup: Callable[[str], ScramCredential | None]
    ) -> SaslServer:
        """A new exchange of ``mechanism`` (one of :attr:`mechanisms`)."""
        if mechanism == "PLAIN":
            return PlainServer(self.plain_users)
        if mechanism == "OAUTHBEARER":
            assert self.validator is not None
            return OAuthBearerServer(self.validator)
        return ScramServer(mechanism, scram_lookup)


@dataclass(frozen=True)
class Listener:
    """One named listener: where it listens, what it advertises, its security protocol."""

    name: str
    protocol: str
    host: str
    port: int
    advertised: tuple[str, int]
    sasl: ListenerSasl | None = None
    """None on PLAINTEXT and SSL listeners."""
    tls: ListenerTls | None = None
    """None on PLAINTEXT and SASL_PLAINTEXT listeners."""


@dataclass(frozen=True)
class ListenerTls:
    """A TLS listener's server context and how a client certificate names its principal."""

    context: ssl.SSLContext = field(repr=False)
    mapper: PrincipalMapper = field(repr=False)

    def principal(self, ssl_object: ssl.SSLObject | None) -> str:
        """``User:<mapped subject>`` of the client's certificate, else ``User:ANONYMOUS``."""
        return peer_principal(ssl_object, self.mapper)


def parse_listeners(config: BrokerConfig) -> tuple[Listener, ...]:
    """The listeners of ``config``, checked; ConfigError names the key that is wrong."""
    protocols: dict[str, str] = {}
    for entry in config["listener.security.protocol.map"]:
        name, _, protocol = entry.partition(":")
        protocols[name.upper()] = protocol
    advertised: dict[str, tuple[str, int]] = {}
    for text in config["advertised.listeners"] or ():
        name = _name(text)
        host, port = parse_listener(text)
        advertised[name] = ("127.0.0.1" if host in ("", "0.0.0.0") else host), port
    found: list[Listener] = []
    for text in config["listeners"]:
        name = _name(text)
        host, port = parse_listener(text)
        if any(other.name == name for other in found):
            raise ConfigError(f"listener name {name} appears twice", key="listeners")
        protocol = protocols.get(name)
        if protocol is None:
            raise ConfigError(
                f"listener {name} has no security protocol (add {name}:<PROTOCOL>; the "
                f"protocols are PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)",
                key="listener.security.protocol.map",
            )
        own = ("127.0.0.1" if host in ("", "0.0.0.0") else host), port
        sasl = _sasl(config, name) if protocol.startswith("SASL_") else None
        tls = listener_tls(config, name) if protocol.endswith("SSL") else None
        found.append(Listener(name, protocol, host, port, advertised.get(name, own), sasl, tls))
    unknown = sorted(set(advertised) - {listener.name for listener in found})
    if unknown:
        raise ConfigError(
            f"advertises {', '.join(unknown)}, which is not among listeners",
            key="advertised.listeners",
        )
    return tuple(found)


def _name(text: str) -> str:
    name, sep, _ = text.partition("://")
    return name.strip().upper() if sep else "PLAINTEXT"


def _value(config: BrokerConfig, listener: str, key: str, mechanism: str | None = None) -> Any:
    """A key's value on a listener: ``listener.name.<l>.[<mechanism>.]<key>``, else ``key``."""
    prefix = f"listener.name.{listener.lower()}."
    if mechanism is not None:
        name = f"{prefix}{mechanism.lower()}.{key}"
        if name in config.values:
            return config.values[name]
    if prefix + key in config.values:
        return config.values[prefix + key]
    return config.values.get(key)


def _sasl(config: BrokerConfig, listener: str) -> ListenerSasl:
    mechanisms = tuple(_value(config, listener, "sasl.enabled.mechanisms"))
    users: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        key = f"listener.name.{listener.lower()}.plain.sasl.jaas.config"
        users = plain_users(_jaas(config, key, required=True))
        if not users:
            raise ConfigError(
                'PLAIN is enabled but its JAAS configuration has no user_<name>="<password>"',
                key=key,
            )
    validator = _validator(config, listener) if "OAUTHBEARER" in mechanisms else None
    return ListenerSasl(
        mechanisms,
        users,
        validator,
        int(config["connection.failed.authentication.delay.ms"]),
        {m: int(_value(config, listener, "connections.max.reauth.ms", m)) for m in mechanisms},
    )


_SSL_KEY = re.compile(r"(ssl\.[a-z.]*[a-z])")


def tls_keys(config: BrokerConfig, listener: str) -> dict[str, str | None]:
    """The ``ssl.*`` keys of ``listener`` as text: each ``listener.name.<l>.`` override, else
    the broker's key."""
    prefix = f"listener.name.{listener.lower()}."
    return {
        key.name: render(config.values.get(prefix + key.name, config.values.get(key.name)))
        for key in SSL_KEYS
    }


def listener_tls(config: BrokerConfig, listener: str) -> ListenerTls:
    """A TLS listener's context and principal mapping; ConfigError names the key at fault."""
    prefix = f"listener.name.{listener.lower()}."
    keys = tls_keys(config, listener)
    try:
        context = server_context(keys)
    except TlsConfigError as error:
        named = _SSL_KEY.match(str(error))
        key = named[1] if named else "ssl.keystore.location"
        key = {
            "ssl.keystore": "ssl.keystore.location",
            "ssl.truststore": "ssl.truststore.location",
        }.get(key, key)
        reason = str(error).removeprefix(f"{named[1]}: ") if named else str(error)
        raise ConfigError(
            f"listener {listener}: {reason}", key=_key_on(config, prefix, key)
        ) from None
    try:
        mapper = PrincipalMapper(keys["ssl.principal.mapping.rules"])
    except ValueError as error:
        raise ConfigError(
            str(error).partition(": ")[2] or str(error),
            key=_key_on(config, prefix, "ssl.principal.mapping.rules"),
        ) from None
    return ListenerTls(context, mapper)


def _key_on(config: BrokerConfig, prefix: str, key: str) -> str:
    """The name ``key`` is set under for a listener (its override, else the broker's)."""
    return prefix + key if prefix + key in config.values else key


def _jaas(config: BrokerConfig, key: str, *, required: bool) -> dict[str, str]:
    text = config.values.get(key)
    if text is None:
        if required:
            raise ConfigError("is required: the mechanism is enabled on the listener", key=key)
        return {}
    try:
        return jaas_options(text)
    except ValueError as error:
        raise ConfigError(str(error), key=key) from None


def _validator(config: BrokerConfig, listener: str) -> TokenValidator:
    def value(key: str) -> Any:
        return _value(config, listener, key, "OAUTHBEARER")

    jwks = value("sasl.oauthbearer.jwks.endpoint.url")
    if jwks:
        try:
            return JwksValidator(
                jwks,
                issuer=value("sasl.oauthbearer.expected.issuer"),
                audience=tuple(value("sasl.oauthbearer.expected.audience") or ()),
                principal_claim=value("sasl.oauthbearer.sub.claim.name"),
                clock_skew_s=int(value("sasl.oauthbearer.clock.skew.seconds")),
            )
        except (OSError, ValueError) as error:
            raise ConfigError(
                f"cannot read the JWKS ({error})", key="sasl.oauthbearer.jwks.endpoint.url"
            ) from None
    key = f"listener.name.{listener.lower()}.oauthbearer.sasl.jaas.config"
    options = _jaas(config, key, required=False)
    try:
        skew = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0"))
    except ValueError:
        raise ConfigError(
            "unsecuredValidatorAllowableClockSkewMs must be a number of milliseconds", key=key
        ) from None
    return UnsecuredValidator(
        principal_claim=options.get("unsecuredValidatorPrincipalClaimName", "sub"),
        required_scope=tuple(options.get("unsecuredValidatorRequiredScope", "").split()),
        clock_skew_ms=skew,
    )
