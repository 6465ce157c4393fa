"""The supervisor behind ``sluice up``: makes the machine match a deployment and keeps it so.

:meth:`Supervisor.apply` starts (or, for a re-read file, changes) the parts in order — the
broker, the topics, the schema registry and the REST proxy (a collaborator:
:class:`~sluice.up.schema_services.SchemaServices`), the other processes (a source's input may
come from one), the Connect worker and its connectors, the Streams apps — waiting for each to
be ready before the next.
:meth:`Supervisor.run` then watches the children, starts one that ends again as its restart
policy says (with backoff; a crash loop is shown as such), writes ``<home>/up.json`` every
second (:mod:`sluice.up.state`; ``sluice status`` reads it) and, on SIGINT or SIGTERM, stops
everything in the reverse order. SIGHUP re-reads the file named in ``<home>/up.reload`` (a
second ``sluice up`` writes it) and reconciles: only the parts that changed are restarted —
a cluster's brokers one at a time, each once the last is back in every ISR (a rolling restart,
also on demand: ``sluice up --rolling-restart``; :mod:`sluice.up.brokers`).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from confluent_kafka import KafkaException

from sluice.connect.deploy import DeploymentError
from sluice.connect_rest import (
    ConnectRest,
    RestClientSecurity,
    apply_when_ready,
    write_rest_config,
)
from sluice.errors import ConfigError
from sluice.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, CliError
from sluice.streams.config import ENV_CONFIG
from sluice.up import state as state_file
from sluice.up import zookeeper
from sluice.up.brokers import (
    ZOOKEEPER,
    broker_launches,
    cluster_problem,
    rebalance,
    zookeeper_launch,
)
from sluice.up.children import Child, Launch, sluice_command
from sluice.up.errors import UpError
from sluice.up.exits import log_tail
from sluice.up.loader import load
from sluice.up.schema_services import SchemaServices
from sluice.up.security import apply_security, private_file
from sluice.up.spec import (
    BrokerSpec,
    ConnectSpec,
    Deployment,
    ProgramKind,
    ProgramSpec,
    SecuritySpec,
)
from sluice.up.state import RELOAD_FILE, UpState
from sluice.up.topics import ensure_topics

__all__ = ["CLIENT_PROPERTIES", "CONNECT_CONFIG", "STREAMS_CONFIG", "Supervisor", "UpError"]

STREAMS_CONFIG = ENV_CONFIG
"""The environment variable that carries a Streams app's ``config:`` (a JSON object)."""
CLIENT_PROPERTIES = "SLUICE_CLIENT_PROPERTIES"
"""With ``security:``, the environment variable that gives a process the path of a Kafka client
properties file (``streams_user``'s login; ``sluice.client_properties`` reads it)."""
CONNECT_CONFIG = "SLUICE_CONNECT_CONFIG"
"""With a Connect REST API on HTTPS or with basic authentication, the environment variable
that gives a process the REST client properties (CA, login) to reach it with, as
``sluice connect … --rest-config`` takes them."""
REST_CONFIG_FILE = "connect-rest.properties"
"""Under ``<home>``: those properties (owner-only), also named by ``up.json``."""
_READY_TIMEOUT = 90.0
_REPLICATED_TIMEOUT = 300.0
"""How long a cluster may take to be whole again (a restarted broker catching up)."""
_TIERS = ("streams", "connect", "process", "rest-proxy", "schema-registry", "broker", "zookeeper")
"""The order children are stopped in (they start in the reverse order)."""


