"""The transactional producer's calls, retried as librdkafka asks.

librdkafka's ``send_offsets_to_transaction`` and ``commit_transaction`` fail with a
*retriable* error when the transaction or group coordinator moved or a connection dropped
(its broker was killed, a leader election is under way): "the application may retry the
call", and the transaction stays open meanwhile. Kafka's Java producer retries such errors
itself until ``max.block.ms``; :func:`call_retrying` does the same for the stream thread, within
a time budget. An abortable or fatal error, or a retriable one past the budget, is raised as
it came.

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
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException

__all__ = ["call_retrying"]

log = logging.getLogger("sluice.streams")


def call_retrying(
    call: Callable[[float], object], what: str, budget_s: float, backoff_s: float = 0.1
) -> None:
    """``call(timeout_s)`` until it does not fail with a retriable error, for at most
    ``budget_s`` seconds in all (each attempt gets what is left, at least one second)."""
    deadline = time.monotonic() + budget_s
    while True:
        try:
            call(max(1.0, deadline - time.monotonic()))
            return
        except KafkaException as exc:
            error: KafkaError = exc.args[0]
            if not error.retriable() or time.monotonic() + backoff_s >= deadline:
                raise
            log.info("could not %s (%s); trying again", what, error.str())
            time.sleep(backoff_s)
