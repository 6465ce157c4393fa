"""One transactional id: its producer id and epoch, timeout, state and partitions.

States and their numbers as Kafka's ``TransactionState`` (the numbers are what
``__transaction_state`` stores)::

    Empty ──AddPartitions──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──▶ CompleteCommit
                             └─EndTxn(abort), timeout─▶ PrepareAbort ──▶ CompleteAbort
    Complete* ──AddPartitions──▶ Ongoing
    Complete*, Empty ──InitProducerId──▶ Empty (epoch + 1)

(the step from Prepare* to Complete* writes the markers)

Not thread-safe: the broker's event loop only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class TxnState(enum.IntEnum):
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """The name Kafka's tools print (``CompleteCommit``)."""
        return "".join(part.capitalize() for part in self.name.split("_"))


@dataclass(eq=False)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_timestamp: int = -1
    last_update_timestamp: int = -1
