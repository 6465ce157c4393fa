"""``transactional.id.expiration.ms`` against a real broker process (a short expiration from its
config): an idle transactional id disappears from ListTransactions and stays gone after a
restart (a tombstone in ``__transaction_state``), while one with a transaction in progress
stays."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from kio.schema.list_transactions.v0.request import ListTransactionsRequest

from tests.broker.conftest import Wire, create_topic
from tests.conftest import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WAIT = 30.0


def listed(bootstrap: str) -> dict[str, str]:
    """``{transactional id: state}`` from ListTransactions."""
    with Wire(bootstrap) as wire:
        response = wire.request(ListTransactionsRequest(state_filters=(), producer_id_filters=()))
    assert response.error_code == 0
    return {t.transactional_id: t.transaction_state for t in response.transaction_states}


def transactional(bootstrap: str, txn_id: str) -> Producer:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": txn_id,
            "transaction.timeout.ms": 120_000,
        }
    )
    producer.init_transactions(20)
    producer.begin_transaction()
    return producer


def test_idle_transactional_ids_expire_and_stay_expired_after_a_restart(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    proc = broker_factory(
        **{
            "transactional.id.expiration.ms": "3000",
            "transaction.remove.expired.transaction.cleanup.interval.ms": "300",
        }
    )
    bootstrap = proc.bootstrap
    create_topic(bootstrap, "txn-expiry")
    idle = transactional(bootstrap, "idle-id")
    idle.produce("txn-expiry", value=b"committed")
    idle.commit_transaction(20)
    busy = transactional(bootstrap, "busy-id")
    busy.produce("txn-expiry", value=b"open")
    assert busy.flush(20) == 0
    assert listed(bootstrap) == {"idle-id": "CompleteCommit", "busy-id": "Ongoing"}

    deadline = time.monotonic() + WAIT
    while "idle-id" in listed(bootstrap) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert listed(bootstrap) == {"busy-id": "Ongoing"}, "the idle id did not expire in time"

    proc.stop()
    proc.start()
    assert listed(bootstrap) == {"busy-id": "Ongoing"}, "the expired id came back after a restart"
    assert "expired transactional id idle-id" in proc.log_text()
    busy.abort_transaction(20)
    again = transactional(bootstrap, "idle-id")  # an expired id starts afresh
    again.abort_transaction(20)
