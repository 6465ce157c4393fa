"""The broker keys of security: listeners' security protocols, SASL and TLS (in the order
listings show), and the per-listener keys ``listener.name.<listener>.<key>`` (:func:`listener_key`).

Kafka's per-listener keys are a pattern, not a list: ``listener.name.<l>.sasl.enabled.mechanisms``
overrides ``sasl.enabled.mechanisms`` on listener ``<l>`` (its name in lower case), and a
mechanism's JAAS configuration is only per listener,
``listener.name.<l>.<mechanism in lower case>.sasl.jaas.config``. :func:`listener_key` gives the
:class:`ConfigKey` of such a name (None: not a per-listener key Sluice implements).

>>> listener_key("listener.name.sasl_plaintext.plain.sasl.jaas.config").type.name
'PASSWORD'
>>> listener_key("listener.name.client.sasl.enabled.mechanisms").parse("PLAIN,SCRAM-SHA-256")
['PLAIN', 'SCRAM-SHA-256']
>>> listener_key("listener.name.client.ssl.keystore.location").name
'listener.name.client.ssl.keystore.location'
>>> listener_key("listener.name.client.ssl.cipher.suites").type.name
'LIST'
>>> listener_key("listener.name.client.ssl.engine.factory.class") is None
True
"""

from __future__ import annotations

import re
from typing import Any, Final

from sluice.broker.config_keys.key import ConfigKey, ConfigType
from sluice.broker.config_keys.validators import at_least

__all__ = [
    "AUTHORIZER_CLASS_NAMES",
    "DEFAULT_PROTOCOL_MAP",
    "DYNAMIC_LISTENER_SSL_KEYS",
    "SASL_MECHANISMS",
    "SECURITY_BROKER_KEYS",
    "SECURITY_PROTOCOLS",
    "SSL_KEYS",
    "dynamic_listener_key",
    "listener_key",
    "super_users",
]

SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
"""Kafka's security protocols (``SecurityProtocol``)."""
DEFAULT_PROTOCOL_MAP: Final = [f"{p}:{p}" for p in SECURITY_PROTOCOLS]
"""Kafka's default ``listener.security.protocol.map``: each protocol is a listener name too."""
SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
"""The SASL mechanisms Sluice implements (Kafka's, without GSSAPI)."""
_LOGIN_HANDLERS: Final = (
    "OAuthBearerLoginCallbackHandler",
    "OAuthBearerUnsecuredLoginCallbackHandler",
)


def _protocol_map(value: Any) -> str | None:
    for entry in value:
        name, sep, protocol = str(entry).partition(":")
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            return "must be a list of LISTENER_NAME:PROTOCOL with PROTOCOL one of " + ", ".join(
                SECURITY_PROTOCOLS
            )
    return None


def _mechanisms(value: Any) -> str | None:
    if not value:
        return "must name at least one mechanism"
    unknown = [m for m in value if m not in SASL_MECHANISMS]
    if unknown:
        return (
            f"{', '.join(unknown)} not supported (Sluice implements "
            f"{', '.join(SASL_MECHANISMS)}; GSSAPI/Kerberos is not implemented)"
        )
    return None


AUTHORIZER_CLASS_NAMES: Final = (
    "kafka.security.authorizer.AclAuthorizer",
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "sluice.broker.security.authorizer.Authorizer",
)
"""The ``authorizer.class.name`` values that turn Sluice's authorizer on (Kafka's two)."""


def _authorizer(value: Any) -> str | None:
    if not value or value in AUTHORIZER_CLASS_NAMES:
        return None
    return "must be empty (no authorization) or one of " + ", ".join(AUTHORIZER_CLASS_NAMES)


def super_users(value: str | None) -> list[str]:
    """The principals of a ``super.users`` value (``;``-separated, Kafka's).

    >>> super_users("User:admin; User:broker")
    ['User:admin', 'User:broker']
    """
    return [p.strip() for p in (value or "").split(";") if p.strip()]


