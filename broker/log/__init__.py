"""The partition log: Kafka's storage design (segments, sparse indexes, retention, compaction).

A partition is a directory of segments (``00000000000000000000.log`` + ``.index`` +
``.timeindex``), idempotent-producer snapshots and small checkpoint files; every module states
its own on-disk format and crash behaviour:

==================  ==========================================================================
module              concept
==================  ==========================================================================
``log``             :class:`Log`: append, read, offsets by time, DeleteRecords, flush, close
``segment``         one ``.log`` file with its indexes; recovery of a torn or corrupt tail
``offset_index``    sparse offset → position entries
``time_index``      sparse timestamp → offset entries
``producer_state``  idempotent producer sequences and epochs, ``.snapshot`` files
``loader``          what opening a directory repairs after a crash
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
    UnknownProducerIdError,
)
from sluice.broker.log.log import AppendResult, Log, ReadResult
from sluice.broker.log.producer_state import ProducerState

__all__ = [
    "AppendResult",
    "DuplicateSequence",
    "InvalidProducerEpochError",
    "Log",
    "LogConfig",
    "LogError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
    "ProducerState",
    "ReadResult",
    "UnknownProducerIdError",
]
