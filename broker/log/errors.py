"""What the partition log refuses, and the one outcome that is not a refusal.

The tree (each error carries the Kafka ``code`` the broker answers with)::

    SluiceError
    ├── LogError                          a request the log refuses
    │   ├── OffsetOutOfRangeError         read below the log start or past the log end   (1)
    │   ├── OutOfOrderSequenceError       a gap in an idempotent producer's sequence     (45)
    │   ├── InvalidProducerEpochError     a producer epoch older than the known one      (47)
    │   ├── UnknownProducerIdError        an unknown producer whose sequence is not 0    (59)
    │   └── RecordValidationError         records of a batch refused, each by index (87 or 32)
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

from collections.abc import Sequence
from dataclasses import dataclass

from sluice.errors import SluiceError

__all__ = [
    "DuplicateSequence",
    "InvalidProducerEpochError",
    "LogError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "RecordValidationError",
    "UnexpectedAppendOffsetError",
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


class UnexpectedAppendOffsetError(LogError):
    """Batches appended as a follower that do not continue the log (Kafka's
    ``UnexpectedAppendOffsetException``): the first does not start at the log end offset, or one
    does not follow the batch before it."""

    code = 1  # OFFSET_OUT_OF_RANGE: the follower must truncate or refetch


class OutOfOrderSequenceError(LogError):
    """An idempotent producer's batch does not follow its last sequence number."""

    code = 45


class InvalidProducerEpochError(LogError):
    """The producer epoch is older than the one the log knows: the producer was fenced."""

    code = 47


class UnknownProducerIdError(LogError):
    """The log knows nothing of this producer id and the batch does not start at sequence 0."""

    code = 59


INVALID_RECORD = 87
INVALID_TIMESTAMP = 32


class RecordValidationError(LogError):
    """Records of a batch that fail validation (Kafka's ``RecordValidationException``).

    The whole batch is refused, as Kafka's ``LogValidator`` does, but each bad record is named by
    its index in the batch with its own message (``record_errors``), which the Produce response
    (v8+) lists so that a client fails exactly those records. Collect every bad record of the
    batch before raising. ``code`` is INVALID_TIMESTAMP (32) when any record was refused for its
    timestamp (``invalid_timestamp=True``), else INVALID_RECORD (87); the message is Kafka's.

    >>> error = RecordValidationError([(1, "Compacted topic cannot accept message without key")])
    >>> error.code, error.record_errors
    (87, [(1, 'Compacted topic cannot accept message without key')])
    >>> str(error)  # doctest: +NORMALIZE_WHITESPACE
    "One or more records have been rejected due to 1 record errors in total, and only showing
    the first three errors at most: [RecordError(batchIndex=1,
    message='Compacted topic cannot accept message without key')]"
    >>> str(RecordValidationError([(0, "bad timestamp")], invalid_timestamp=True))
    'One or more records have been rejected due to invalid timestamp'
    """

    def __init__(
        self, record_errors: Sequence[tuple[int, str]], *, invalid_timestamp: bool = False
    ) -> None:
        self.record_errors = list(record_errors)
        """``(batch index, message)`` of each refused record, in batch order."""
        if invalid_timestamp:
            self.code = INVALID_TIMESTAMP
            message = "One or more records have been rejected due to invalid timestamp"
        else:
            self.code = INVALID_RECORD
            shown = ", ".join(
                f"RecordError(batchIndex={index}, message='{text}')"
                for index, text in self.record_errors[:3]
            )
            message = (
                f"One or more records have been rejected due to {len(self.record_errors)} "
                f"record errors in total, and only showing the first three errors at most: "
                f"[{shown}]"
            )
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class DuplicateSequence:
    """A batch already written by the same producer, epoch and sequence range.

    ``base_offset``/``last_offset`` are the offsets it was given the first time.
    """

    base_offset: int
    last_offset: int
    timestamp: int
