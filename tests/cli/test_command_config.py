"""``--command-config FILE`` end to end: one broker with a PLAINTEXT, a SASL_SSL (SCRAM-SHA-512)
and an mTLS listener (certificates from ``trustme``); the ``sluice`` commands reach the secured
listeners with Kafka's own client properties files (Java keys: ``sasl.jaas.config``,
``ssl.truststore.location``, ``ssl.keystore.location``), ``-X`` overriding the file, those that
speak the protocol themselves (``sluice.wire``) too. A wrong password and a JKS store are clear
errors with non-zero exits."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism
from confluent_kafka.admin import UserScramCredentialUpsertion as Upsertion

from tests.cli.conftest import Result, run_sluice
from tests.security_fixtures import listeners_broker

pytestmark = pytest.mark.timeout(180)

USER, PASSWORD = "alice", "alice-s3cret"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class Secured:
    ports: dict[str, int]
    root: Path
    ca: Path
    client_pem: Path

    def address(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def properties(self, text: str, name: str = "client.properties") -> Path:
        path = self.root / name
        path.write_text(text)
        return path

    def scram(self, password: str = PASSWORD, name: str = "scram.properties") -> Path:
        """A client properties file as Kafka's docs write it for SCRAM over TLS."""
        return self.properties(
            "# Kafka's client properties, Java keys\n"
            "security.protocol=SASL_SSL\n"
            "sasl.mechanism=SCRAM-SHA-512\n"
            f"sasl.jaas.config={SCRAM} required \\\n"
            f'    username="{USER}" \\\n'
            f'    password="{password}";\n'
            f"ssl.truststore.location={self.ca}\n"
            "ssl.truststore.type=PEM\n",
            name,
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("command-config")
    for listeners in listeners_broker(
        root,
        {"PLAINTEXT": "PLAINTEXT", "SASL_SSL": "SASL_SSL", "MTLS": "SSL"},
        ("ops@example.com", "ops"),
        **{"listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512"},
    ):
        admin = AdminClient({"bootstrap.servers": listeners.address("PLAINTEXT")})
        info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
        for future in admin.alter_user_scram_credentials(
            [Upsertion(USER, info, PASSWORD.encode())]
        ).values():
            future.result(15)
        yield Secured(listeners.ports, root, listeners.ca_pem, listeners.client_pem)


def sluice(*args: str, input: str | None = None) -> Result:
    return run_sluice(*args, input=input, timeout=90)


def test_commands_run_over_sasl_ssl_with_a_kafka_properties_file(secured: Secured) -> None:
    config = str(secured.scram())
    over = ("-b", secured.address("SASL_SSL"), "--command-config", config)
    topic = f"cc-{uuid.uuid4().hex[:8]}"

    created = sluice("topics", "create", topic, "--partitions", "2", *over)
    assert created.code == 0, str(created)
    listed = sluice("topics", "list", *over)
    assert listed.code == 0 and topic in listed.out, str(listed)
    quota = ("--entity-type", "clients", "--entity-name", topic)
    set_quota = sluice("quotas", "set", *quota, "--add-config", "producer_byte_rate=1024", *over)
    assert set_quota.code == 0, str(set_quota)
    quotas = sluice("quotas", "describe", *quota, *over)
    assert quotas.code == 0 and "producer_byte_rate" in quotas.out, str(quotas)
    described = sluice("topics", "describe", topic, *over)
    assert described.code == 0 and topic in described.out, str(described)

    produced = sluice("produce", topic, "-K", ":", *over, input="k1:one\nk2:two\nk3:three\n")
    assert produced.code == 0, str(produced)
    consumed = sluice(
        "consume", topic, "-g", "cc-group", "--from-beginning", "-e", "-f", "%k=%v\n", *over
    )
    assert consumed.code == 0, str(consumed)
    assert sorted(consumed.out.split()) == ["k1=one", "k2=two", "k3=three"], str(consumed)

    groups = sluice("groups", "describe", "cc-group", *over)
    assert groups.code == 0 and topic in groups.out, str(groups)
    users = sluice("users", "scram", "describe", *over)
    assert users.code == 0 and USER in users.out and PASSWORD not in users.out, str(users)
    cluster = sluice("cluster", "describe", *over)
    assert cluster.code == 0 and "CONTROLLER" in cluster.out, str(cluster)
    deleted = sluice("topics", "delete", topic, *over)
    assert deleted.code == 0, str(deleted)


def test_a_wrong_password_is_a_clear_error(secured: Secured) -> None:
    config = str(secured.scram(password="not-the-password", name="wrong.properties"))
    result = sluice("topics", "list", "-b", secured.address("SASL_SSL"), "--command-config", config)
    assert result.code == 1, str(result)
    assert result.err.startswith(
        f"error: cannot authenticate to {secured.address('SASL_SSL')}: SASL authentication error"
    ), str(result)
    assert result.err.count("\n") == 1, str(result)
    assert "Traceback" not in result.err
    assert "not-the-password" not in result.err + result.out


def test_x_properties_override_the_file(secured: Secured) -> None:
    config = str(secured.scram(password="not-the-password", name="stale.properties"))
    result = sluice(
        "topics", "list", "-b", secured.address("SASL_SSL"),
        "--command-config", config, "-X", f"sasl.password={PASSWORD}",
    )  # fmt: skip
    assert result.code == 0, str(result)


def test_a_pem_keystore_authenticates_on_the_mtls_listener(secured: Secured) -> None:
    config = secured.properties(
        f"security.protocol=SSL\nssl.truststore.location={secured.ca}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={secured.client_pem}\n",
        "mtls.properties",
    )
    result = sluice(
        "topics", "list", "-b", secured.address("MTLS"), "--command-config", str(config)
    )
    assert result.code == 0, str(result)


def test_a_jks_truststore_is_refused_naming_the_file_line_and_key(secured: Secured) -> None:
    store = secured.root / "client.truststore.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + bytes(64))
    config = secured.properties(
        f"security.protocol=SSL\nssl.truststore.location={store}\nssl.truststore.password=x\n",
        "jks.properties",
    )
    result = sluice(
        "topics", "list", "-b", secured.address("MTLS"), "--command-config", str(config)
    )
    assert result.code == 2, str(result)
    assert result.err.startswith(
        f"error: --command-config: {config}:2: ssl.truststore.location: {store} is not PEM"
    ), str(result)


def test_commands_that_speak_the_protocol_themselves_use_it_too(secured: Secured) -> None:
    """transactions, brokers, partitions, quotas and the leader epochs of topics describe go
    through sluice.wire, which does TLS and SASL itself."""
    config = str(secured.scram())
    over = ("-b", secured.address("SASL_SSL"), "--command-config", config)
    topic = f"cc-{uuid.uuid4().hex[:8]}"
    assert sluice("topics", "create", topic, *over).code == 0
    admin = AdminClient({"bootstrap.servers": secured.address("PLAINTEXT")})
    [broker_id] = admin.list_topics(timeout=10).brokers

    listed = sluice("transactions", "list", *over)
    assert listed.code == 0, str(listed)
    rebalance = sluice("brokers", "rebalance", "--dry-run", *over)
    assert rebalance.code == 0, str(rebalance)
    generated = sluice(
        "partitions", "reassign", "--generate", "--topics", topic, "--brokers", str(broker_id),
        *over,
    )  # fmt: skip
    assert generated.code == 0 and topic in generated.out, str(generated)
    described = sluice("topics", "describe", topic, *over)
    assert described.code == 0 and "warning" not in described.err, str(described)
    status = sluice("status", "--json", "--home", str(secured.root / "no-up"), *over)
    assert status.code == 0, str(status)
    report = json.loads(status.out)
    assert report["sizes"] == {"available": True, "note": None}, report["sizes"]
    assert report["broker"]["reassigning"] == [], report["broker"]

    wrong = str(secured.scram(password="not-the-password", name="wrong-wire.properties"))
    refused = sluice("transactions", "list", "-b", secured.address("SASL_SSL"),
                     "--command-config", wrong)  # fmt: skip
    assert refused.code == 1, str(refused)
    assert "refused the credentials" in refused.err, str(refused)
    assert "not-the-password" not in refused.err


def test_a_property_the_wire_client_cannot_apply_is_refused(secured: Secured) -> None:
    config = secured.properties(
        f"security.protocol=SSL\nssl.truststore.certificates={secured.ca.read_text()!r}\n",
        "pem-text.properties",
    )
    result = sluice(
        "brokers", "rebalance", "--dry-run", "-b", secured.address("PLAINTEXT"),
        "--command-config", str(config),
    )  # fmt: skip
    assert result.code == 2, str(result)
    assert result.err.startswith(
        "error: sluice brokers rebalance: ssl.ca.pem: not applied by sluice.wire"
    ), str(result)


def test_every_client_command_takes_command_config() -> None:
    commands = [
        ("topics", "create"), ("topics", "list"), ("topics", "describe"), ("topics", "alter"),
        ("topics", "delete"), ("produce",), ("consume",), ("groups", "list"),
        ("groups", "describe"), ("groups", "reset-offsets"), ("groups", "delete"),
        ("users", "scram", "set"), ("users", "scram", "delete"), ("users", "scram", "describe"),
        ("cluster", "describe"), ("leader-election",), ("status",), ("transactions", "list"),
        ("transactions", "describe"), ("brokers", "decommission"), ("brokers", "rebalance"),
        ("partitions", "reassign"), ("acls", "add"), ("acls", "remove"), ("acls", "list"),
        ("quotas", "set"), ("quotas", "delete"), ("quotas", "describe"),
    ]  # fmt: skip
    missing = [
        " ".join(command)
        for command in commands
        if "--command-config" not in sluice(*command, "--help").out
    ]
    assert not missing, f"without --command-config: {missing}"
