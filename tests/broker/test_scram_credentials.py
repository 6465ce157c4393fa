"""Users' SCRAM credentials through confluent-kafka's AdminClient (KIP-554:
AlterUserScramCredentials and DescribeUserScramCredentials) against a real broker: set,
described, deleted, kept across a restart, stored without the password (what is stored
authenticates the password through the SCRAM server and nothing else), and Kafka's errors —
on one node here, across brokers of a cluster in ``tests/cluster/test_scram_credentials.py``."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from sluice.broker.security.credential_store import FILE_NAME
from sluice.broker.security.sasl import SaslAuthenticationError, ScramServer
from tests.cli.conftest import run_sluice
from tests.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
TIMEOUT = 15.0


def upsert(user: str, password: str, mechanism: Any = SHA256, iterations: int = 4096) -> Any:
    return UserScramCredentialUpsertion(
        user, ScramCredentialInfo(mechanism, iterations), password.encode()
    )


def alter(admin: AdminClient, *alterations: Any) -> dict[str, str | None]:
    """Each user's outcome: None, or the error's name."""
    outcome: dict[str, str | None] = {}
    for user, future in admin.alter_user_scram_credentials(list(alterations)).items():
        try:
            future.result(TIMEOUT)
            outcome[user] = None
        except KafkaException as error:
            outcome[user] = error.args[0].name()
    return outcome


def described(admin: AdminClient) -> dict[str, list[tuple[str, int]]]:
    every = admin.describe_user_scram_credentials().result(TIMEOUT)
    return {
        user: sorted(
            (str(i.mechanism).rpartition(".")[2], i.iterations) for i in d.scram_credential_infos
        )
        for user, d in every.items()
    }


def authenticates(broker: BrokerProcess, user: str, password: str, mechanism: str) -> bool:
    """Whether ``password`` passes SCRAM against what the broker stored (the file, read as
    the SCRAM server will read it)."""
    from kafka.net.sasl.scram import SaslMechanismScram

    from sluice.broker.security.credential_store import FileScramStore

    stored = FileScramStore(broker.data_dir).users()
    server = ScramServer(mechanism, lambda name: stored.get(name, {}).get(mechanism))
    client = SaslMechanismScram(
        sasl_plain_username=user, sasl_plain_password=password, sasl_mechanism=mechanism
    )
    try:
        while not client.is_done():
            client.receive(server.evaluate(client.auth_bytes()))
    except SaslAuthenticationError:
        return False
    return server.principal == f"User:{user}"


@pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning")
def test_credentials_are_set_described_deleted_and_kept(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    broker = broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert described(admin) == {}
    assert alter(
        admin,
        upsert("alice", "alice-secret"),
        upsert("alice", "alice-512", SHA512, 8192),
        upsert("bob", "bob-secret"),
    ) == {"alice": None, "bob": None}
    assert described(admin) == {
        "alice": [("SCRAM_SHA_256", 4096), ("SCRAM_SHA_512", 8192)],
        "bob": [("SCRAM_SHA_256", 4096)],
    }
    [(_, bob)] = admin.describe_user_scram_credentials(["bob"]).items()
    assert [i.iterations for i in bob.result(TIMEOUT).scram_credential_infos] == [4096]

    # stored salted, never in clear; what is stored checks the password and nothing else
    text = (broker.data_dir / FILE_NAME).read_text()
    assert (
        "secret" not in text and "stored_key=" in json.loads(text)["users"]["bob"]["SCRAM-SHA-256"]
    )
    assert authenticates(broker, "alice", "alice-512", "SCRAM-SHA-512")
    assert not authenticates(broker, "alice", "alice-secret", "SCRAM-SHA-512")

    assert alter(admin, UserScramCredentialDeletion("alice", SHA256)) == {"alice": None}
    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert described(admin) == {
        "alice": [("SCRAM_SHA_512", 8192)],
        "bob": [("SCRAM_SHA_256", 4096)],
    }
    assert alter(admin, UserScramCredentialDeletion("alice", SHA512)) == {"alice": None}
    assert list(described(admin)) == ["bob"]


def test_kafkas_errors(shared_broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    assert alter(admin, upsert("few", "x", iterations=100)) == {"few": "UNACCEPTABLE_CREDENTIAL"}
    assert alter(admin, upsert("many", "x", iterations=20000)) == {
        "many": "UNACCEPTABLE_CREDENTIAL"
    }
    assert alter(admin, UserScramCredentialDeletion("nobody", SHA256)) == {
        "nobody": "RESOURCE_NOT_FOUND"
    }
    # one mechanism altered twice: the user's alterations are all refused
    assert alter(admin, upsert("twice", "a"), UserScramCredentialDeletion("twice", SHA256)) == {
        "twice": "DUPLICATE_RESOURCE"
    }
    [(_, missing)] = admin.describe_user_scram_credentials(["twice"]).items()
    with pytest.raises(KafkaException, match="does not exist"):
        missing.result(TIMEOUT)


def test_the_cli_sets_describes_and_deletes_without_showing_a_secret(
    shared_broker: BrokerProcess, tmp_path: Path
) -> None:
    bs = ("-b", shared_broker.bootstrap)
    secret = tmp_path / "dave.txt"
    secret.write_text("dave-secret\n")
    done = run_sluice("users", "scram", "set", "dave", "-m", "SCRAM-SHA-512",
                      "--iterations", "4096", "--password-file", str(secret), *bs)  # fmt: skip
    assert done.code == 0, done
    assert done.out == "dave: SCRAM-SHA-512 set (4096 iterations)\n"
    described = run_sluice("users", "scram", "describe", "dave", *bs)
    assert described.out.split() == ["USER", "MECHANISM", "ITERATIONS",
                                     "dave", "SCRAM-SHA-512", "4096"]  # fmt: skip
    assert "secret" not in done.out + described.out + done.err + described.err
    refused = run_sluice("users", "scram", "set", "dave", "--iterations", "10",
                         "--password-file", str(secret), *bs)  # fmt: skip
    assert refused.code == 1 and "dave: UNACCEPTABLE_CREDENTIAL" in refused.err, refused
    no_file = run_sluice("users", "scram", "set", "dave", *bs)  # no terminal to ask on
    assert no_file.code == 2 and "--password-file" in no_file.err
    assert run_sluice("users", "scram", "delete", "dave", "-m", "SCRAM-SHA-512", *bs).code == 0
    gone = run_sluice("users", "scram", "delete", "dave", "-m", "SCRAM-SHA-512", *bs)
    assert gone.code == 1 and "RESOURCE_NOT_FOUND" in gone.err