class Supervisor:
    """Runs a :class:`Deployment` as child processes; state and logs under ``home``."""

    def __init__(
        self,
        deployment: Deployment,
        home: Path,
        report: Callable[[str], None] = print,
        transform: Callable[[Deployment], Deployment] | None = None,
    ) -> None:
        """``transform`` is applied to the file each time it is read again (``--secure``)."""
        self.deployment = deployment
        self.transform = transform or (lambda deployment: deployment)
        self.home = home.absolute()
        self.report = report
        self.children: dict[str, Child] = {}
        self.generation = 0
        self.last_reload: dict[str, Any] | None = None
        self._stop = False
        self._reload = False
        self._applying = False
        self._seen_events: dict[str, int] = {}
        self.rest_config: Path | None = None
        """The REST client properties of a worker with a secured REST API (else None)."""
        self.schema_services = SchemaServices(
            self.home, report, self.children, place=self._place, wait=self._wait_listening
        )
        """The schema registry and the REST proxy (started and stopped in :meth:`apply`)."""

    @property
    def logs(self) -> Path:
        """Where each child's output goes (``<name>.log``)."""
        return self.home / "logs"

    # -- the main loop --------------------------------------------------------------------
    def run(self, on_tick: Callable[[Supervisor], None] | None = None) -> int:
        """Apply the deployment and supervise until SIGINT/SIGTERM; the exit code."""
        previous = {
            signum: signal.signal(signum, self._on_signal)
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
        }
        self.home.mkdir(parents=True, exist_ok=True)
        self.write_state()  # at once: a second `sluice up` must find this one
        code = 0
        try:
            self.apply(self.deployment)
            self.generation = 1
            self.report("everything is running (Ctrl-C stops it)")
            next_write = 0.0
            while not self._stop:
                now = time.time()
                for child in list(self.children.values()):
                    child.check(now)
                self._print_events()
                if self._reload:
                    self._reload = False
                    self._reload_from_request()
                if now >= next_write:
                    self.write_state()
                    if on_tick is not None:
                        on_tick(self)
                    next_write = now + 1.0
                time.sleep(0.2)
        except (UpError, DeploymentError, CliError, KafkaException) as error:
            self.report(f"error: {_message(error)}")
            code = EXIT_INTERRUPTED if self._stop else EXIT_FAILED
        finally:
            self.stop_all()
            self.write_state(running=False)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return code

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGHUP:
            self._reload = True
        else:
            self._stop = True
            if self._applying:  # waiting for a part to be ready: give up at once
                raise UpError("interrupted")

    # -- reconciling ----------------------------------------------------------------------
    def apply(self, deployment: Deployment, rolling: bool = False) -> None:
        """Make the children, topics and connectors match ``deployment``; ``rolling``: restart
        every broker of a cluster one at a time, changed or not."""
        self._applying = True
        try:
            self._apply(deployment, rolling)
        finally:
            self._applying = False

    def _apply_brokers(
        self,
        broker: BrokerSpec,
        rolling: bool,
        security: SecuritySpec | None = None,
        registry_url: str | None = None,
    ) -> None:
        """Start the brokers (and an embedded ZooKeeper) that are missing, together; restart
        the changed ones one at a time, a cluster's each after the last is back in every ISR
        (a rolling restart: SIGTERM makes each move its leaderships away first); brokers added
        to a running cluster get their share of the replicas when the file asks."""
        try:
            launch = zookeeper_launch(broker, self.home)
        except zookeeper.ZooKeeperMissingError as error:
            raise UpError(str(error)) from None
        self._place(ZOOKEEPER, ZOOKEEPER, launch)
        if ZOOKEEPER in self.children:
            self._wait_zookeeper(broker)
        wanted = broker_launches(broker, self.home, security, registry_url)
        for name, child in list(self.children.items()):
            if child.kind == "broker" and name not in wanted:
                self._retire(name)
        fresh = [name for name in wanted if name not in self.children]
        changed = [
            name
            for name, launch in wanted.items()
            if name not in fresh and (self.children[name].launch != launch or rolling)
        ]
        for name in fresh:
            self._place(name, "broker", wanted[name])
        for name in fresh:
            self._wait_listening(name)
        if not broker.embedded:
            self._wait_listening(None, broker.bootstrap)
        if broker.clustered:
            self._wait_cluster(broker, "the cluster", security)
        for name in changed:
            self.report(f"{name}: restarting (rolling)")
            self._retire(name)
            self._place(name, "broker", wanted[name])
            self._wait_listening(name)
            if broker.clustered:
                self._wait_cluster(broker, name, security)
        if broker.clustered and broker.rebalance_on_add and fresh and len(fresh) < len(wanted):
            self.report(f"{', '.join(fresh)}: added to the cluster: rebalancing")
            properties = None
            if security is not None:  # the admin's client properties, owner-only
                properties = private_file(
                    self.home / f"client-{security.admin_user}.properties",
                    security.client(security.admin_user).items(),
                    escape=True,
                )
            try:
                self.report(rebalance(broker, command_config=properties))
            except RuntimeError as error:
                raise UpError(f"sluice brokers rebalance: {error}") from None

    def _apply(self, deployment: Deployment, rolling: bool = False) -> None:
        services = self.schema_services
        broker = services.broker(deployment)
        security = deployment.security
        self._apply_brokers(broker, rolling, security, services.url(deployment))
        if security is not None:
            apply_security(broker.bootstrap, security, self.report)
        admin = None if security is None else security.admin_client()
        ensure_topics(broker.bootstrap, deployment.topics, self.report, admin)
        services.apply(deployment)
        self._place_programs(deployment, "process")
        connect = deployment.connect
        launch = None
        rest = None
        if connect is not None:
            launch = _connect_launch(connect, broker.bootstrap, security, self.home)
            rest = _rest_client(connect, security)
        self.rest_config = self._write_rest_config(rest)
        self._place("connect", "connect", launch)
        if connect is not None:
            self._apply_connectors(connect, deployment, rest)
        self._place_programs(deployment, "streams")
        self.deployment = deployment
        self._print_events()

    def _place_programs(self, deployment: Deployment, kind: ProgramKind) -> None:
        """Start, restart or stop the instances of the programs of ``kind``."""
        wanted = set()
        for program in deployment.programs:
            if program.kind != kind:
                continue
            for index in range(program.instances):
                name = f"{program.name}-{index}"
                wanted.add(name)
                registry = self.schema_services.environment(deployment)
                launch = _program_launch(
                    program, index, deployment, self.home, self.rest_config, registry
                )
                self._place(name, kind, launch, program)
        for name, child in list(self.children.items()):
            if child.kind == kind and name not in wanted:
                self._retire(name)

    def _place(
        self, name: str, kind: str, launch: Launch | None, program: ProgramSpec | None = None
    ) -> None:
        """Make child ``name`` run ``launch`` (None: not at all), restarting it if it differs."""
        current = self.children.get(name)
        if current is not None and current.launch == launch:
            if program is not None:  # what needs no restart is changed in place
                current.dead_letter_topic = program.dead_letter_topic
                current.set_restart(program.restart)
            return
        if current is not None:
            self._retire(name)
        if launch is None:
            return
        child = Child(
            name,
            kind,
            launch,
            self.logs / f"{name}.log",
            app=None if program is None else program.name,
            application_id=None if program is None else program.application_id,
            restart="always" if program is None else program.restart,
            dead_letter_topic=None if program is None else program.dead_letter_topic,
        )
        self.children[name] = child
        child.start()
        self._print_events(child)
        self.write_state()

    def _retire(self, name: str) -> None:
        child = self.children.pop(name)
        child.stop()
        self._print_events(child)
        self._seen_events.pop(name, None)  # a child of the same name starts over

    def _wait_listening(self, name: str | None, address: str | None = None) -> None:
        """Until child ``name``'s broker (or the broker at ``address``) accepts connections."""
        child = None if name is None else self.children[name]
        if child is not None:
            address = _listen_of(child.launch)
        assert address is not None
        host, _, port = address.split(",")[0].rpartition(":")
        deadline = time.monotonic() + _READY_TIMEOUT
        while time.monotonic() < deadline:
            if child is not None and not child.alive() and child.state == "running":
                raise UpError(f"{child.name} exited at start:\n{log_tail(child.log)}")
            try:
                with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), 1):
                    return
            except OSError:
                time.sleep(0.2)
        raise UpError(f"the broker at {address} did not answer in {_READY_TIMEOUT:.0f} s")

    def _wait_zookeeper(self, broker: BrokerSpec) -> None:
        child = self.children[ZOOKEEPER]
        host, _, port = broker.zookeeper_listen.rpartition(":")
        deadline = time.monotonic() + _READY_TIMEOUT
        while not zookeeper.is_ready(host.strip("[]"), int(port)):
            if not child.alive() and child.state == "running":
                raise UpError(f"ZooKeeper exited at start:\n{log_tail(child.log)}")
            if time.monotonic() > deadline:
                raise UpError(
                    f"ZooKeeper at {broker.zookeeper_listen} did not answer in "
                    f"{_READY_TIMEOUT:.0f} s"
                )
            time.sleep(0.2)

    def _wait_cluster(
        self, broker: BrokerSpec, after: str, security: SecuritySpec | None = None
    ) -> None:
        """Until every broker is registered and nothing is under-replicated."""
        deadline = time.monotonic() + _REPLICATED_TIMEOUT
        said = None
        while (problem := cluster_problem(broker, security=security)) is not None:
            if time.monotonic() > deadline:
                raise UpError(
                    f"{after}: the cluster is not whole after {_REPLICATED_TIMEOUT:.0f} s: "
                    f"{problem}"
                )
            if problem != said:
                self.report(f"{after}: waiting: {problem}")
                said = problem
            time.sleep(0.5)

    def _write_rest_config(self, rest: RestClientSecurity | None) -> Path | None:
        """``<home>/connect-rest.properties`` (owner-only) for a secured REST API, for
        ``sluice status`` and the processes; None (and no file) otherwise."""
        path = self.home / REST_CONFIG_FILE
        if rest is None:
            path.unlink(missing_ok=True)
            return None
        return write_rest_config(path, rest)

    def _apply_connectors(
        self, connect: ConnectSpec, deployment: Deployment, rest: RestClientSecurity | None = None
    ) -> None:
        """Apply the connectors once the worker has joined its group (it answers 409 before),
        through its REST API reached with ``rest`` (HTTPS CA, login) when it is secured."""
        child = self.children["connect"]

        def alive() -> None:
            if not child.alive():
                raise UpError(f"the Connect worker exited at start:\n{log_tail(child.log)}")

        apply_when_ready(
            ConnectRest(connect.url, timeout=60, security=rest),
            deployment.connectors,
            prune=True,
            report=self.report,
            wait=_READY_TIMEOUT,
            unreachable_too=True,
            check=alive,
        )

    def _reload_from_request(self) -> None:
        request: dict[str, Any] = {}
        try:
            request = json.loads((self.home / RELOAD_FILE).read_text(encoding="utf-8"))
            path = Path(request.get("file") or self.deployment.source)
            rolling = bool(request.get("rolling_restart"))
            self.report(f"re-reading {path}" + (" for a rolling restart" if rolling else ""))
            self.apply(self.transform(load(path)), rolling=rolling)
            self.generation += 1
            outcome = {"ok": True, "message": "applied"}
        except (OSError, ValueError) as error:
            outcome = {"ok": False, "message": f"cannot read the reload request: {error}"}
        except (UpError, DeploymentError, CliError, KafkaException) as error:
            outcome = {"ok": False, "message": _message(error)}
        if not outcome["ok"]:
            self.report(f"not applied: {outcome['message']}")
        self.last_reload = {"id": request.get("id"), "at": time.time(), **outcome}
        self.write_state()

    # -- stopping -------------------------------------------------------------------------
    def stop_all(self) -> None:
        """Stop every child, the processes first, then the brokers, ZooKeeper last; each tier
        together."""
        for tier in _TIERS:
            children = [child for child in self.children.values() if child.kind == tier]
            for child in children:
                child.terminate()
            for child in children:
                child.stop()
                self._print_events(child)

    # -- what is shown --------------------------------------------------------------------
    def state(self, running: bool = True) -> UpState:
        """The content of ``up.json``."""
        connect = self.deployment.connect
        return UpState(
            pid=os.getpid() if running else None,
            file=str(self.deployment.source.absolute()),
            updated=time.time(),
            bootstrap=self.deployment.broker.bootstrap,
            connect_url=None if connect is None else connect.url,
            connect_config=None if self.rest_config is None else str(self.rest_config),
            generation=self.generation,
            last_reload=self.last_reload,
            components=[child.record() for child in self.children.values()],
        )

    def write_state(self, running: bool = True) -> None:
        """Replace ``up.json`` atomically."""
        state_file.write(self.home, self.state(running))

    def _print_events(self, *only: Child) -> None:
        for child in only or tuple(self.children.values()):
            seen = self._seen_events.get(child.name, 0)
            for event in child.events[seen:]:
                self.report(f"{child.name}: {event}")
            self._seen_events[child.name] = len(child.events)


