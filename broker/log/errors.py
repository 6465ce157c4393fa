"""What the partition log refuses, and the one outcome that is not a refusal.

The tree (each error carries the Kafka ``code`` the broker answers with)::

    SluiceError
    ├── LogError                          a request the log refuses
    │   ├── OffsetOutOfRangeError         read below the log start or past the log end   (1)
    │   ├── OutOfOrderSequenceError       a gap in an idempotent producer's sequence     (45)
    │   ├── InvalidProducerEpochError     a producer epoch older than the known one      (47)
    │   └── UnknownProducerIdError        an unknown producer whose sequence is not 0    (59)
    └── StorageError                      (sluice.errors) the disk failed; the log stays readable
        └── CorruptRecordError            bytes on disk that fail validation

:class:`DuplicateSequence` is not an error: a retried batch that was already written. The log
answers it with the offsets the batch got the first time (``AppendResult.duplicate``).

>>> OffsetOutOfRangeError(7, log_start_offset=10, log_end_offset=20).code
1
>>> str(OutOfOrderSequenceError("expected sequence 5, got 7"))
'expected sequence 5, got 7'
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.errors import SluiceError

__all__ = [
    "DuplicateSequence",
    "InvalidProducerEpochError",
    "LogError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "UnknownProducerIdError",
]


class LogError(SluiceError):
    """A request the partition log refuses; ``code`` is Kafka's error code for it."""

    code: int = -1


class OffsetOutOfRangeError(LogError):
    """The offset lies below the log start offset or past the log end offset."""

    code = 1

    def __init__(self, offset: int, *, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class OutOfOrderSequenceError(LogError):
    """An idempotent producer's batch does not follow its last sequence number."""

    code = 45


class InvalidProducerEpochError(LogError):
    """The producer epoch is older than the one the log knows: the producer was fenced."""

    code = 47


class UnknownProducerIdError(LogError):
    """The log knows nothing of this producer id and the batch does not start at sequence 0."""

    code = 59


@dataclass(frozen=True, slots=True)
class DuplicateSequence:
    """A batch already written by the same producer, epoch and sequence range.

    ``base_offset``/``last_offset`` are the offsets it was given the first time.
    """

    base_offset: int
    last_offset: int
    timestamp: int
