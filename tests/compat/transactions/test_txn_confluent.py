"""confluent-kafka (librdkafka) transactional producers against a real ``sluice broker start``.

- Committed transactions are visible to read_committed consumers, aborted ones never;
  read_uncommitted consumers see both; an open transaction holds the last stable offset (LSO) at
  its first record, and read_committed consumers stop there until it commits.
- A second producer with the same ``transactional.id`` fences the first: the first's transaction
  (open or not yet begun) can never commit, and it ends in a fatal fenced error.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from tests.compat.transactions.conftest import (
    TIMEOUT,
    offsets,
    produce_plain,
    read_topic,
    settle,
    transactional_producer,
    unique,
    values,
)
from tests.conftest import create_topic

# kafka-python 3.0.12 loads its protocol schemas with the deprecated importlib.resources
# read_text/open_text, at import time and whenever a schema module loads lazily.
READ_TEXT = "(read|open)_text is deprecated"
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", READ_TEXT, DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaPythonTopicPartition

pytestmark = pytest.mark.filterwarnings(f"ignore:{READ_TEXT}:DeprecationWarning")

PARTITIONS = 2
FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


class Delivered:
    """Delivery reports: ``(partition, offset)`` of each value, and the errors."""

    def __init__(self) -> None:
        self.at: dict[bytes, tuple[int, int]] = {}
        self.errors: list[str] = []

    def __call__(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(f"{msg.value()!r}: {err}")
        else:
            self.at[msg.value()] = (msg.partition(), msg.offset())


def produce_txn(producer: Producer, topic: str, tag: str, delivered: Delivered) -> list[bytes]:
    """Produce five values over both partitions and flush them (they are on the broker)."""
    sent = [f"{tag}-{i}".encode() for i in range(5)]
    for i, value in enumerate(sent):
        producer.produce(topic, value=value, partition=i % PARTITIONS, on_delivery=delivered)
    left = producer.flush(TIMEOUT)
    assert left == 0 and not delivered.errors, (
        f"transaction {tag}: {left} undelivered; errors {delivered.errors[:5]}"
    )
    return sent


def by_partition(sent: list[bytes], delivered: Delivered) -> dict[int, list[bytes]]:
    """The values in log order per partition."""
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for value in sorted(sent, key=lambda v: delivered.at[v]):
        out[delivered.at[value][0]].append(value)
    return out


def read_kafka_python(bootstrap: str, topic: str, count: int) -> dict[int, list[bytes]]:
    """kafka-python, read_committed: ``count`` records, then nothing more for a second."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.assign([KafkaPythonTopicPartition(topic, p) for p in range(PARTITIONS)])
        deadline = time.monotonic() + TIMEOUT
        extra_until = None
        while time.monotonic() < deadline:
            for tp, records in consumer.poll(timeout_ms=200).items():
                got[tp.partition].extend(r.value for r in records)
            total = sum(len(v) for v in got.values())
            if total >= count and extra_until is None:
                extra_until = time.monotonic() + 1.0
            if extra_until is not None and time.monotonic() > extra_until:
                break
    finally:
        consumer.close()
    return got


