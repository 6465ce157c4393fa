"""One registry instance, assembled and run: what ``sluice schema-registry start`` starts.

The order is Confluent's: read the ``_schemas`` topic to its end
(:class:`~sluice.schema_registry.kafka_store.KafkaLog`), join the election group
(:class:`~sluice.schema_registry.election.Election`), then listen
(:mod:`sluice.http_server`); stopping goes the other way, so that leaving the group
hands the leadership over at once.

With :class:`~sluice.http_security.HttpSecurity` the API is served on HTTPS and/or asks for
HTTP basic authentication (Confluent's ``listeners=https://…``, ``ssl.*``,
``authentication.method=BASIC``); the advertised URL is then ``https://``, and writes forwarded
to the leader carry the client's credentials and trust the instance's own certificate chain
(instances of one registry share their certificate, or one CA).
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sluice.http_security import HttpSecurity, require_basic_auth, uvicorn_tls
from sluice.http_server import HttpServer, bind, serve, url_of
from sluice.schema_registry.api import create_app
from sluice.schema_registry.election import DEFAULT_GROUP, Election
from sluice.schema_registry.kafka_store import DEFAULT_TOPIC, KafkaLog
from sluice.schema_registry.registry import SchemaRegistry

__all__ = ["REALM", "RegistrySettings", "RunningRegistry", "start"]

log = logging.getLogger("sluice.schema_registry")

REALM = "SchemaRegistry"
"""Confluent's default ``authentication.realm``: the JAAS section of the registry's users."""


@dataclass(frozen=True)
class RegistrySettings:
    """Where to listen, which cluster and topic, how to be found (Confluent's names in
    brackets): ``listen`` ``(host, port)`` [``listeners``], ``bootstrap``
    [``kafkastore.bootstrap.servers``], ``advertised_url`` (default ``http://host:port``, the
    URL other instances forward to) [``host.name``], ``group_id``
    [``schema.registry.group.id``], ``topic`` [``kafkastore.topic``], ``client_config``:
    librdkafka settings of every Kafka client (security), ``security``: the API's HTTPS and
    basic authentication [``listeners=https://``, ``ssl.*``, ``authentication.*``]."""

    listen: tuple[str, int]
    bootstrap: str
    advertised_url: str | None = None
    group_id: str = DEFAULT_GROUP
    topic: str = DEFAULT_TOPIC
    client_config: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float = 30.0
    security: HttpSecurity = field(default_factory=lambda: HttpSecurity(realm=REALM))


class RunningRegistry:
    """A started instance: its URL, and :meth:`stop`."""

    def __init__(self, log_: KafkaLog, election: Election, server: HttpServer) -> None:
        self.log = log_
        self.election = election
        self.server = server

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        """Stop listening, leave the group, close the topic's clients."""
        try:
            self.server.stop()
        finally:
            try:
                self.election.close()
            finally:
                self.log.close()


def _advertised(sock: socket.socket, scheme: str) -> str:
    """The URL other instances reach this one at: the bound address, or this host's name when
    bound to every interface (Confluent's ``host.name`` default)."""
    host, port = sock.getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        return f"{scheme}://{socket.getfqdn()}:{port}"
    return f"{scheme}://{url_of(sock).removeprefix('http://')}"


def _forwarding_context(security: HttpSecurity) -> ssl.SSLContext | None:
    """How a follower reaches an ``https://`` leader: trusting the instance's own certificate
    chain (and its client-certificate CAs), showing its certificate when asked for one."""
    tls = security.tls
    if tls is None:
        return None
    context = ssl.create_default_context(cafile=str(tls.keystore))
    if tls.truststore is not None:
        context.load_verify_locations(cafile=str(tls.truststore))
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    if tls.client_auth != ssl.CERT_NONE:
        context.load_cert_chain(str(tls.keystore), password=tls.key_password)
    return context


def start(settings: RegistrySettings) -> RunningRegistry:
    """Start one instance; raises StoreStartError (the topic) or OSError (the address)."""
    kafka_log = KafkaLog(
        settings.bootstrap,
        settings.topic,
        client_config=settings.client_config,
        timeout_s=settings.timeout_s,
    )
    try:
        kafka_log.start()
        sock = bind(*settings.listen)
    except BaseException:
        kafka_log.close()
        raise
    url = settings.advertised_url or _advertised(sock, settings.security.scheme)
    election = Election(
        settings.bootstrap,
        url,
        topic=settings.topic,
        group_id=settings.group_id,
        client_config=settings.client_config,
    )
    try:
        election.start()
        if election.wait_for_leader(settings.timeout_s) is None:
            log.warning("no leader elected in group %s within %g s; writes wait for one",
                        settings.group_id, settings.timeout_s)  # fmt: skip
        security = settings.security
        app = create_app(SchemaRegistry(kafka_log), election, _forwarding_context(security))
        if security.basic_auth is not None:
            require_basic_auth(app, security.basic_auth, security.realm, "schema registry")
        server = serve(
            app,
            sock,
            what="the schema registry's API",
            thread_name="schema-registry-http",
            **uvicorn_tls(security.tls),
        )
    except BaseException:
        sock.close()
        election.close()
        kafka_log.close()
        raise
    log.info("schema registry %s started (topic %s, group %s)", url, settings.topic,
             settings.group_id)  # fmt: skip
    return RunningRegistry(kafka_log, election, server)