def _listen_of(launch: Launch) -> str:
    """The ``--listen`` of a broker's command line (``HOST:PORT``, without a protocol)."""
    return launch.command[launch.command.index("--listen") + 1].rpartition("://")[2]


def _connect_launch(
    connect: ConnectSpec, bootstrap: str, security: SecuritySpec | None, home: Path
) -> Launch:
    command = [
        *sluice_command(),
        "connect",
        "start",
        "--group",
        connect.group,
        "--rest",
        connect.rest,
        "--bootstrap-server",
        bootstrap,
    ]
    if security is not None and security.connect_user is not None:
        # the worker's settings in an owner-only file: they hold its password
        settings = {**security.client(security.connect_user), **dict(connect.config)}
        path = private_file(home / "connect-worker.properties", settings.items(), escape=True)
        command += ["--worker-config", str(path)]
    else:
        for key, value in connect.config:
            command += ["-X", f"{key}={value}"]
    if connect.metrics:
        command += ["--metrics-listen", connect.metrics]
    return Launch(tuple(command), stop_timeout=45.0)


def _rest_client(connect: ConnectSpec, security: SecuritySpec | None) -> RestClientSecurity | None:
    """How ``sluice up`` reaches the worker's REST API, from the worker's own settings (what
    Kafka Connect's REST client uses to reach other workers): on HTTPS the CA of its
    ``listeners.https.ssl.truststore.location`` (or top-level ``ssl.truststore.location``),
    else the ``security:`` CA, else the worker's own certificate; with basic authentication the
    first user of its users file; asked for a client certificate, the worker's own. None for a
    plain REST API (or settings the worker will refuse at start, saying why in its log)."""
    from sluice.connect.rest_security import rest_security

    settings = dict(connect.config)
    if security is not None and security.connect_user is not None:
        settings = {**security.client(security.connect_user), **settings}
    try:
        found = rest_security(settings)
    except ConfigError:
        return None
    if found.tls is None and found.basic_auth is None:
        return None
    ca = None
    if found.tls is not None:
        ca = found.tls.truststore
        if ca is None and security is not None:
            ca = security.truststore
        if ca is None:
            ca = found.tls.keystore
    user: str | None = None
    password: str | None = None
    if found.basic_auth is not None:
        user, password = next(iter(found.basic_auth.users.items()))
    certificate = None  # asked for a client certificate: the worker's own, as workers do
    if found.tls is not None and found.tls.client_auth != ssl.CERT_NONE:
        certificate = found.tls.keystore.absolute()
    return RestClientSecurity(None if ca is None else ca.absolute(), user, password, certificate)


