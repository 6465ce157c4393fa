"""The stream thread's producer and its transactions (Kafka Streams' ``StreamsProducer``).

It sends through the thread's :class:`~sluice.streams.runtime.collector.KafkaCollector`. Under
exactly-once v2 it is transactional: :meth:`StreamsProducer.begin_if_needed` opens a transaction
before records are processed, :meth:`StreamsProducer.commit` adds the consumed offsets (with this
member's group metadata, which fences zombies by generation) and commits — each call retried
while librdkafka calls its error retriable (:mod:`~sluice.streams.runtime.txn_calls`) — and
raises :class:`~sluice.streams.runtime.membership.CommitFailedError` when the transaction's work
is lost but the thread can go on (an abortable error, or the producer fenced: its transaction
outlived ``transaction.timeout.ms`` while the process was paused).
:meth:`StreamsProducer.abort` then drops that work; a fenced producer is replaced by a new one
with the same ``transactional.id``, as Kafka Streams does under exactly-once v2. A record
refused outside a commit for the transaction's state
(:class:`~sluice.streams.runtime.collector.TransactionStateError`) is aborted the same way;
:meth:`StreamsProducer.abort` says whether the producer was fenced, which tells the thread's two
ways on apart.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from sluice.streams.config import StreamsConfig
from sluice.streams.runtime import thread_clients
from sluice.streams.runtime.collector import KafkaCollector
from sluice.streams.runtime.membership import CommitFailedError
from sluice.streams.runtime.txn_calls import CallHungError, call_retrying, call_within

__all__ = ["HUNG_CALL_GRACE_S", "TXN_CALL_BUDGET_S", "StreamsProducer"]

log = logging.getLogger("sluice.streams")

TXN_CALL_BUDGET_S = 60.0
"""How long a transactional call is retried while it fails with retriable errors (a moved
coordinator is found again within seconds; Kafka's ``max.block.ms`` is 60 s)."""

HUNG_CALL_GRACE_S = 5.0
"""How long past its timeout — and past ``transaction.timeout.ms``, after which the coordinator
has aborted the transaction anyway — ``send_offsets_to_transaction`` is waited for before its
producer is given up (librdkafka #5456, #5511: the call can block for good)."""


class StreamsProducer:
    """The thread's producer (see the module docstring); not thread-safe."""

    def __init__(self, config: StreamsConfig, process_id: str, collector: KafkaCollector) -> None:
        self._config = config
        self._process_id = process_id
        self._collector = collector
        self.in_transaction = False
        self._abandoned: list[tuple[Any, CallHungError]] = []
        """Producers given up while a call was still inside them, kept until it returns."""
        self.producer = self._make()

    def _make(self) -> Any:
        producer = thread_clients.producer(
            self._config, self._process_id, self._collector.on_delivery
        )
        self._collector.bind(producer)
        return producer

    def init(self) -> None:
        """Fence the previous holder of the ``transactional.id`` (exactly-once only)."""
        if self._config.exactly_once:
            self.producer.init_transactions(30)

    def begin_if_needed(self) -> None:
        if self._config.exactly_once and not self.in_transaction:
            self.producer.begin_transaction()
            self.in_transaction = True

    def commit(self, offsets: list[TopicPartition], group_metadata: Callable[[], Any]) -> None:
        """Add ``offsets`` to the open transaction and commit it (nothing without one)."""
        if not self.in_transaction:
            return
        if offsets:
            metadata = group_metadata()
            producer = self.producer
            longest = self._config.transaction_timeout_ms / 1000

            def send(timeout: float) -> None:
                call_within(
                    lambda t: producer.send_offsets_to_transaction(offsets, metadata, t),
                    timeout,
                    min(timeout, longest) + HUNG_CALL_GRACE_S,
                )

            try:
                self._call(send, "send the offsets to the transaction")
            except CallHungError as hung:
                self._give_up(hung)
        self._call(self.producer.commit_transaction, "commit the transaction")
        self.in_transaction = False

    def _give_up(self, hung: CallHungError) -> None:
        """Replace a producer stuck in ``send_offsets_to_transaction``: the new one's
        ``init_transactions`` fences it and has the coordinator abort its transaction; raises
        :class:`CommitFailedError` (the work since the last commit is lost)."""
        log.warning(
            "send_offsets_to_transaction did not return (%s; librdkafka #5456, #5511): "
            "a new producer takes over and fences this one",
            hung,
        )
        self._abandoned = [(p, h) for p, h in self._abandoned if h.worker.is_alive()]
        self._abandoned.append((self.producer, hung))
        self.in_transaction = False
        self.producer = self._make()
        self.producer.init_transactions(30)
        raise CommitFailedError(f"could not send the offsets to the transaction: {hung}")

    def _call(self, call: Callable[[float], object], what: str) -> None:
        try:
            call_retrying(call, what, TXN_CALL_BUDGET_S)
        except KafkaException as error:
            if not _transaction_lost(error):
                raise
            raise CommitFailedError(f"could not {what}: {error.args[0].str()}") from None

    def abort(self) -> bool:
        """Drop the open transaction's work; a fenced producer is replaced by a new one
        (then True: the group may have moved on, Kafka Streams' ``TaskMigratedException``).

        The abort is retried while librdkafka calls its error retriable (a coordinator moving),
        as a commit is. A producer that still cannot abort is replaced too: the new one's
        ``init_transactions`` fences it and has the coordinator abort its transaction (Kafka
        Streams swallows the abort's timeout and goes on with the same producer; librdkafka's
        would refuse the next transaction until its abort went through)."""
        if not self.in_transaction:
            return False
        fenced = False
        try:
            call_retrying(
                self.producer.abort_transaction, "abort the transaction", TXN_CALL_BUDGET_S
            )
        except KafkaException as error:
            if error.args[0].fatal():
                log.warning("the producer was fenced (%s): a new one takes over", error.args[0])
            else:
                log.warning(
                    "could not abort the transaction (%s): a new producer takes over and "
                    "fences this one",
                    error.args[0],
                )
            self.producer = self._make()
            self.producer.init_transactions(30)
            fenced = True
        self.in_transaction = False
        # the aborted records' delivery reports ("purged"): not output that was lost
        self.producer.flush(10)
        self._collector.failed.clear()
        return fenced

    def abort_quietly(self) -> None:
        """On an unclean shutdown: abort what is open, logging a failure rather than raising."""
        if self.in_transaction:
            try:
                self.producer.abort_transaction(10)
            except KafkaException as error:
                log.warning("abort on shutdown failed: %s", error)

    def flush(self, timeout_s: float) -> None:
        self.producer.flush(timeout_s)


def _transaction_lost(error: KafkaException) -> bool:
    """Whether a transactional call's error means the transaction's work is lost but the
    thread can go on: an abortable error, or the producer fenced."""
    kafka_error = error.args[0]
    return bool(kafka_error.txn_requires_abort()) or kafka_error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    )
