"""What a log checks of the record batches it is given before it writes any of them.

A leader's append takes one producer batch and stamps it (offsets, epoch); a follower's takes
the leader's batches as they are, so each must be whole and intact and continue the log
(:func:`follower_batches`). Both need to know whether a control batch is an abort marker
(:func:`is_abort`): its transaction goes to the aborted-transaction index.
"""

from __future__ import annotations

from sluice.broker.log.errors import UnexpectedAppendOffsetError
from sluice.broker.log.markers import decode_marker
from sluice.broker.records.batch import BatchHeader, InvalidBatchError, read_header, validate
from sluice.errors import CorruptRecordError

__all__ = ["follower_batches", "is_abort"]


def is_abort(records: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """Whether the batch is an abort marker (a damaged control batch is refused)."""
    if not header.is_control:
        return False
    try:
        return not decode_marker(records, header).commit
    except InvalidBatchError as exc:
        raise CorruptRecordError(exc.reason) from exc


def follower_batches(
    records: bytes | bytearray | memoryview, log_end_offset: int, where: str
) -> list[tuple[BatchHeader, bool]]:
    """The headers of the batches of ``records`` with whether each is an abort marker.

    Raises :class:`~sluice.errors.CorruptRecordError` for a batch that is not whole, not magic
    2 or fails its CRC-32C, and :class:`~sluice.broker.log.errors.UnexpectedAppendOffsetError`
    when the first does not start at ``log_end_offset`` or one does not follow the one before;
    ``where`` (the partition) names the log in the message.
    """
    checked: list[tuple[BatchHeader, bool]] = []
    expected, position = log_end_offset, 0
    while position < len(records):
        try:
            header = read_header(records, position)
            validate(records, header)
        except InvalidBatchError as exc:
            raise CorruptRecordError(
                f"{where}: batch at byte {position} of the fetched data: {exc.reason}"
            ) from exc
        if header.base_offset != expected or header.last_offset_delta < 0:
            raise UnexpectedAppendOffsetError(
                f"{where}: fetched batch at offsets {header.base_offset}..{header.last_offset} "
                f"does not continue the log at offset {expected}"
            )
        checked.append((header, is_abort(records, header)))
        expected, position = header.next_offset, position + header.size
    return checked