def test_committed_visible_aborted_never(bootstrap: str) -> None:
    topic = create_topic(bootstrap, PARTITIONS)
    producer = transactional_producer(bootstrap, unique("tid"))
    delivered = Delivered()
    committed: list[bytes] = []
    everything: list[bytes] = []
    for tag, end in [("c1", "commit"), ("a1", "abort"), ("c2", "commit"), ("a2", "abort")]:
        producer.begin_transaction()
        sent = produce_txn(producer, topic, tag, delivered)
        everything += sent
        if end == "commit":
            producer.commit_transaction(TIMEOUT)
            committed += sent
        else:
            producer.abort_transaction(TIMEOUT)
        if tag == "a1":  # records outside any transaction between them: always visible
            plain = [(p, None, f"plain-{p}".encode()) for p in range(PARTITIONS)]
            produce_plain(bootstrap, topic, plain)
    settle(bootstrap, topic, PARTITIONS)
    plain_values = {p: [f"plain-{p}".encode()] for p in range(PARTITIONS)}

    def expected(kept: list[bytes]) -> dict[int, list[bytes]]:
        """``kept`` per partition in log order, the plain record after the first two."""
        split = by_partition(kept, delivered)
        out = {}
        for p in range(PARTITIONS):
            early = [v for v in split[p] if v.startswith((b"c1", b"a1"))]
            out[p] = early + plain_values[p] + split[p][len(early) :]
        return out

    got = values(read_topic(bootstrap, topic, PARTITIONS, "read_committed"))
    assert got == expected(committed), "read_committed must see the committed transactions only"
    got = values(read_topic(bootstrap, topic, PARTITIONS, "read_uncommitted"))
    assert got == expected(everything), "read_uncommitted must see every transaction's records"

    # An open transaction: the LSO stays at its first record until it ends.
    producer.begin_transaction()
    open_values = produce_txn(producer, topic, "o1", delivered)
    high = offsets(bootstrap, topic, PARTITIONS, committed=False)
    stable = offsets(bootstrap, topic, PARTITIONS, committed=True)
    first_open = {
        p: min(o for v, (q, o) in delivered.at.items() if q == p and v in open_values)
        for p in range(PARTITIONS)
    }
    assert stable == first_open, (
        f"with a transaction open the LSO must be its first offset {first_open}, got {stable} "
        f"(high watermarks {high})"
    )
    got = values(read_topic(bootstrap, topic, PARTITIONS, "read_committed"))
    assert got == expected(committed), "read_committed must stop before the open transaction"
    got = values(read_topic(bootstrap, topic, PARTITIONS, "read_uncommitted"))
    assert got == expected(everything + open_values), "read_uncommitted sees the open records"

    producer.commit_transaction(TIMEOUT)
    committed += open_values
    ends = settle(bootstrap, topic, PARTITIONS)
    assert ends == {p: high[p] + 1 for p in range(PARTITIONS)}, (
        f"after the commit the LSO and high watermark are {ends}; expected one commit marker "
        f"after the open transaction's records (high watermarks were {high})"
    )
    got = values(read_topic(bootstrap, topic, PARTITIONS, "read_committed"))
    assert got == expected(committed), "read_committed after the commit of the open transaction"
    got_kp = read_kafka_python(bootstrap, topic, sum(len(v) for v in expected(committed).values()))
    assert got_kp == expected(committed), "kafka-python read_committed differs"


@pytest.mark.parametrize("when", ["open", "idle"])
def test_second_producer_fences_the_first(bootstrap: str, when: str) -> None:
    """``open``: the first producer has a transaction with records on the broker when the second
    one initialises (its transaction is aborted); ``idle``: it has just committed one."""
    topic = create_topic(bootstrap, PARTITIONS)
    txn_id = unique("fenced")
    first = transactional_producer(bootstrap, txn_id)
    delivered = Delivered()
    first.begin_transaction()
    first_values = produce_txn(first, topic, "first", delivered)
    if when == "idle":
        first.commit_transaction(TIMEOUT)

    second = transactional_producer(bootstrap, txn_id)  # InitProducerId bumps the epoch

    failures: list[KafkaError] = []
    try:
        if when == "idle":
            first.begin_transaction()
        first.produce(topic, value=b"zombie", partition=0)
        first.flush(TIMEOUT)
        first.commit_transaction(TIMEOUT)
    except KafkaException as exc:
        failures.append(exc.args[0])
    else:
        raise AssertionError(
            "the fenced producer committed a transaction after a second producer with its "
            "transactional.id initialised"
        )
    if not failures[-1].fatal() and failures[-1].txn_requires_abort():
        try:  # an abortable error first: the abort must then tell it is fenced
            first.abort_transaction(TIMEOUT)
        except KafkaException as exc:
            failures.append(exc.args[0])
    last = failures[-1]
    assert last.fatal() and last.code() in FENCED, (
        f"the fenced producer's transaction failed with {[str(f) for f in failures]}; expected "
        f"a fatal error with code _FENCED / PRODUCER_FENCED / INVALID_PRODUCER_EPOCH"
    )

    second.begin_transaction()
    second_values = produce_txn(second, topic, "second", delivered)
    second.commit_transaction(TIMEOUT)
    settle(bootstrap, topic, PARTITIONS)
    visible = first_values + second_values if when == "idle" else second_values
    got = values(read_topic(bootstrap, topic, PARTITIONS, "read_committed"))
    assert got == by_partition(visible, delivered), (
        "read_committed must see the second producer's transaction"
        + (" after the first's committed one" if when == "idle" else ", not the fenced one's")
    )
    everything = values(read_topic(bootstrap, topic, PARTITIONS, "read_uncommitted"))
    assert b"zombie" not in everything[0], "the fenced producer's record reached the log"