def _super_users(value: Any) -> str | None:
    wrong = [p for p in super_users(value) if not p.partition(":")[2]]
    return f"{', '.join(wrong)}: each principal must be TYPE:NAME (User:alice)" if wrong else None


def _inter_broker_protocol(value: Any) -> str | None:
    known = ", ".join(SECURITY_PROTOCOLS)
    return None if value in SECURITY_PROTOCOLS else f"must be one of {known}"


SECURITY_BROKER_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "authorizer.class.name",
        ConfigType.STRING,
        "",
        "The authorizer that checks every request against the ACLs: empty for none (everyone "
        "may do everything); Kafka's kafka.security.authorizer.AclAuthorizer and "
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer both mean Sluice's.",
        check=_authorizer,
    ),
    ConfigKey(
        "super.users",
        ConfigType.STRING,
        "",
        "Principals allowed every operation whatever the ACLs, ';'-separated "
        "(User:admin;User:broker). With PLAINTEXT inter-broker listeners, brokers are "
        "User:ANONYMOUS.",
        check=_super_users,
    ),
    ConfigKey(
        "allow.everyone.if.no.acl.found",
        ConfigType.BOOLEAN,
        False,
        "With an authorizer: whether a resource no ACL names is open to everyone.",
    ),
    ConfigKey(
        "listener.security.protocol.map",
        ConfigType.LIST,
        DEFAULT_PROTOCOL_MAP,
        "The security protocol of each listener name (LISTENER_NAME:PROTOCOL,...).",
        check=_protocol_map,
    ),
    ConfigKey(
        "sasl.enabled.mechanisms",
        ConfigType.LIST,
        ["PLAIN"],
        "SASL mechanisms of the SASL listeners (override per listener with "
        "listener.name.<l>.sasl.enabled.mechanisms). Kafka's default is GSSAPI, which Sluice "
        "does not implement: Sluice's is PLAIN.",
        check=_mechanisms,
    ),
    ConfigKey(
        "connection.failed.authentication.delay.ms",
        ConfigType.INT,
        100,
        "How long a connection whose authentication failed is kept before it is closed (its "
        "SASL_AUTHENTICATION_FAILED answer is sent at once).",
        check=at_least(0),
    ),
    ConfigKey(
        "connections.max.reauth.ms",
        ConfigType.LONG,
        0,
        "Longest session of a SASL connection before it must re-authenticate (KIP-368; 0: "
        "sessions last as long as their credential, for ever for passwords). Per mechanism "
        "with listener.name.<l>.<mechanism>.connections.max.reauth.ms.",
        check=at_least(0),
    ),
    ConfigKey(
        "inter.broker.listener.name",
        ConfigType.STRING,
        None,
        "The listener brokers connect to each other on (replication, transaction markers); "
        "not with security.inter.broker.protocol.",
    ),
    ConfigKey(
        "security.inter.broker.protocol",
        ConfigType.STRING,
        "PLAINTEXT",
        "The security protocol between brokers: the listener named after it is used; not with "
        "inter.broker.listener.name.",
        check=_inter_broker_protocol,
    ),
    ConfigKey(
        "sasl.mechanism.inter.broker.protocol",
        ConfigType.STRING,
        "PLAIN",
        "The SASL mechanism brokers log in to each other with (PLAIN, SCRAM-SHA-256, "
        "SCRAM-SHA-512: the username/password of the inter-broker listener's "
        "listener.name.<l>.<mechanism>.sasl.jaas.config; OAUTHBEARER: a token from the "
        "endpoint or an unsecured one, as that JAAS configuration says). Kafka's default is "
        "GSSAPI, which Sluice does not implement: Sluice's is PLAIN.",
    ),
    ConfigKey(
        "sasl.oauthbearer.jwks.endpoint.url",
        ConfigType.STRING,
        None,
        "OAUTHBEARER tokens are checked against the keys of this JWKS (https:// URL, or "
        "file://) with KIP-768's validator; unset: the unsecured validator (development only).",
    ),
    ConfigKey(
        "sasl.oauthbearer.expected.audience",
        ConfigType.LIST,
        None,
        "With a JWKS: the audiences a token must name one of (unset: not checked).",
    ),
    ConfigKey(
        "sasl.oauthbearer.expected.issuer",
        ConfigType.STRING,
        None,
        "With a JWKS: the issuer a token must name (unset: not checked).",
    ),
    ConfigKey(
        "sasl.oauthbearer.token.endpoint.url",
        ConfigType.STRING,
        None,
        "The broker's own OAUTHBEARER login (inter-broker): the OAuth token endpoint it asks "
        "for a token with the client credentials grant (clientId, clientSecret, scope of its "
        "JAAS configuration; KIP-768). Unset: an unsecured token for "
        "unsecuredLoginStringClaim_sub (development only).",
    ),
    ConfigKey(
        "sasl.login.callback.handler.class",
        ConfigType.STRING,
        None,
        "How the broker logs in with OAUTHBEARER: Kafka's "
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler (the token "
        "endpoint) or its unsecured handler; unset: the endpoint when "
        "sasl.oauthbearer.token.endpoint.url is set, else the unsecured one.",
        check=lambda v: (
            None
            if v is None or str(v).rsplit(".", 1)[-1] in _LOGIN_HANDLERS
            else f"must be one of Kafka's OAUTHBEARER login handlers ({', '.join(_LOGIN_HANDLERS)})"
        ),
    ),
    ConfigKey(
        "sasl.oauthbearer.sub.claim.name",
        ConfigType.STRING,
        "sub",
        "With a JWKS: the claim that names the principal.",
    ),
    ConfigKey(
        "sasl.oauthbearer.clock.skew.seconds",
        ConfigType.INT,
        30,
        "With a JWKS: the clock difference allowed when checking exp and iat.",
        check=at_least(0),
    ),
)

