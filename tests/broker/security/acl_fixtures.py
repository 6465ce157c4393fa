"""A broker with an authorizer for the ACL tests: one ``sluice broker start`` process with a
SASL_PLAINTEXT listener and PLAIN users admin (a super user), alice, bob and carol; clients
(confluent-kafka) configured per user; ACLs granted through the super user's AdminClient.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.conftest import SLUICE, free_port, stop_process, wait_for_port

TIMEOUT = 15.0
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret",
         "carol": "carol-secret"}  # fmt: skip
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    + " ".join(f'user_{user}="{password}"' for user, password in USERS.items())
    + ";"
)
CLUSTER = "kafka-cluster"


@dataclass
class AclBroker:
    """The running broker: its SASL address, its process, its data directory."""

    port: int
    proc: subprocess.Popen[bytes]
    root: Path
    props: dict[str, str] = field(default_factory=dict)
    _admins: dict[str, AdminClient] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def conf(self, user: str, **more: Any) -> dict[str, Any]:
        """A client's configuration as ``user`` (PLAIN over SASL_PLAINTEXT)."""
        return {
            "bootstrap.servers": self.bootstrap,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": user,
            "sasl.password": USERS[user],
            **more,
        }

    def admin(self, user: str = "admin") -> AdminClient:
        """``user``'s AdminClient (kept: a client dropped while its futures run ends them)."""
        if user not in self._admins:
            self._admins[user] = AdminClient(self.conf(user))
        return self._admins[user]

    def grant(self, bindings: Iterable[AclBinding]) -> None:
        """Create ``bindings`` as the super user."""
        futures = self.admin().create_acls(list(bindings), request_timeout=TIMEOUT)
        for future in futures.values():
            future.result(TIMEOUT)

    def revoke_all(self) -> None:
        """Remove every ACL."""
        everything = AclBindingFilter(
            ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
            AclOperation.ANY, AclPermissionType.ANY,
        )  # fmt: skip
        for future in self.admin().delete_acls([everything], request_timeout=TIMEOUT).values():
            future.result(TIMEOUT)

    def new_topic(self, records: int = 1) -> str:
        """A topic of one partition with ``records`` records, made by the super user."""
        name = f"acl-{uuid.uuid4().hex[:8]}"
        self.admin().create_topics([NewTopic(name, 1, 1)])[name].result(TIMEOUT)
        producer = Producer(self.conf("admin"))
        for i in range(records):
            producer.produce(name, value=f"r{i}".encode())
        assert producer.flush(TIMEOUT) == 0, "the super user's records were not delivered"
        return name

    def start(self) -> AclBroker:
        path = self.root / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        with (self.root / "broker.log").open("ab") as log:
            self.proc = subprocess.Popen(
                [str(SLUICE), "broker", "start", "--config", str(path)],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        wait_for_port(self.port, self.proc)
        return self

    def stop(self) -> None:
        self._admins.clear()
        stop_process(self.proc)

    def log_tail(self) -> str:
        return (self.root / "broker.log").read_text(errors="replace")[-4000:]


def acl_broker(root: Path, **more: str) -> Iterator[AclBroker]:
    """Start a broker with an authorizer (``more``: extra keys); stop it after."""
    port = free_port()
    props = {
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        "group.initial.rebalance.delay.ms": "0",
        "log.dirs": str(root / "data"),
        **more,
    }
    broker = AclBroker(port, None, root, props)  # type: ignore[arg-type]  # set by start
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()
        print(broker.log_tail())


def binding(
    user: str,
    rtype: ResourceType,
    name: str,
    op: AclOperation,
    *,
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    host: str = "*",
) -> AclBinding:
    """``user``'s ACL (``User:<user>``; ``*`` for every user)."""
    principal = "User:*" if user == "*" else f"User:{user}"
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def code_of(exc: BaseException) -> int:
    """The Kafka error code a client raised."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return int(exc.args[0].code())
    raise AssertionError(f"not a Kafka error: {exc!r}")
