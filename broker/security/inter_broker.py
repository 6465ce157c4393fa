"""How a broker talks to the other brokers of its cluster: the inter-broker listener and the
client side of its security (Kafka's ``inter.broker.listener.name``,
``security.inter.broker.protocol``, ``sasl.mechanism.inter.broker.protocol`` and the broker's own
credentials in ``listener.name.<l>.<mechanism>.sasl.jaas.config``).

Kafka's rules, checked at start (a :class:`~sluice.errors.ConfigError` names the key):

- ``inter.broker.listener.name`` names a listener; ``security.inter.broker.protocol`` names a
  protocol whose listener of the same name is used. Both set is an error; neither set means
  ``security.inter.broker.protocol=PLAINTEXT`` (Kafka's default), so a cluster member without
  a listener named PLAINTEXT must set one of them.
- That listener must be among ``listeners`` (every listener is advertised in the broker's
  registration, so also among the advertised endpoints).
- On a SASL listener, ``sasl.mechanism.inter.broker.protocol`` (Sluice's default PLAIN; Kafka's,
  GSSAPI, is not implemented) must be enabled on the listener, and the JAAS configuration of
  that mechanism on the listener must give ``username`` and ``password``: the broker logs in
  to the other brokers as that user (for PLAIN the same file lists the users it accepts as
  ``user_<name>``, as in Kafka). With OAUTHBEARER it gives the broker's token instead
  (:mod:`.oauth_login`): ``clientId``/``clientSecret`` (and ``scope``) for the token endpoint
  ``sasl.oauthbearer.token.endpoint.url``, or ``unsecuredLoginStringClaim_sub`` for Kafka's
  unsecured development token; ``sasl.login.callback.handler.class`` may name Kafka's handler
  of either.
- On a TLS listener the broker verifies the other broker's certificate against the listener's
  ``ssl.truststore.*`` (else the system's CAs) and its advertised host name, and presents its
  own ``ssl.keystore.*`` when the other broker asks for a client certificate.

>>> from sluice.broker.config import BrokerConfig
>>> from sluice.broker.security.listeners import parse_listeners
>>> config = BrokerConfig.from_properties({
...     "listeners": "CLIENT://127.0.0.1:9092,BROKER://127.0.0.1:9093",
...     "listener.security.protocol.map": "CLIENT:PLAINTEXT,BROKER:SASL_PLAINTEXT",
...     "inter.broker.listener.name": "BROKER",
...     "listener.name.broker.plain.sasl.jaas.config":
...         'PlainLoginModule required username="broker" password="s3" user_broker="s3";'})
>>> security = inter_broker_security(config, parse_listeners(config))
>>> security.listener, security.protocol, security.mechanism, security.username
('BROKER', 'SASL_PLAINTEXT', 'PLAIN', 'broker')
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field

import scramp

from sluice.broker.config import BrokerConfig, render
from sluice.broker.security.credentials import SCRAM_MECHANISMS, jaas_options
from sluice.broker.security.listeners import Listener
from sluice.broker.security.oauth_login import ClientCredentialsLogin, TokenLogin, UnsecuredLogin
from sluice.broker.security.tls import TlsConfigError, client_context
from sluice.errors import ConfigError

__all__ = [
    "INTER_BROKER_KEYS",
    "InterBrokerSecurity",
    "SaslClient",
    "inter_broker_security",
]

INTER_BROKER_KEYS = frozenset(
    {
        "inter.broker.listener.name",
        "security.inter.broker.protocol",
        "sasl.mechanism.inter.broker.protocol",
    }
)
"""The keys of this module: checked at start in a cluster, and on one node when one is set
(a single broker has no other broker to connect to; nothing else uses them there)."""

CLIENT_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
"""The mechanisms a broker can log in to another broker with."""


@dataclass(frozen=True)
class InterBrokerSecurity:
    """The listener a broker connects to the others on, and how it secures the connection."""

    listener: str
    """The listener name (its endpoint in each broker's registration is the one connected to)."""
    protocol: str
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    """TLS client context (SSL and SASL_SSL), else None."""
    mechanism: str | None = None
    """SASL mechanism (SASL_PLAINTEXT and SASL_SSL), else None."""
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    login: TokenLogin | None = None
    """Where the broker's OAUTHBEARER token comes from (OAUTHBEARER), else None."""

    def sasl_client(self, bearer: str | None = None) -> SaslClient:
        """A new client side of one SASL exchange with the broker's own credentials (with
        OAUTHBEARER, ``bearer``: a token from :attr:`login`, fetched off the event loop)."""
        assert self.mechanism is not None
        if self.mechanism == "OAUTHBEARER":
            assert bearer is not None
            return SaslClient(self.mechanism, "", "", bearer=bearer)
        assert self.username is not None
        return SaslClient(self.mechanism, self.username, self.password or "")


PLAINTEXT = InterBrokerSecurity("PLAINTEXT", "PLAINTEXT")
"""No security: what brokers used before listeners (and what in-process tests use)."""


def inter_broker_security(
    config: BrokerConfig, listeners: Sequence[Listener]
) -> InterBrokerSecurity:
    """The inter-broker listener of ``config`` and its client security, checked (see the
    module docstring); ConfigError names the key that is wrong."""
    by_name = {listener.name: listener for listener in listeners}
    named = config.values.get("inter.broker.listener.name")
    protocol_set = "security.inter.broker.protocol" in config.explicit
    if named and protocol_set:
        raise ConfigError(
            "only one of inter.broker.listener.name and security.inter.broker.protocol may "
            "be set (Kafka's rule)",
            key="inter.broker.listener.name",
        )
    if named:
        name, key = str(named).upper(), "inter.broker.listener.name"
    else:
        name, key = str(config["security.inter.broker.protocol"]), "security.inter.broker.protocol"
    listener = by_name.get(name)
    if listener is None:
        raise ConfigError(
            f"the inter-broker listener {name} is not among listeners "
            f"({', '.join(by_name) or 'none'}): name one of them",
            key=key,
        )
    context = _client_tls(config, listener) if listener.tls is not None else None
    if listener.sasl is None:
        return InterBrokerSecurity(listener.name, listener.protocol, context)
    mechanism = str(config["sasl.mechanism.inter.broker.protocol"])
    if mechanism not in CLIENT_MECHANISMS:
        raise ConfigError(
            f"{mechanism}: brokers log in to each other with {', '.join(CLIENT_MECHANISMS)}",
            key="sasl.mechanism.inter.broker.protocol",
        )
    if mechanism not in listener.sasl.mechanisms:
        raise ConfigError(
            f"{mechanism} is not enabled on the inter-broker listener {listener.name} "
            f"(enabled: {', '.join(listener.sasl.mechanisms)})",
            key="sasl.mechanism.inter.broker.protocol",
        )
    jaas_key = f"listener.name.{listener.name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = config.values.get(jaas_key)
    options: dict[str, str] = {}
    if text is not None:
        try:
            options = jaas_options(str(render(text)))
        except ValueError as error:
            raise ConfigError(str(error), key=jaas_key) from None
    if mechanism == "OAUTHBEARER":
        login, who = _token_login(config, listener, options, jaas_key)
        return InterBrokerSecurity(
            listener.name, listener.protocol, context, mechanism, who, login=login
        )
    if not options.get("username") or "password" not in options:
        raise ConfigError(
            f"the broker's own credentials on the inter-broker listener {listener.name}: "
            'its JAAS configuration needs username="..." password="..."',
            key=jaas_key,
        )
    return InterBrokerSecurity(
        listener.name,
        listener.protocol,
        context,
        mechanism,
        options["username"],
        options["password"],
    )


_CLIENT_CREDENTIALS_HANDLER = "OAuthBearerLoginCallbackHandler"


def _token_login(
    config: BrokerConfig, listener: Listener, options: dict[str, str], jaas_key: str
) -> tuple[TokenLogin, str]:
    """The broker's OAUTHBEARER login and who it logs in as (for messages), from the JAAS
    options and the listener's (else the broker's) OAUTHBEARER keys."""
    prefix = f"listener.name.{listener.name.lower()}.oauthbearer."

    def key(name: str) -> tuple[str, object]:
        if prefix + name in config.values:
            return prefix + name, config.values[prefix + name]
        return name, config.values.get(name)

    url_key, url = key("sasl.oauthbearer.token.endpoint.url")
    handler_key, handler = key("sasl.login.callback.handler.class")
    endpoint = (
        str(handler).rsplit(".", 1)[-1] == _CLIENT_CREDENTIALS_HANDLER
        if handler
        else url is not None
    )
    if endpoint:
        if url is None:
            raise ConfigError(
                f"{handler} asks the token endpoint: set sasl.oauthbearer.token.endpoint.url",
                key=handler_key,
            )
        if not options.get("clientId") or "clientSecret" not in options:
            raise ConfigError(
                f"the broker's own OAUTHBEARER login on {listener.name} asks {url} for a "
                'token: its JAAS configuration needs clientId="..." clientSecret="..."',
                key=jaas_key,
            )
        if not str(url).startswith(("http://", "https://")):
            raise ConfigError(f"{url}: expected an http:// or https:// URL", key=url_key)
        login = ClientCredentialsLogin(
            str(url), options["clientId"], options["clientSecret"], scope=options.get("scope")
        )
        return login, options["clientId"]
    subject = options.get("unsecuredLoginStringClaim_sub")
    if not subject:
        raise ConfigError(
            f"the broker's own OAUTHBEARER login on {listener.name}: its JAAS configuration "
            'needs unsecuredLoginStringClaim_sub="..." (an unsecured token), or clientId and '
            "clientSecret with sasl.oauthbearer.token.endpoint.url",
            key=jaas_key,
        )
    lifetime = options.get("unsecuredLoginLifetimeSeconds", "3600")
    if not lifetime.isdigit() or int(lifetime) <= 0:
        raise ConfigError(
            f"unsecuredLoginLifetimeSeconds={lifetime}: expected a positive number", key=jaas_key
        )
    listed = options.get("unsecuredLoginListClaim_scope", "")
    # Kafka's list claims: the value's first character is the separator (",read,write")
    scope = tuple(s for s in listed[1:].split(listed[0]) if s) if listed else ()
    return UnsecuredLogin(subject, int(lifetime), scope), subject


def _client_tls(config: BrokerConfig, listener: Listener) -> ssl.SSLContext:
    prefix = f"listener.name.{listener.name.lower()}."
    keys = {
        name: render(config.values.get(prefix + name, config.values.get(name)))
        for name in (
            "ssl.keystore.location",
            "ssl.keystore.key",
            "ssl.keystore.certificate.chain",
            "ssl.key.password",
            "ssl.truststore.location",
            "ssl.truststore.certificates",
            "ssl.enabled.protocols",
            "ssl.cipher.suites",
            "ssl.endpoint.identification.algorithm",
        )
    }
    try:
        return client_context(keys)
    except TlsConfigError as error:
        raise ConfigError(
            f"inter-broker listener {listener.name}: {error}", key="ssl.truststore.location"
        ) from None


class SaslClient:
    """The client side of one SASL exchange: PLAIN or OAUTHBEARER (one message) or SCRAM
    (client-first, client-final, then the server's final message checked). :meth:`first` is
    the first token; :meth:`answer` the reply to each server token (None when the exchange is
    over)."""

    def __init__(
        self, mechanism: str, username: str, password: str, *, bearer: str | None = None
    ) -> None:
        if mechanism not in CLIENT_MECHANISMS:
            raise ValueError(f"no client for SASL mechanism {mechanism}")
        self.mechanism = mechanism
        self._username, self._password, self._bearer = username, password, bearer
        self._scram: scramp.ScramClient | None = None
        self._step = 0

    def first(self) -> bytes:
        """The client's first token."""
        if self.mechanism == "PLAIN":
            return b"\0" + self._username.encode() + b"\0" + self._password.encode()
        if self.mechanism == "OAUTHBEARER":  # RFC 7628 §3.1, Kafka's GS2 header
            return f"n,,\x01auth=Bearer {self._bearer}\x01\x01".encode()
        self._scram = scramp.ScramClient([self.mechanism], self._username, self._password)
        return str(self._scram.get_client_first()).encode()

    def answer(self, token: bytes) -> bytes | None:
        """The reply to the server's ``token``; None when the exchange is complete.
        ValueError when the server's token is not what the mechanism expects (a SCRAM server
        that does not prove it knows the credentials)."""
        if self.mechanism == "OAUTHBEARER" and token:
            # the server's error (RFC 7628 §3.2.2): Sluice's and Kafka's brokers answer it with
            # SASL_AUTHENTICATION_FAILED at once; anything else is not OAUTHBEARER
            raise ValueError(f"OAUTHBEARER: the broker refused the token: {token[:200]!r}")
        if self._scram is None:
            return None
        self._step += 1
        try:
            if self._step == 1:
                self._scram.set_server_first(token.decode())
                return str(self._scram.get_client_final()).encode()
            self._scram.set_server_final(token.decode())
        except (scramp.ScramException, UnicodeDecodeError) as error:
            raise ValueError(f"{self.mechanism}: {error}") from None
        return None
