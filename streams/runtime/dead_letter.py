"""Dead-letter records (KIP-1034): a skipped input record as read, and why it was skipped.

With ``errors.deadletterqueue.topic.name`` (``dead_letter_topic``) set, a record that a handler
skips is written to that topic: its key and value as they were read (bytes, untouched), its
timestamp, its own headers, then Kafka's context headers, in Kafka's order
(``ExceptionHandlerUtils``), each a UTF-8 string:

==============================  ===========================================================
``__streams.errors.exception``  the exception's class (``orjson.JSONDecodeError``,
                                ``KeyError``: the module is left out for builtins)
``__streams.errors.message``    ``str()`` of the exception
``__streams.errors.stacktrace`` the Python traceback
``__streams.errors.topic``      where the record was read
``__streams.errors.partition``
``__streams.errors.offset``
==============================  ===========================================================

The runtime and the test driver both build them here.

>>> from sluice.streams.errors import ProcessingError
>>> error = ProcessingError("processing failed", "orders", 0, 7, exception=KeyError("id"))
>>> for name, value in dead_letter_headers(error):
...     print(name, value)
__streams.errors.exception b'KeyError'
__streams.errors.message b"'id'"
__streams.errors.stacktrace b"KeyError: 'id'\\n"
__streams.errors.topic b'orders'
__streams.errors.partition b'0'
__streams.errors.offset b'7'
"""

from __future__ import annotations

import traceback

from sluice.streams.errors import RecordError
from sluice.streams.record import Headers

__all__ = [
    "EXCEPTION",
    "MESSAGE",
    "OFFSET",
    "PARTITION",
    "STACKTRACE",
    "TOPIC",
    "dead_letter_headers",
    "exception_name",
]

EXCEPTION = "__streams.errors.exception"
MESSAGE = "__streams.errors.message"
STACKTRACE = "__streams.errors.stacktrace"
TOPIC = "__streams.errors.topic"
PARTITION = "__streams.errors.partition"
OFFSET = "__streams.errors.offset"


def exception_name(exception: BaseException) -> str:
    """``module.Class`` of ``exception`` (only ``Class`` for builtins, as tracebacks show)."""
    kind = type(exception)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def dead_letter_headers(error: RecordError) -> Headers:
    """The record's own headers, then the six context headers of the module docstring."""
    exception = error.exception if error.exception is not None else error
    stacktrace = "".join(traceback.format_exception(exception))
    return (
        *error.headers,
        (EXCEPTION, exception_name(exception).encode()),
        (MESSAGE, str(exception).encode()),
        (STACKTRACE, stacktrace.encode()),
        (TOPIC, error.topic.encode()),
        (PARTITION, str(error.partition).encode()),
        (OFFSET, str(error.offset).encode()),
    )
