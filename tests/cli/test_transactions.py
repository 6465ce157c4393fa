"""``sluice transactions list|describe`` against the real broker and confluent-kafka's
transactional producers.

Module-wide transactional ids, each of its own so that other tests on the shared broker do not
matter: one with a committed transaction, one with a transaction left open (begun, records
produced, never committed; aborted when the module ends), and one that never began any.
"""

from __future__ import annotations

import re
import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from tests.conftest import BrokerProcess

if TYPE_CHECKING:
    from tests.cli.conftest import Result, Sluice

Run = Callable[..., "Result"]
OPEN_TIMEOUT_MS = 45_000
"""The open transaction's ``transaction.timeout.ms``: not the default, so ``describe`` shows it."""
LIBRDKAFKA_TIMEOUT_MS = 60_000
"""librdkafka's default ``transaction.timeout.ms``, that of the committed transaction."""


@dataclass(frozen=True)
class Transactions:
    topic: str
    open_id: str
    committed_id: str
    empty_id: str
    began: datetime
    """Just before the open transaction began: its start time is not earlier."""


def _producer(bootstrap: str, transactional_id: str, **config: Any) -> Producer:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, **config}
    )
    producer.init_transactions(30)
    return producer


def _produce(producer: Producer, topic: str, partitions: list[int]) -> None:
    failed: list[Any] = []
    for partition in partitions:
        producer.produce(
            topic,
            f"r{partition}".encode(),
            partition=partition,
            on_delivery=lambda err, _msg: failed.append(err) if err else None,
        )
    assert producer.flush(30) == 0, "records still in flight after 30s"
    assert not failed, failed


@pytest.fixture(scope="module")
def transactions(shared_broker: BrokerProcess) -> Iterator[Transactions]:
    bootstrap = shared_broker.bootstrap
    suffix = uuid.uuid4().hex[:10]
    topic = f"t-{suffix}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2)], request_timeout=10)[topic].result(20)

    committed = _producer(bootstrap, f"tx-committed-{suffix}")
    committed.begin_transaction()
    _produce(committed, topic, [0])
    committed.commit_transaction(30)
    _producer(bootstrap, f"tx-empty-{suffix}")  # init_transactions() only

    opened = _producer(
        bootstrap, f"tx-open-{suffix}", **{"transaction.timeout.ms": OPEN_TIMEOUT_MS}
    )
    began = datetime.now(UTC) - timedelta(seconds=1)  # the broker's clock is this machine's
    opened.begin_transaction()
    _produce(opened, topic, [0, 1])  # AddPartitionsToTxn for both partitions went first
    try:
        yield Transactions(
            topic, f"tx-open-{suffix}", f"tx-committed-{suffix}", f"tx-empty-{suffix}", began
        )
    finally:
        try:
            opened.abort_transaction(30)
        except KafkaException as error:  # on a slow run the broker's timeout aborted it first
            if not error.args[0].fatal():
                raise


def _rows(result: Result) -> list[list[str]]:
    """The table's rows, header included, split on 2+ spaces."""
    return [re.split(r"\s{2,}", line.strip()) for line in result.out.splitlines() if line.strip()]


def _listed(sluice: Sluice, *args: str) -> dict[str, list[str]]:
    result = sluice("transactions", "list", *args)
    assert result.code == 0, str(result)
    rows = _rows(result)
    assert rows[0] == ["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"], result.out
    return {row[0]: row[1:] for row in rows[1:]}


def _described(sluice: Sluice, transactional_id: str) -> dict[str, str]:
    result = sluice("transactions", "describe", transactional_id)
    assert result.code == 0, str(result)
    fields = {row[0]: row[1] if len(row) > 1 else "" for row in _rows(result)}
    assert list(fields) == [
        "TRANSACTIONAL-ID", "STATE", "COORDINATOR", "PRODUCER-ID", "PRODUCER-EPOCH",
        "TIMEOUT-MS", "START-TIME", "PARTITIONS",
    ], result.out  # fmt: skip
    assert fields["TRANSACTIONAL-ID"] == transactional_id, result.out
    return fields


def test_list_shows_the_open_and_the_committed_transaction(
    sluice: Sluice, transactions: Transactions
) -> None:
    listed = _listed(sluice)
    assert transactions.open_id in listed, listed
    assert transactions.committed_id in listed, listed
    open_row, committed_row = listed[transactions.open_id], listed[transactions.committed_id]
    assert open_row[2] == "Ongoing", open_row
    assert committed_row[2] == "CompleteCommit", committed_row
    for row in (open_row, committed_row):
        assert row[0].isdigit() and row[1].isdigit(), f"coordinator and producer id: {row}"
    assert open_row[1] != committed_row[1], "two producers, two producer ids"


