"""The schema registry and the REST proxy of ``sluice up`` (``schema_registry:``,
``rest_proxy:``): two children (``sluice schema-registry start``, ``sluice rest-proxy start``)
started, restarted when their command line changes, or stopped when the file drops them — the
registry first, with the schemas of ``topics:`` registered once it answers, then the proxy,
which uses it — and the registry's URL (and, secured, a login) handed to the brokers, the proxy,
and every process and Streams app. On a secured deployment both are served on HTTPS with basic
authentication (:mod:`sluice.up.schema_services_security`).

The supervisor (:mod:`sluice.up.supervisor`) holds one :class:`SchemaServices` and lends it its
children and its way of placing a child and of waiting until one listens.

>>> from sluice.up.spec import SchemaRegistrySpec
>>> services = SchemaServices(Path("home"), print, {}, place=print, wait=print)
>>> registry = Deployment(Path("sluice.yaml"), schema_registry=SchemaRegistrySpec())
>>> services.url(registry), services.url(Deployment(Path("sluice.yaml")))
('http://127.0.0.1:8081', None)
>>> services.environment(registry)
{'SLUICE_SCHEMA_REGISTRY_URL': 'http://127.0.0.1:8081'}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from sluice.schemas.registry_client import ENV_REGISTRY_CONFIG
from sluice.up.children import Child, Launch, sluice_command
from sluice.up.errors import UpError
from sluice.up.exits import log_tail
from sluice.up.schema_services_security import (
    admin_access,
    broker_registry_config,
    registry_client_file,
    registry_url,
    service_options,
)
from sluice.up.schemas import SchemaRegistrationError, register_schemas
from sluice.up.security import private_file
from sluice.up.spec import BrokerSpec, Deployment

__all__ = ["REST_PROXY", "SCHEMA_REGISTRY", "SCHEMA_REGISTRY_URL", "Place", "SchemaServices"]

SCHEMA_REGISTRY_URL = "SLUICE_SCHEMA_REGISTRY_URL"
"""With ``schema_registry:``, the environment variable that gives every process and Streams app
the registry's URL."""
SCHEMA_REGISTRY = "schema-registry"
"""The schema registry's child name (and kind)."""
REST_PROXY = "rest-proxy"
"""The REST proxy's child name (and kind)."""
_REGISTRY_KEY = "confluent.schema.registry.url"

Place = Callable[[str, str, Launch | None], None]
"""Makes child ``name`` (of ``kind``) run a launch (None: not at all), restarting it if the
launch differs: the supervisor's way for every child."""


class SchemaServices:
    """The schema registry and the REST proxy of a deployment, with its state under ``home``;
    ``children`` are the supervisor's (by name), ``place`` starts, restarts or stops one of
    them, ``wait`` returns once the named one listens (raising :class:`UpError` when it
    exits or does not answer)."""

    def __init__(
        self,
        home: Path,
        report: Callable[[str], None],
        children: Mapping[str, Child],
        *,
        place: Place,
        wait: Callable[[str], None],
    ) -> None:
        self.home = home
        self._report = report
        self._children = children
        self._place = place
        self._wait = wait

    def url(self, deployment: Deployment) -> str | None:
        """The registry's URL (``https://`` when secured with TLS); None without one."""
        registry = deployment.schema_registry
        return None if registry is None else registry_url(registry, deployment.security)

    def broker(self, deployment: Deployment) -> BrokerSpec:
        """The deployment's broker, given the keys to reach a secured registry as the admin
        (unless its ``config:`` sets ``confluent.schema.registry.url`` itself)."""
        broker, security = deployment.broker, deployment.security
        if (
            self.url(deployment) is not None
            and security is not None
            and _REGISTRY_KEY not in dict(broker.config)
        ):
            broker = replace(broker, config=(*broker.config, *broker_registry_config(security)))
        return broker

    def environment(self, deployment: Deployment) -> dict[str, str]:
        """What a process or Streams app is given to reach the registry: its URL and, secured,
        the file of its login (``streams_user``'s, else the admin's; owner-only)."""
        registry = deployment.schema_registry
        if registry is None:
            return {}
        environment = {SCHEMA_REGISTRY_URL: registry_url(registry, deployment.security)}
        secured = deployment.security
        if secured is not None:  # the registry login, owner-only
            login = secured.streams_user or secured.admin_user
            access = registry_client_file(secured, self.home, login)
            environment[ENV_REGISTRY_CONFIG] = str(access)
        return environment

    def apply(self, deployment: Deployment) -> None:
        """The schema registry, then the REST proxy (which uses it), each answering HTTP before
        what needs it starts; as the admin on a secured deployment."""
        bootstrap, security = deployment.broker.bootstrap, deployment.security
        client: list[str] = []
        secured: list[str] = []  # HTTPS and basic authentication of both services
        if security is not None:  # the admin's client properties, owner-only
            properties = private_file(
                self.home / f"client-{security.admin_user}.properties",
                security.client(security.admin_user).items(),
                escape=True,
            )
            client = ["--command-config", str(properties)]
            if deployment.schema_registry is not None or deployment.rest_proxy is not None:
                secured = service_options(security, self.home)
        registry, proxy = deployment.schema_registry, deployment.rest_proxy
        url = self.url(deployment)
        launch = None
        if registry is not None:
            command = [*sluice_command(), "schema-registry", "start", "--listen",
                       registry.listen, "--group-id", registry.group, "--topic", registry.topic,
                       "--bootstrap-server", bootstrap, *client, *secured]  # fmt: skip
            launch = Launch(tuple(command), stop_timeout=30.0)
        self._place(SCHEMA_REGISTRY, SCHEMA_REGISTRY, launch)
        if registry is not None and url is not None:
            self._wait(SCHEMA_REGISTRY)
            headers, context = admin_access(security, url)
            try:
                register_schemas(
                    url, deployment.topics, self._report, headers=headers, context=context
                )
            except SchemaRegistrationError as error:
                log = "" if error.refused else f"\n{log_tail(self._children[SCHEMA_REGISTRY].log)}"
                raise UpError(f"{error}{log}") from None
        launch = None
        if proxy is not None:
            command = [*sluice_command(), "rest-proxy", "start", "--listen", proxy.listen,
                       "--bootstrap-server", bootstrap, *client]  # fmt: skip
            command += secured
            if url is not None:
                command += ["--schema-registry", url]
                if security is not None:
                    access = registry_client_file(security, self.home, security.admin_user)
                    command += ["--schema-registry-config", str(access)]
            launch = Launch(tuple(command), stop_timeout=30.0)
        self._place(REST_PROXY, REST_PROXY, launch)
        if proxy is not None:
            self._wait(REST_PROXY)
