"""What the Streams runtime raises, and the handlers that decide what a bad record does.

The tree::

    SluiceError
    └── StreamsError              the application cannot go on
        ├── TopologyError         the topology cannot run as built (sluice.streams.topology)
        └── RecordError           one input record broke it; names topic, partition, offset
            ├── DeserializationError   its key or value could not be read
            ├── ProcessingError        a user function raised on it
            └── ProductionError        what it produced could not be serialized or sent

Three handlers decide, as Kafka Streams' do (``default.deserialization.exception.handler``,
``processing.exception.handler`` of KIP-1033, ``default.production.exception.handler``), whether
the application fails on such a record or skips it. Each is given by name — ``"log_and_fail"``
(the default; ``"fail"``), ``"log_and_continue"`` (``"continue"``) or Kafka's class name
(``LogAndContinueExceptionHandler``, ``LogAndFailProcessingExceptionHandler``,
``DefaultProductionExceptionHandler``…) — or as a Python function ``handler(error) -> bool``
(or an object with such a ``handle`` method) answering "go on?"; the error it gets carries the
record's ``topic``, ``partition``, ``offset``, ``timestamp``, ``headers``, its bytes as read
(``raw_key``, ``raw_value``) and the original ``exception``.

>>> str(ProcessingError("division by zero", "orders", 2, 41))
'orders[2]@41: division by zero'
>>> handler = handler_from("LogAndContinueProcessingExceptionHandler", "processing")
>>> handler(ProcessingError("boom", "orders", 0, 7))
True
>>> handler_from("LogAndContinueExceptionHandler", "processing")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
sluice.streams.errors.StreamsError: unknown processing exception handler 'LogAndContinue...
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from sluice.errors import SluiceError

__all__ = [
    "DeserializationError",
    "ErrorHandler",
    "HandlerKind",
    "HandlerSpec",
    "ProcessingError",
    "ProductionError",
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
    """One input record could not be handled; ``str()`` starts with ``topic[partition]@offset``.

    Besides where it came from, it carries what Kafka's ``ErrorHandlerContext`` shows: the
    record's ``timestamp`` and ``headers``, its key and value as read (``raw_key``,
    ``raw_value``: what a dead-letter record holds) and the task (``task_id``, ``"0_1"``);
    ``exception`` is the original exception (also ``__cause__``).
    """

    def __init__(
        self,
        reason: str,
        topic: str,
        partition: int,
        offset: int,
        *,
        exception: BaseException | None = None,
        timestamp: int = -1,
        headers: tuple[tuple[str, bytes | None], ...] = (),
        raw_key: bytes | None = None,
        raw_value: bytes | None = None,
        task_id: str = "",
    ) -> None:
        self.reason = reason
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.exception = exception
        self.timestamp = timestamp
        self.headers = headers
        self.raw_key = raw_key
        self.raw_value = raw_value
        self.task_id = task_id
        super().__init__(f"{topic}[{partition}]@{offset}: {reason}")
        if exception is not None:
            self.__cause__ = exception


class DeserializationError(RecordError):
    """A key or value could not be deserialized (or the timestamp extractor raised)."""


class ProcessingError(RecordError):
    """A processor (a user function) raised while handling the record."""


class ProductionError(RecordError):
    """An output record made from it could not be serialized or handed to the producer."""


ErrorHandler = Callable[[RecordError], bool]
"""Answers "go on?" for a record that failed."""

HandlerKind = Literal["deserialization", "processing", "production"]

HandlerSpec = str | Callable[[RecordError], Any] | Any
"""A handler's name, a function ``handler(error) -> bool``, or an object with ``handle``."""

_KAFKA_PACKAGE = "org.apache.kafka.streams.errors."
_FAIL = ("log_and_fail", "fail")
_CONTINUE = ("log_and_continue", "continue")
_KAFKA_CLASSES: dict[HandlerKind, dict[str, bool]] = {
    "deserialization": {
        "LogAndFailExceptionHandler": False,
        "LogAndContinueExceptionHandler": True,
    },
    "processing": {
        "LogAndFailProcessingExceptionHandler": False,
        "LogAndContinueProcessingExceptionHandler": True,
    },
    "production": {"DefaultProductionExceptionHandler": False},
}


def _fail(error: RecordError) -> bool:
    return False


def _continue(error: RecordError) -> bool:
    return True


def handler_from(spec: HandlerSpec, kind: HandlerKind) -> ErrorHandler:
    """The ``kind`` handler named (or given) by ``spec``; see the module docstring.

    A user's handler is wrapped: it must answer ``True``/``False`` (or ``"continue"``/
    ``"fail"``, Kafka's response names), and what it raises stops the application naming the
    record it was asked about.
    """
    if isinstance(spec, str):
        name = spec.removeprefix(_KAFKA_PACKAGE)
        goes_on = _KAFKA_CLASSES[kind].get(name)
        if goes_on is None and spec.lower() in (*_FAIL, *_CONTINUE):
            goes_on = spec.lower() in _CONTINUE
        if goes_on is None:
            classes = ", ".join(_KAFKA_CLASSES[kind])
            raise StreamsError(
                f"unknown {kind} exception handler {spec!r}: use 'log_and_fail', "
                f"'log_and_continue', {classes}, or a function handler(error) -> bool"
            )
        return _continue if goes_on else _fail
    handle = getattr(spec, "handle", None)
    if not callable(handle):
        handle = spec if callable(spec) else None
    if handle is None:
        raise StreamsError(
            f"the {kind} exception handler must be a name, a function handler(error) -> bool "
            f"or an object with a handle(error) method, not {spec!r}"
        )
    return _UserHandler(kind, handle)


class _UserHandler:
    """A user's handler: its answer checked, what it raises made a clear error."""

    __slots__ = ("handle", "kind")

    def __init__(self, kind: HandlerKind, handle: Callable[[RecordError], Any]) -> None:
        self.kind = kind
        self.handle = handle

    def __call__(self, error: RecordError) -> bool:
        try:
            answer = self.handle(error)
        except Exception as raised:
            raise StreamsError(
                f"the {self.kind} exception handler raised {raised!r} on "
                f"{error.topic}[{error.partition}]@{error.offset} ({error.reason})"
            ) from raised
        if answer is True or answer is False:
            return answer
        if isinstance(answer, str) and answer.lower() in ("continue", "fail"):
            return answer.lower() == "continue"
        raise StreamsError(
            f"the {self.kind} exception handler answered {answer!r} on "
            f"{error.topic}[{error.partition}]@{error.offset}: it must return True (continue) "
            f"or False (fail)"
        )
