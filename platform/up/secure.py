"""``sluice up --secure``: a deployment without a ``security:`` section, secured by generated
material — the quickstart on SASL_SSL in one command.

Under ``<home>/secure/`` (made once, then reused, so that clients keep trusting the CA): a CA
(``ca.pem``), the broker's key and certificate for ``127.0.0.1``, ``localhost`` and its listen
host (``broker.pem``, key first), and a random password per user (``admin.pass``,
``connect.pass``, ``streams.pass``); the keys and passwords are readable by their owner only.
Certificates are made with ``cryptography`` (EC P-256; the CA for ten years, the broker's
certificate for one).

Users: ``admin`` (a super user: ``sluice up`` itself), ``connect`` (the Connect worker) and
``streams`` (every Streams app). ACLs, within what the file declares: each component may read
and write the ``topics:`` of the file; the worker also owns topics prefixed ``connect-`` (its
internal topics), reads its group and its sinks' groups ``connect-…``, and its transactional ids
``<group>-…`` (exactly-once sources); each Streams app owns its ``<application id>`` prefixed
topics, group and transactional ids. Both may write idempotently. A client of the deployment
connects with ``security.protocol=SASL_SSL``, ``ssl.truststore.location=<home>/secure/ca.pem``
and a user's password from its file.

The Connect worker's REST API, unless its ``config:`` sets ``listeners`` or a REST extension
itself, is put on HTTPS (the broker's certificate, ``listeners=https://<rest>``) with Kafka's
basic-auth extension: one REST user, ``admin`` with the admin password
(``connect-rest.password``, read through ``connect-jaas.conf``), so ``sluice status`` and
``sluice connect`` reach it with ``--rest-ca-file ca.pem --rest-user admin``. The schema
registry and the REST proxy are served the same way (:mod:`sluice.up.schema_services_security`).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import replace
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from sluice.errors import ConfigError
from sluice.up.spec import AclSpec, ConnectSpec, Deployment, SecuritySpec, UserSpec

__all__ = ["SECURE_DIR", "secure_deployment"]

SECURE_DIR = "secure"
"""The folder of ``<home>`` that holds the generated CA, certificate and passwords."""

_USERS = ("admin", "connect", "streams")


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _certificates(folder: Path, hosts: list[str]) -> None:
    """``ca.pem`` and ``broker.pem`` (key + certificate + CA), unless both exist."""
    if (folder / "ca.pem").exists() and (folder / "broker.pem").exists():
        return
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("Sluice up --secure CA")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(_name(hosts[0]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    chain = certificate.public_bytes(pem) + ca.public_bytes(pem)
    _write_private(folder / "broker.pem", key_pem + chain)
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))


def _password(folder: Path, user: str) -> str:
    path = folder / f"{user}.pass"
    if not path.exists():
        _write_private(path, secrets.token_urlsafe(24).encode())
    return path.read_text(encoding="utf-8").strip()


def _acls(deployment: Deployment) -> list[AclSpec]:
    acls: list[AclSpec] = []

    def grant(user: str, kind: str, name: str, operations: tuple[str, ...], pattern: str) -> None:
        acls.append(AclSpec(f"User:{user}", kind, name, pattern, operations))

    topics = [topic.name for topic in deployment.topics]
    components: list[str] = []
    if deployment.connect is not None:
        components.append("connect")
        group = dict(deployment.connect.config).get("group.id", deployment.connect.group)
        grant("connect", "topic", "connect-", ("all",), "prefixed")
        grant("connect", "group", group, ("read",), "literal")
        grant("connect", "group", "connect-", ("read",), "prefixed")
        grant("connect", "transactional_id", f"{group}-", ("write", "describe"), "prefixed")
    apps = [p for p in deployment.programs if p.kind == "streams"]
    if apps:
        components.append("streams")
    for app in apps:
        application_id = app.application_id or app.name
        grant("streams", "topic", application_id, ("all",), "prefixed")
        grant("streams", "group", application_id, ("read",), "prefixed")
        grant("streams", "transactional_id", application_id, ("write", "describe"), "prefixed")
    for user in components:
        for topic in topics:
            grant(user, "topic", topic, ("read", "write"), "literal")
        grant(user, "cluster", "kafka-cluster", ("idempotent_write",), "literal")
    return acls


_BASIC_AUTH = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
_REST_KEYS = ("listeners", "rest.extension.classes", "java.security.auth.login.config")


def _secure_rest(connect: ConnectSpec, folder: Path, admin_password: str) -> ConnectSpec:
    """The worker with its REST API on HTTPS and basic authentication, unless its own
    ``config:`` already says how its REST API is served."""
    config = dict(connect.config)
    if any(key in config for key in _REST_KEYS):
        return connect
    users = folder / "connect-rest.password"
    _write_private(users, f"admin={admin_password}\n".encode())
    jaas = folder / "connect-jaas.conf"
    jaas.write_text(
        "KafkaConnect {\n"
        "    org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
        f' required\n    file="{users.absolute()}";\n}};\n',
        encoding="utf-8",
    )
    added = (
        ("listeners", f"https://{connect.rest}"),
        ("listeners.https.ssl.keystore.type", "PEM"),
        ("listeners.https.ssl.keystore.location", str((folder / "broker.pem").absolute())),
        ("rest.extension.classes", _BASIC_AUTH),
        ("java.security.auth.login.config", str(jaas.absolute())),
    )
    return replace(connect, config=(*connect.config, *added))


def secure_deployment(deployment: Deployment, home: Path) -> Deployment:
    """``deployment`` with a generated ``security:`` section (see the module docstring);
    ConfigError when it has its own, or its broker is not one that ``sluice up`` runs alone."""
    source = str(deployment.source)
    if deployment.security is not None:
        raise ConfigError(
            "--secure secures a file without a security: section; this one has its own",
            key="security",
            source=source,
        )
    broker = deployment.broker
    if not broker.embedded:
        raise ConfigError(
            "--secure secures the brokers sluice up runs, not an external one",
            key="broker",
            source=source,
        )
    folder = home / SECURE_DIR
    folder.mkdir(parents=True, exist_ok=True)
    listens = [node.listen for node in broker.nodes] if broker.clustered else [broker.listen]
    hosts = ["127.0.0.1", "localhost"]
    hosts += [h for listen in listens if (h := listen.rpartition(":")[0].strip("[]"))]
    if deployment.connect is not None:
        hosts.append(deployment.connect.rest.rpartition(":")[0].strip("[]") or "127.0.0.1")
    for service in (deployment.schema_registry, deployment.rest_proxy):  # HTTPS too
        if service is not None:
            hosts.append(service.listen.rpartition(":")[0].strip("[]") or "127.0.0.1")
    _certificates(folder, hosts)
    passwords = {user: _password(folder, user) for user in _USERS}
    security = SecuritySpec(
        protocol="SASL_SSL",
        mechanism="SCRAM-SHA-512",
        keystore=(folder / "broker.pem").absolute(),
        truststore=(folder / "ca.pem").absolute(),
        admin_user="admin",
        admin_password=passwords["admin"],
        users=(
            UserSpec("connect", passwords["connect"]),
            UserSpec("streams", passwords["streams"]),
        ),
        acls=tuple(_acls(deployment)),
        connect_user="connect" if deployment.connect is not None else None,
        streams_user="streams",
    )
    connect = deployment.connect
    if connect is not None:
        connect = _secure_rest(connect, folder, passwords["admin"])
    return replace(deployment, security=security, connect=connect)
