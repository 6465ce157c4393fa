"""The transactional producer's calls, retried as librdkafka asks.

librdkafka's ``send_offsets_to_transaction`` and ``commit_transaction`` fail with a
*retriable* error when the transaction or group coordinator moved or a connection dropped
(its broker was killed, a leader election is under way): "the application may retry the
call", and the transaction stays open meanwhile. Kafka's Java producer retries such errors
itself until ``max.block.ms``; :func:`call_retrying` does the same for the stream thread, within
a time budget. An abortable or fatal error, or a retriable one past the budget, is raised as
it came.

>>> from confluent_kafka import KafkaException
>>> attempts = []
>>> gone = KafkaError(KafkaError._TRANSPORT, "coordinator gone", retriable=True)
>>> def flaky(timeout_s: float) -> None:
...     attempts.append(timeout_s)
...     if len(attempts) < 3:
...         raise KafkaException(gone)
>>> call_retrying(flaky, "commit the transaction", budget_s=30, backoff_s=0)
>>> len(attempts)
3
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from confluent_kafka import KafkaError

from sluice import clients

__all__ = ["CallHungError", "call_retrying", "call_within"]

log = logging.getLogger("sluice.streams")


def call_retrying(
    call: Callable[[float], object], what: str, budget_s: float, backoff_s: float = 0.1
) -> None:
    """``call(timeout_s)`` until it does not fail with a retriable error, for at most
    ``budget_s`` seconds in all (each attempt gets what is left, at least one second)."""

    def say(error: KafkaError) -> None:
        log.info("could not %s (%s); trying again", what, error.str())

    clients.retrying(
        call, KafkaError.retriable, budget_s, between=say, backoff_s=backoff_s, min_timeout_s=1.0
    )


class CallHungError(Exception):
    """A librdkafka call did not return in time; ``worker`` is the thread still inside it."""

    def __init__(self, message: str, worker: threading.Thread) -> None:
        super().__init__(message)
        self.worker = worker


def call_within(call: Callable[[float], object], timeout_s: float, wait_s: float) -> None:
    """``call(timeout_s)`` in a thread of its own, waited for ``wait_s`` at most;
    :class:`CallHungError` past that (the call goes on in its thread), else what it raised.

    For ``send_offsets_to_transaction``, which librdkafka 2.16 lets block past its timeout
    (librdkafka #5456) — for good when the group's coordinator left the metadata while it was
    dead (#5511: the request waits for that broker's thread, which is gone)."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call(timeout_s)
        except BaseException as error:  # handed to the caller
            raised.append(error)

    worker = threading.Thread(target=run, name="txn-call", daemon=True)
    worker.start()
    worker.join(wait_s)
    if worker.is_alive():
        raise CallHungError(f"no answer in {wait_s:.0f} s", worker)
    if raised:
        raise raised[0]
