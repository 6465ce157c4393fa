"""DescribeClientQuotas and AlterClientQuotas against a real broker process: set, described
with Kafka's filters, removed, kept across a restart in ``client-quotas.json``, Kafka's
INVALID_REQUEST cases, ``validate_only``, and ``sluice quotas set|describe|delete``."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from sluice.broker.quotas.store import FILE_NAME
from tests.broker.quotas.wire_quotas import DEFAULT, EXACT, SPECIFIED, alter, describe
from tests.cli.conftest import run_sluice
from tests.conftest import BrokerProcess

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> BrokerProcess:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("quotas-api"), {}, tmp_path_factory.mktemp("log") / "broker.log"
    )
    proc.start()
    yield proc  # type: ignore[misc]
    proc.stop()


def test_set_describe_remove_and_restart(broker_factory: Callable[..., BrokerProcess]) -> None:
    node = broker_factory()
    b = node.bootstrap
    assert (
        alter(
            b,
            [
                ({"user": "alice"}, {"producer_byte_rate": 1024.0, "request_percentage": 12.5}),
                ({"user": "alice", "client-id": None}, {"consumer_byte_rate": 2048.0}),
                ({"client-id": None}, {"producer_byte_rate": 4096.0}),
                ({"user": None, "client-id": "app"}, {"consumer_byte_rate": 10.0}),
            ],
        )
        == [("none", None)] * 4
    )
    everything = {
        (("user", "alice"),): {"producer_byte_rate": 1024.0, "request_percentage": 12.5},
        (("user", "alice"), ("client-id", None)): {"consumer_byte_rate": 2048.0},
        (("client-id", None),): {"producer_byte_rate": 4096.0},
        (("user", None), ("client-id", "app")): {"consumer_byte_rate": 10.0},
    }
    assert describe(b) == ("none", None, everything)
    # exact, default and any-name matches; strict leaves out entities with other parts
    assert describe(b, [("user", EXACT, "alice")])[2].keys() == {
        (("user", "alice"),),
        (("user", "alice"), ("client-id", None)),
    }
    assert describe(b, [("user", EXACT, "alice")], strict=True)[2].keys() == {(("user", "alice"),)}
    assert describe(b, [("client-id", DEFAULT, None)])[2].keys() == {
        (("user", "alice"), ("client-id", None)),
        (("client-id", None),),
    }
    assert len(describe(b, [("user", SPECIFIED, None)])[2]) == 3
    # removing a key leaves the others; removing the last removes the entity
    assert alter(b, [({"user": "alice"}, {"request_percentage": None})]) == [("none", None)]
    assert alter(b, [({"client-id": None}, {"producer_byte_rate": None})]) == [("none", None)]
    del everything[(("client-id", None),)]
    everything[(("user", "alice"),)] = {"producer_byte_rate": 1024.0}
    assert describe(b)[2] == everything
    doc = json.loads((node.data_dir / FILE_NAME).read_text())
    assert doc["version"] == 1 and len(doc["entities"]) == 3
    node.restart()
    assert describe(node.bootstrap)[2] == everything


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        ({"user": "a"}, {"bogus_rate": 1.0}, "Unknown quota key bogus_rate"),
        ({"user": "a"}, {"producer_byte_rate": -1.0}, "must be greater than 0"),
        ({"user": "a"}, {"producer_byte_rate": 0.0}, "must be greater than 0"),
        ({"user": "a"}, {"consumer_byte_rate": 1.5}, "must be an integer"),
        ({"ip": "10.0.0.1"}, {"producer_byte_rate": 1.0}, "Unsupported quota entity type ip"),
        ({}, {"producer_byte_rate": 1.0}, "must name a user"),
    ],
)
def test_alter_errors(
    broker: BrokerProcess, entity: dict[str, str | None], ops: dict[str, float], message: str
) -> None:
    [(error, text)] = alter(broker.bootstrap, [(entity, ops)])
    assert error == "invalid_request", f"expected INVALID_REQUEST for {entity} {ops}, got {error}"
    assert text is not None and message in text, f"expected {message!r} in {text!r}"
    assert describe(broker.bootstrap, [("user", EXACT, "a")])[2] == {}


def test_one_bad_entry_leaves_the_others_applied_and_validate_only_changes_nothing(
    broker: BrokerProcess,
) -> None:
    b = broker.bootstrap
    assert alter(
        b, [({"client-id": "good"}, {"producer_byte_rate": 5.0}), ({"user": "x"}, {"nope": 1.0})]
    ) == [("none", None), ("invalid_request", "Unknown quota key nope")]
    assert alter(b, [({"client-id": "dry"}, {"producer_byte_rate": 5.0})], validate_only=True) == [
        ("none", None)
    ]
    found = describe(b, [("client-id", SPECIFIED, None)])[2]
    assert (("client-id", "good"),) in found and (("client-id", "dry"),) not in found


def test_describe_filter_errors(broker: BrokerProcess) -> None:
    b = broker.bootstrap
    error, message, _ = describe(b, [("user", EXACT, None)])
    assert (error, message) == ("invalid_request", "Exact match must specify a name")
    error, message, _ = describe(b, [("user", SPECIFIED, None), ("user", DEFAULT, None)])
    assert error == "invalid_request" and "Duplicate user" in (message or "")
    error, message, _ = describe(b, [("ip", SPECIFIED, None)])
    assert error == "invalid_request" and "ip" in (message or "")


def test_cli_set_describe_delete(broker: BrokerProcess) -> None:
    b = ["--bootstrap-server", broker.bootstrap]
    done = run_sluice(
        "quotas", "set", *b, "--entity-type", "users", "--entity-name", "carol",
        "--entity-type", "clients", "--entity-default",
        "--add-config", "producer_byte_rate=1048576,request_percentage=50",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert "user 'carol', client-id '<default>'" in done.out
    shown = run_sluice("quotas", "describe", *b, "--entity-type", "users", "--entity-name", "carol")
    assert shown.code == 0, shown.err
    assert "carol  <default>  producer_byte_rate=1048576, request_percentage=50" in shown.out
    removed = run_sluice(
        "quotas", "delete", *b, "--entity-type", "users", "--entity-name", "carol",
        "--entity-type", "clients", "--entity-name", "<default>",
        "--delete-config", "request_percentage",
    )  # fmt: skip
    assert removed.code == 0, removed.err
    shown = run_sluice("quotas", "describe", *b, "--entity-type", "users", "--entity-name", "carol")
    assert "request_percentage" not in shown.out and "producer_byte_rate=1048576" in shown.out
    bad = run_sluice(
        "quotas", "set", *b, "--entity-type", "users", "--entity-name", "carol",
        "--add-config", "producer_byte_rate=-3",
    )  # fmt: skip
    assert bad.code != 0 and "INVALID_REQUEST" in bad.err, bad.err
    usage = run_sluice("quotas", "set", *b, "--entity-type", "topics", "--add-config", "x=1")
    assert usage.code != 0 and "users or clients" in usage.err