def test_describe_an_open_transaction(
    sluice: Sluice, bootstrap: str, transactions: Transactions
) -> None:
    fields = _described(sluice, transactions.open_id)
    assert fields["STATE"] == "Ongoing", fields
    assert re.fullmatch(rf"\d+ \({re.escape(bootstrap)}\)", fields["COORDINATOR"]), fields
    assert fields["PRODUCER-ID"] == _listed(sluice)[transactions.open_id][1], fields
    assert fields["PRODUCER-EPOCH"] == "0", f"a new transactional id starts at epoch 0: {fields}"
    assert fields["TIMEOUT-MS"] == str(OPEN_TIMEOUT_MS), fields
    assert fields["PARTITIONS"] == f"{transactions.topic}:0,1", fields
    started = datetime.fromisoformat(fields["START-TIME"])
    assert started.tzinfo is not None, f"UTC expected: {fields['START-TIME']}"
    now = datetime.now(UTC)
    assert transactions.began <= started <= now, (
        f"start time {started} not between {transactions.began} and {now}"
    )


def test_describe_a_committed_transaction(sluice: Sluice, transactions: Transactions) -> None:
    fields = _described(sluice, transactions.committed_id)
    assert fields["STATE"] == "CompleteCommit", fields
    assert fields["PRODUCER-ID"] == _listed(sluice)[transactions.committed_id][1], fields
    assert fields["TIMEOUT-MS"] == str(LIBRDKAFKA_TIMEOUT_MS), fields
    assert fields["PARTITIONS"] == "-", f"a completed transaction has no partitions: {fields}"


def test_describe_an_id_that_never_began_a_transaction(
    sluice: Sluice, transactions: Transactions
) -> None:
    assert _listed(sluice)[transactions.empty_id][2] == "Empty"
    fields = _described(sluice, transactions.empty_id)
    assert fields["STATE"] == "Empty", fields
    assert fields["START-TIME"] == "-", f"Kafka's start time -1 means none: {fields}"
    assert fields["PARTITIONS"] == "-", fields


def test_list_filters_by_state_and_producer_id(sluice: Sluice, transactions: Transactions) -> None:
    ongoing = _listed(sluice, "--state", "Ongoing")
    assert transactions.open_id in ongoing, ongoing
    assert transactions.committed_id not in ongoing, ongoing
    assert all(row[2] == "Ongoing" for row in ongoing.values()), ongoing

    done = _listed(sluice, "--state", "CompleteCommit", "--state", "CompleteAbort")
    assert transactions.committed_id in done, done
    assert transactions.open_id not in done, done

    producer_id = _listed(sluice)[transactions.open_id][1]
    assert list(_listed(sluice, "--producer-id", producer_id)) == [transactions.open_id]


def test_list_warns_of_a_state_the_broker_does_not_know(
    sluice: Sluice, transactions: Transactions
) -> None:
    result = sluice("transactions", "list", "--state", "Bogus")
    assert result.code == 0, str(result)
    assert _rows(result) == [["TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"]]
    assert "knows no transaction state 'Bogus'" in result.err, result.err


def test_bootstrap_server_option(run: Run, bootstrap: str, transactions: Transactions) -> None:
    result = run("transactions", "describe", transactions.open_id, "--bootstrap-server", bootstrap)
    assert result.code == 0, str(result)
    assert "Ongoing" in result.out, result.out


def test_describe_an_unknown_transactional_id(sluice: Sluice) -> None:
    result = sluice("transactions", "describe", "no-such-txn")
    assert result.code == 1, str(result)
    assert result.out == ""
    assert result.err == "error: transactional id 'no-such-txn' does not exist\n", result.err


def test_an_empty_transactional_id_is_a_usage_error(run: Run) -> None:
    result = run("transactions", "describe", "")
    assert result.code == 2, str(result)
    assert "a transactional id cannot be empty" in result.err, result.err


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("args", [["list"], ["describe", "t"]], ids=" ".join)
def test_unreachable_broker(run: Run, args: list[str]) -> None:
    address = f"127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    result = run("transactions", *args, "--bootstrap-server", address, timeout=30)
    assert result.code == 1, str(result)
    assert result.err == (
        f"error: cannot reach a broker at {address} (Connect to {address} failed: "
        "Connection refused); is it running? Set --bootstrap-server or SLUICE_BOOTSTRAP.\n"
    ), result.err
    assert time.monotonic() - started < 25
