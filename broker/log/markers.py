"""Transaction markers: the control batches that end a transaction on a partition.

A marker is a v2 batch with the transactional and control attribute bits, the producer id and
epoch of the transaction, base sequence -1 and one record, Kafka's ``EndTransactionMarker``
(big-endian)::

    key     version  int16   0
            type     int16   0 ABORT, 1 COMMIT
    value   version  int16   0
            coordinator_epoch  int32

>>> from sluice.broker.records.batch import read_header
>>> raw = encode_marker(producer_id=7, producer_epoch=2, commit=False, coordinator_epoch=5,
...                     timestamp=1_000)
>>> header = read_header(raw)
>>> header.is_control, header.is_transactional, header.producer_id, header.base_sequence
(True, True, 7, -1)
>>> decode_marker(raw, header)
EndTransactionMarker(commit=False, coordinator_epoch=5)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from sluice.broker.records.batch import BatchHeader, InvalidBatchError
from sluice.broker.records.codec import Record, decode_records, encode_batch

__all__ = ["ABORT", "COMMIT", "EndTransactionMarker", "decode_marker", "encode_marker"]

ABORT = 0
COMMIT = 1
_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """What a control batch says: the transaction committed or aborted."""

    commit: bool
    coordinator_epoch: int


def encode_marker(
    *, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, timestamp: int
) -> bytes:
    """The control batch of a commit or abort marker (base offset 0: the log assigns it)."""
    record = Record(
        0,
        0,
        _KEY.pack(0, COMMIT if commit else ABORT),
        _VALUE.pack(0, coordinator_epoch),
    )
    return encode_batch(
        base_offset=0,
        records=[record],
        compression=0,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        is_transactional=True,
        is_control=True,
    )


def decode_marker(buf: bytes | bytearray | memoryview, header: BatchHeader) -> EndTransactionMarker:
    """The marker of the control batch ``header`` describes in ``buf``; raises
    :class:`InvalidBatchError` when its first record is not an end-transaction marker."""
    records = decode_records(buf, header)
    if not records or records[0].key is None or len(records[0].key) < _KEY.size:
        raise InvalidBatchError("control batch without an end-transaction marker")
    _, kind = _KEY.unpack_from(records[0].key)
    if kind not in (ABORT, COMMIT):
        raise InvalidBatchError(f"control record of unknown type {kind}")
    value = records[0].value or b""
    epoch = _VALUE.unpack_from(value)[1] if len(value) >= _VALUE.size else -1
    return EndTransactionMarker(kind == COMMIT, epoch)
