"""How :class:`StreamsProducer` goes on when librdkafka's transactional calls fail:
``abort_transaction`` retried while the error is retriable, and a producer that cannot abort
replaced by a new one (whose ``init_transactions`` fences it); a ``send_offsets_to_transaction``
that never returns (librdkafka #5456, #5511) given up after the transaction's timeout, its
producer replaced. These failures — a coordinator moving at the moment of the abort, a call
that blocks for good — cannot be made to happen on cue against a real broker, so librdkafka's
producer is stood in for by one that fails as told; the rest is the real
:class:`StreamsProducer` and :class:`KafkaCollector`."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from sluice.streams.config import StreamsConfig
from sluice.streams.runtime import streams_producer, thread_clients
from sluice.streams.runtime.collector import KafkaCollector
from sluice.streams.runtime.membership import CommitFailedError
from sluice.streams.runtime.streams_producer import StreamsProducer


class Producer:
    """The calls StreamsProducer makes; ``abort_failures`` are raised by the first aborts."""

    def __init__(self, abort_failures: list[KafkaError]) -> None:
        self.abort_failures = abort_failures
        self.calls: list[str] = []
        self.stuck: threading.Event | None = None
        """When set, ``send_offsets_to_transaction`` blocks until the event is."""

    def produce(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append("produce")

    def init_transactions(self, timeout: float) -> None:
        self.calls.append("init_transactions")

    def begin_transaction(self) -> None:
        self.calls.append("begin_transaction")

    def abort_transaction(self, timeout: float) -> None:
        self.calls.append("abort_transaction")
        if self.abort_failures:
            raise KafkaException(self.abort_failures.pop(0))

    def send_offsets_to_transaction(self, offsets: Any, metadata: Any, timeout: float) -> None:
        self.calls.append("send_offsets_to_transaction")
        if self.stuck is not None:
            self.stuck.wait(60)

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit_transaction")

    def flush(self, timeout: float) -> int:
        return 0


class Factory:
    """Stands in for ``thread_clients.producer``: the producers made, in order, each failing
    its aborts as ``failures`` says (one list per producer, the first for the first)."""

    def __init__(self) -> None:
        self.producers: list[Producer] = []
        self.failures: list[list[KafkaError]] = []

    def __call__(self, config: StreamsConfig, process_id: str, on_delivery: Any) -> Producer:
        producer = Producer(self.failures.pop(0) if self.failures else [])
        self.producers.append(producer)
        return producer


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[Factory]:
    factory = Factory()
    monkeypatch.setattr(thread_clients, "producer", factory)
    yield factory


def start(made: Factory, *first_aborts: KafkaError, **settings: Any) -> StreamsProducer:
    made.failures.append(list(first_aborts))
    output = StreamsProducer(
        StreamsConfig("app", processing_guarantee="exactly_once_v2", **settings),
        "process",
        KafkaCollector(lambda topic: 1),
    )
    output.init()
    output.begin_if_needed()
    return output


RETRIABLE = KafkaError(KafkaError._TRANSPORT, "coordinator gone", retriable=True)
STUCK = KafkaError(KafkaError._TIMED_OUT, "timed out: abort still in progress")
FENCED = KafkaError(KafkaError._FENCED, "fenced by a newer instance", fatal=True)


def test_a_retriable_abort_failure_is_retried_with_the_same_producer(
    made: Factory,
) -> None:
    output = start(made, RETRIABLE, RETRIABLE)
    assert output.abort() is False  # not fenced: the thread keeps its tasks' membership
    assert len(made.producers) == 1
    assert made.producers[0].calls.count("abort_transaction") == 3
    assert not output.in_transaction


@pytest.mark.parametrize("failure", [STUCK, FENCED], ids=["cannot-abort", "fenced"])
def test_a_producer_that_cannot_abort_is_replaced_and_fenced(
    made: Factory, failure: KafkaError
) -> None:
    output = start(made, failure)
    assert output.abort() is True  # the tasks are closed and the member joins again
    assert len(made.producers) == 2, "no new producer took over"
    assert output.producer is made.producers[1]
    assert made.producers[1].calls == [
        "init_transactions"
    ]  # fences the old one, aborts its transaction
    assert not output.in_transaction
    output.begin_if_needed()
    assert made.producers[1].calls[-1] == "begin_transaction"


def test_a_send_offsets_that_never_returns_gives_the_producer_up(
    made: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streams_producer, "HUNG_CALL_GRACE_S", 0.5)
    output = start(made, transaction_timeout_ms=1000)
    stuck = made.producers[0].stuck = threading.Event()
    try:
        began = time.monotonic()
        with pytest.raises(CommitFailedError, match="send the offsets"):
            output.commit([TopicPartition("in", 0, 5)], lambda: "group metadata")
        waited = time.monotonic() - began
        assert waited < 30, f"waited {waited:.1f} s: the transaction's timeout did not bound it"
        assert len(made.producers) == 2, "no new producer took over"
        assert output.producer is made.producers[1]
        assert made.producers[1].calls == ["init_transactions"]
        assert "commit_transaction" not in made.producers[0].calls
        assert not output.in_transaction
        assert output.abort() is False  # nothing left to abort: the thread rejoins
    finally:
        stuck.set()
