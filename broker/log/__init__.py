"""The partition log: Kafka's storage design (segments, sparse indexes, retention, compaction).

A partition is a directory of segments (``00000000000000000000.log`` + ``.index`` +
``.timeindex`` + ``.txnindex``), idempotent-producer snapshots and small checkpoint files; every
module states its own on-disk format and crash behaviour:

==================  ==========================================================================
module              concept
==================  ==========================================================================
``log``             :class:`Log`: append, read, roll, DeleteRecords, retention, flush, close;
                    append as a follower, truncation
``transactions``    transaction markers, last stable offset, aborted transactions, producer
                    state at open (mixed into :class:`Log`)
``timestamps``      offsets by time (ListOffsets)
``flusher``         rolled segments flushed off the event loop; the recovery point
``segment``         one ``.log`` file with its indexes; recovery of a torn or corrupt tail
``scan``            reading a segment file's batches in blocks (headers, or whole batches)
``index``           what both sparse indexes share
``offset_index``    sparse offset → position entries
``time_index``      sparse timestamp → offset entries
``txn_index``       aborted transactions whose markers a segment holds
``markers``         commit/abort control batches (Kafka's ``EndTransactionMarker``)
``producer_state``  producer sequences, epochs, open transactions, ``.snapshot`` files
``epochs``          the partition's leader epoch and the start offset of each epoch in the log
                    (``leader-epoch-checkpoint``, OffsetForLeaderEpoch's answers)
``loader``          what opening a directory repairs after a crash
``incoming``        what an append checks of the batches it is given (a follower's: whole,
                    intact, contiguous); abort markers
``truncation``      cutting the log back to an offset (a follower's divergent tail), crash-safe
``retention``       which old segments ``retention.ms``/``retention.bytes`` delete
``cleaner``         compaction (``cleanup.policy=compact``)
``files``           file names, atomic small-file writes
``config``          :class:`LogConfig`, the topic keys the log obeys
``errors``          what the log refuses (with Kafka error codes)
==================  ==========================================================================

Thread-safety: none. The broker drives each log from its asyncio loop, one call at a time.
"""

from sluice.broker.log.config import LogConfig
from sluice.broker.log.errors import (
    DuplicateSequence,
    InvalidProducerEpochError,
    LogError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    UnexpectedAppendOffsetError,
    UnknownProducerIdError,
)
from sluice.broker.log.log import AppendResult, Log, ReadResult
from sluice.broker.log.markers import EndTransactionMarker
from sluice.broker.log.producer_state import ProducerState
from sluice.broker.log.txn_index import AbortedTxn

__all__ = [
    "AbortedTxn",
    "AppendResult",
    "DuplicateSequence",
    "EndTransactionMarker",
    "InvalidProducerEpochError",
    "Log",
    "LogConfig",
    "LogError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "ProducerState",
    "ReadResult",
    "UnexpectedAppendOffsetError",
    "UnknownProducerIdError",
]
