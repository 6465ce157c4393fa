"""A transaction left open past its ``transaction.timeout.ms`` is aborted by the broker.

A producer process (``txn_worker.py hang``, confluent-kafka, ``transaction.timeout.ms=5000``) begins
a transaction, produces records that the broker acknowledges, and is killed -9. Until the
transaction ends, the partition's last stable offset (LSO) stays at its first record, and a
transaction that another producer commits after it stays invisible to read_committed consumers.
The broker (which looks for timed-out transactions every second, see ``TXN_CONFIG``) aborts it
on its own: an abort marker follows, the LSO reaches the high watermark, read_committed
consumers see the later committed records and never the aborted ones, and the transactional id
can be used again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.compat.transactions.conftest import (
    TIMEOUT,
    Worker,
    offsets,
    produce_plain,
    read_topic,
    settle,
    transactional_producer,
    unique,
    values,
    wait_until,
)
from tests.conftest import create_topic

TXN_TIMEOUT_MS = 5000


def commit_values(bootstrap: str, txn_id: str, topic: str, tag: str, n: int) -> list[bytes]:
    producer = transactional_producer(bootstrap, txn_id)
    producer.begin_transaction()
    sent = [f"{tag}-{i}".encode() for i in range(n)]
    for value in sent:
        producer.produce(topic, value=value, partition=0)
    producer.commit_transaction(TIMEOUT)
    return sent


def test_open_transaction_is_aborted_after_its_timeout(
    bootstrap: str, workers: Callable[..., Worker]
) -> None:
    topic = create_topic(bootstrap, 1)
    before = [b"before-0", b"before-1"]
    produce_plain(bootstrap, topic, [(0, None, v) for v in before])
    txn_id = unique("hang")
    hanger = workers(
        "hang",
        [
            "hang",
            f"--bootstrap={bootstrap}",
            f"--txn-id={txn_id}",
            f"--txn-timeout-ms={TXN_TIMEOUT_MS}",
            f"--topic={topic}",
            "--count=10",
        ],
    ).start()
    opened = wait_until(
        lambda: [e for e in hanger.events() if e.ev == "open"],
        20,
        lambda: f"the producer never opened its transaction\n{hanger.tail()}",
    )
    assert opened[0].fields["left"] == 0, f"its records were not acknowledged\n{hanger.tail()}"
    opened_at = time.monotonic()

    later = commit_values(bootstrap, unique("other"), topic, "later", 5)
    high = offsets(bootstrap, topic, 1, committed=False)[0]
    stable = offsets(bootstrap, topic, 1, committed=True)[0]
    assert (stable, high) == (2, 2 + 10 + 5 + 1), (
        f"with a transaction open at offset 2 (10 records) and a committed one after it "
        f"(5 records and a marker), expected LSO 2 and high watermark 18; got LSO {stable}, "
        f"high watermark {high} ({time.monotonic() - opened_at:.1f}s after it opened)"
    )
    got = values(read_topic(bootstrap, topic, 1, "read_committed"))
    assert got == {0: before}, "read_committed must stop at the open transaction (the LSO)"

    hanger.kill()
    ends = settle(bootstrap, topic, 1, timeout=TXN_TIMEOUT_MS / 1000 + 20)
    assert ends == {0: high + 1}, (
        f"after the timeout the LSO and high watermark are {ends[0]}; expected {high + 1}: the "
        f"abort marker after the committed transaction's marker"
    )
    got = values(read_topic(bootstrap, topic, 1, "read_committed"))
    assert got == {0: before + later}, (
        "read_committed must see the later committed transaction, not the timed-out one"
    )
    opened_values = [f"open-{i}".encode() for i in range(10)]
    got = values(read_topic(bootstrap, topic, 1, "read_uncommitted"))
    assert got == {0: before + opened_values + later}, "read_uncommitted sees every record"

    # the transactional id is usable again (its epoch was bumped by the abort)
    after = commit_values(bootstrap, txn_id, topic, "after", 3)
    settle(bootstrap, topic, 1)
    got = values(read_topic(bootstrap, topic, 1, "read_committed"))
    assert got == {0: before + later + after}, "the id's next transaction must commit"