SSL_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "ssl.keystore.type",
        ConfigType.STRING,
        "PEM",
        "Format of the keystore: PEM only (JKS and PKCS12 are the JVM's).",
    ),
    ConfigKey(
        "ssl.keystore.location",
        ConfigType.STRING,
        None,
        "PEM file with the broker's private key and certificate chain (TLS listeners).",
    ),
    ConfigKey(
        "ssl.keystore.key",
        ConfigType.PASSWORD,
        None,
        "The broker's private key, PEM text (instead of ssl.keystore.location).",
    ),
    ConfigKey(
        "ssl.keystore.certificate.chain",
        ConfigType.PASSWORD,
        None,
        "The broker's certificate chain, PEM text (with ssl.keystore.key).",
    ),
    ConfigKey("ssl.key.password", ConfigType.PASSWORD, None, "Password of an encrypted key."),
    ConfigKey(
        "ssl.truststore.location",
        ConfigType.STRING,
        None,
        "PEM bundle of the CAs that sign client certificates (ssl.client.auth).",
    ),
    ConfigKey(
        "ssl.truststore.certificates",
        ConfigType.PASSWORD,
        None,
        "The trusted CAs, PEM text (instead of ssl.truststore.location).",
    ),
    ConfigKey(
        "ssl.client.auth",
        ConfigType.STRING,
        "none",
        "Client certificates: none, requested (checked when shown) or required.",
        check=lambda v: (
            None
            if str(v).lower() in ("none", "requested", "required")
            else "must be one of none, requested, required"
        ),
    ),
    ConfigKey(
        "ssl.enabled.protocols",
        ConfigType.LIST,
        ["TLSv1.2", "TLSv1.3"],
        "TLS versions accepted.",
        check=lambda v: (
            None
            if v and all(p in ("TLSv1.2", "TLSv1.3") for p in v)
            else "must be TLSv1.2 and/or TLSv1.3"
        ),
    ),
    ConfigKey(
        "ssl.cipher.suites",
        ConfigType.LIST,
        None,
        "The cipher suites negotiated, by their standard names (TLS_AES_128_GCM_SHA256, "
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, ...); unset: the TLS library's defaults.",
    ),
    ConfigKey(
        "ssl.endpoint.identification.algorithm",
        ConfigType.STRING,
        "https",
        "https: a broker connecting to another checks the host name in its certificate; "
        "empty: it does not (the chain is still verified).",
        check=lambda v: (
            None if str(v).strip().lower() in ("https", "") else "must be https or empty"
        ),
    ),
    ConfigKey(
        "ssl.principal.mapping.rules",
        ConfigType.STRING,
        "DEFAULT",
        "How the subject of a client certificate becomes its principal "
        "(RULE:pattern/replacement/[LU], ..., DEFAULT).",
    ),
)
"""The keys of a TLS listener (:mod:`sluice.broker.security.tls` reads them), each also
per listener as ``listener.name.<l>.<key>``."""

