"""What the Streams runtime raises, and the handlers that decide what a bad record does.

The tree::

    SluiceError
    └── StreamsError              the application cannot go on
        ├── TopologyError         the topology cannot run as built (sluice.streams.topology)
        └── RecordError           one input record broke it; names topic, partition, offset
            ├── DeserializationError   its key or value could not be read
            └── ProcessingError        a user function raised on it

Handlers (``deserialization_exception_handler`` / ``processing_exception_handler`` of the
config) are ``"fail"`` (stop the application with the error: the default, Kafka's), ``"continue"``
(log, count, send the record to the dead-letter topic if one is set, go on) or a function
``handler(error) -> bool`` answering "go on?".

>>> str(ProcessingError("division by zero", "orders", 2, 41))
'orders[2]@41: division by zero'
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from sluice.errors import SluiceError

__all__ = [
    "DeserializationError",
    "ErrorHandler",
    "ProcessingError",
    "RecordError",
    "StreamsError",
    "TopologyError",
    "handler_from",
]


class StreamsError(SluiceError):
    """The stream processing application stopped (or cannot start)."""


class TopologyError(StreamsError):
    """The topology cannot run as built (a missing node, topics that are not co-partitioned…)."""


class RecordError(StreamsError):
    """One input record could not be handled; ``str()`` starts with ``topic[partition]@offset``."""

    def __init__(self, reason: str, topic: str, partition: int, offset: int) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        super().__init__(f"{topic}[{partition}]@{offset}: {reason}")


class DeserializationError(RecordError):
    """A key or value could not be deserialized."""


class ProcessingError(RecordError):
    """A processor (a user function) raised while handling the record."""


ErrorHandler = Callable[[RecordError], bool]
"""Answers "go on?" for a record that failed."""

HandlerSpec = Literal["fail", "continue"] | ErrorHandler


def _fail(error: RecordError) -> bool:
    return False


def _continue(error: RecordError) -> bool:
    return True


def handler_from(spec: HandlerSpec) -> ErrorHandler:
    """The handler for ``"fail"``, ``"continue"``, or the function itself."""
    if spec == "fail":
        return _fail
    if spec == "continue":
        return _continue
    if callable(spec):
        return spec
    raise StreamsError(f"unknown error handler {spec!r} (use 'fail', 'continue' or a function)")
