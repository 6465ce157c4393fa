"""A schema registry on HTTPS with HTTP basic authentication, as Confluent's users secure one:
a CA (trustme), the registry's key and certificate, a JAAS file whose ``SchemaRegistry`` (and
``KafkaRest``) section names a Jetty-style users file. Used by the registry's, the REST proxy's
and the broker's tests of a secured registry."""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

import trustme

from tests.conftest import SLUICE, free_port, stop_process, wait_for_port
from tests.security_fixtures import certificates

USER, PASSWORD = "registry-admin", "s3cret:with colon"
JETTY = "org.eclipse.jetty.jaas.spi.PropertyFileLoginModule"


@dataclass
class Material:
    """The files of a secured service: its PEM key and chain, the CA, the JAAS file."""

    server_pem: Path
    ca_pem: Path
    jaas: Path
    folder: Path

    def client_properties(self, password: str = PASSWORD, *, ca: bool = True) -> Path:
        """A ``--schema-registry-config`` file (Confluent's client keys)."""
        path = self.folder / f"registry-client-{uuid.uuid4().hex[:6]}.properties"
        lines = ["basic.auth.credentials.source=USER_INFO",
                 f"basic.auth.user.info={USER}:{password}"]  # fmt: skip
        if ca:
            lines.append(f"ssl.ca.location={self.ca_pem}")
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


def material(folder: Path) -> Material:
    """A CA, a certificate for 127.0.0.1, and the users file (``USER: PASSWORD,admin``)."""
    server_pem, ca_pem = certificates(trustme.CA(), folder, "registry")
    users = folder / "users.password"
    users.write_text(f"{USER}: {PASSWORD},admin\nreader: other,read\n", encoding="utf-8")
    jaas = folder / "jaas.conf"
    jaas.write_text(
        "".join(
            f'{realm} {{\n  {JETTY} required\n  file="{users}"\n  debug="false";\n}};\n'
            for realm in ("SchemaRegistry", "KafkaRest")
        ),
        encoding="utf-8",
    )
    return Material(server_pem, ca_pem, jaas, folder)


class SecuredRegistry:
    """``sluice schema-registry start --ssl-keystore … --jaas-config …`` (stopped by PID)."""

    def __init__(self, bootstrap: str, files: Material, log: Path, group: str, topic: str) -> None:
        self.port = free_port()
        command = [
            str(SLUICE), "schema-registry", "start", "--listen", f"127.0.0.1:{self.port}",
            "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", group,
            "--ssl-keystore", str(files.server_pem), "--jaas-config", str(files.jaas),
        ]  # fmt: skip
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc, timeout=60)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_process(self.proc)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def start_registry(
    bootstrap: str, files: Material, name: str = "a", unique: str | None = None
) -> SecuredRegistry:
    """A secured registry with a fresh topic and group (``unique``'s: another instance of the
    registry that has them)."""
    unique = unique or uuid.uuid4().hex[:8]
    log = files.folder / f"registry-{name}.log"
    return SecuredRegistry(bootstrap, files, log, f"sr-{unique}", f"_schemas-{unique}")