SECURITY_BROKER_KEYS = SECURITY_BROKER_KEYS + SSL_KEYS

_LISTENER_KEY: Final = re.compile(
    r"^listener\.name\.(?P<listener>[A-Za-z0-9_]+)\."
    r"(?:(?P<mechanism>plain|scram-sha-256|scram-sha-512|oauthbearer)\.)?(?P<key>.+)$"
)
_JAAS = ConfigKey(
    "sasl.jaas.config",
    ConfigType.PASSWORD,
    None,
    "The JAAS configuration of a mechanism on a listener: PLAIN's users as "
    'user_<name>="<password>" options; OAUTHBEARER\'s unsecured validator options.',
)
_BY_NAME = {k.name: k for k in SECURITY_BROKER_KEYS}
_PER_MECHANISM = {
    "sasl.jaas.config": _JAAS,
    "connections.max.reauth.ms": _BY_NAME["connections.max.reauth.ms"],
    "sasl.login.callback.handler.class": _BY_NAME["sasl.login.callback.handler.class"],
} | {name: key for name, key in _BY_NAME.items() if name.startswith("sasl.oauthbearer.")}


DYNAMIC_LISTENER_SSL_KEYS: Final = frozenset(
    {
        "ssl.keystore.location",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.key.password",
    }
)
"""A listener's keystore keys that AlterConfigs may change on a running broker, per broker and
per listener only (``listener.name.<l>.<key>``), as Kafka's reconfigurable SSL keys: the next
connections get the new certificate (:mod:`sluice.broker.security.keystores`)."""


def dynamic_listener_key(name: str) -> ConfigKey | None:
    """The key of ``name`` if it is one of a listener's dynamic keystore keys, else None.

    >>> dynamic_listener_key("listener.name.ssl.ssl.keystore.location").name
    'listener.name.ssl.ssl.keystore.location'
    >>> dynamic_listener_key("ssl.keystore.location"), dynamic_listener_key(
    ...     "listener.name.ssl.ssl.truststore.location")
    (None, None)
    """
    match = _LISTENER_KEY.match(name)
    if match is None or match["mechanism"] or match["key"] not in DYNAMIC_LISTENER_SSL_KEYS:
        return None
    return listener_key(name)


def listener_key(name: str) -> ConfigKey | None:
    """The key of per-listener name ``name``, or None (see the module docstring): the
    listener's ``sasl.enabled.mechanisms``, a mechanism's ``sasl.jaas.config``, and
    OAUTHBEARER's JWKS keys (``listener.name.<l>.oauthbearer.sasl.oauthbearer.…``)."""
    match = _LISTENER_KEY.match(name)
    if match is None:
        return None
    key, mechanism = match["key"], match["mechanism"]
    if mechanism is None:
        per_listener = key == "sasl.enabled.mechanisms" or key.startswith("ssl.")
        found = _BY_NAME.get(key) if per_listener else None
    elif key in ("sasl.jaas.config", "connections.max.reauth.ms") or (
        mechanism == "oauthbearer" and key in _PER_MECHANISM
    ):
        found = _PER_MECHANISM[key]
    else:
        found = None
    if found is None:
        return None
    return ConfigKey(name, found.type, found.default, found.doc, check=found.check)