def _program_launch(
    program: ProgramSpec,
    index: int,
    deployment: Deployment,
    home: Path | None = None,
    rest_config: Path | None = None,
    registry: Mapping[str, str] | None = None,
) -> Launch:
    """``registry``: the environment that reaches the schema registry
    (:meth:`~sluice.up.schema_services.SchemaServices.environment`)."""
    environment = {
        "PYTHONUNBUFFERED": "1",
        "SLUICE_BOOTSTRAP": deployment.broker.bootstrap,
        "SLUICE_INSTANCE": str(index),
    }
    if registry is not None:
        environment.update(registry)
    if deployment.connect is not None:
        environment["SLUICE_CONNECT_URL"] = deployment.connect.url
        if rest_config is not None:
            environment[CONNECT_CONFIG] = str(rest_config)
    if program.metrics:
        host, _, port = program.metrics.rpartition(":")
        environment["SLUICE_METRICS_LISTEN"] = f"{host}:{int(port) + index}"
    settings = dict(program.config)
    security = deployment.security
    if program.kind == "streams" and security is not None and security.streams_user is not None:
        settings = {**security.client(security.streams_user), **settings}
    if settings:
        environment[STREAMS_CONFIG] = json.dumps(settings)
    user = None if security is None else security.streams_user
    if program.kind == "process" and security is not None and user is not None and home:
        # Kafka's client properties (as --command-config takes), owner-only: a password
        path = home / f"client-{user}.properties"
        private_file(path, security.client(user).items(), escape=True)
        environment[CLIENT_PROPERTIES] = str(path)
    environment.update(program.environment)
    return Launch(tuple(program.command(sys.executable)), tuple(sorted(environment.items())))


def _message(error: BaseException) -> str:
    if isinstance(error, CliError):
        return error.message
    if isinstance(error, KafkaException) and error.args:
        first = error.args[0]
        return first if isinstance(first, str) else str(first.str())
    return str(error)
