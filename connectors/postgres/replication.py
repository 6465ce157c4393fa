"""The logical replication connection: the slot, its exported snapshot, the pgoutput stream.

One psycopg2 ``LogicalReplicationConnection`` does, in order:

1. ``CREATE_REPLICATION_SLOT <slot> LOGICAL pgoutput EXPORT_SNAPSHOT`` (when a snapshot is
   taken): the answer holds the slot's *consistent point* (the first LSN it will decode) and
   the name of a snapshot that sees exactly the transactions committed before it. The snapshot
   stays importable only while this connection runs no other command, so the snapshot
   transaction (another connection) imports it before anything else happens here;
2. ``START_REPLICATION SLOT <slot> LOGICAL <lsn> (proto_version '1', publication_names ...)``;
3. reads ``XLogData`` messages without blocking (``read_message`` and ``select``) and reports
   the flushed position (``send_feedback(flush_lsn=...)``) — only ever an LSN whose changes the
   Connect runtime has committed: PostgreSQL keeps the WAL after it for the slot.

Between messages psycopg2 answers the server's keepalives and sends a status update every
``status.update.interval.ms``; it also moves the flushed position to the server's ``wal_end``
when everything it received was confirmed (nothing lost: no change lies in between).
Not thread-safe: one task thread uses it.
"""

from __future__ import annotations

import logging
import select
from dataclasses import dataclass
from typing import NamedTuple

import psycopg2
import psycopg2.extras

from sluice.connect import ConnectError
from sluice.connectors.postgres.config import Settings, connect
from sluice.connectors.postgres.pgoutput import format_lsn, parse_lsn

__all__ = ["CreatedSlot", "RawMessage", "ReplicationStream"]

log = logging.getLogger("sluice.connectors.postgres")


@dataclass(frozen=True)
class CreatedSlot:
    """What ``CREATE_REPLICATION_SLOT`` answered."""

    consistent_point: int
    snapshot_name: str | None


class RawMessage(NamedTuple):
    """One ``XLogData`` payload and the LSN the server gave it (a tuple: one per change)."""

    data_start: int
    payload: bytes


class ReplicationStream:
    """The replication connection of one task; see the module docstring."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.connection = connect(settings, replication=True)
        cursor = self.connection.cursor()
        assert isinstance(cursor, psycopg2.extras.ReplicationCursor)
        self.cursor = cursor
        self.streaming = False
        self.confirmed = 0

    def create_slot(self, *, export_snapshot: bool) -> CreatedSlot:
        """Create the slot (pgoutput), exporting a snapshot when asked."""
        mode = "EXPORT_SNAPSHOT" if export_snapshot else "NOEXPORT_SNAPSHOT"
        try:
            self.cursor.execute(
                f'CREATE_REPLICATION_SLOT "{self.settings.slot}" LOGICAL pgoutput {mode}'
            )
            row = self.cursor.fetchone()
        except psycopg2.Error as error:
            raise ConnectError(
                f"cannot create replication slot {self.settings.slot!r}: {_reason(error)}"
            ) from None
        assert row is not None
        created = CreatedSlot(parse_lsn(row[1]), row[2])
        log.info(
            "created replication slot %s at %s%s",
            self.settings.slot,
            row[1],
            f", snapshot {row[2]}" if row[2] else "",
        )
        return created

    def start(self, start_lsn: int) -> None:
        """Stream the slot's changes from ``start_lsn`` (0: from where the slot is)."""
        try:
            self.cursor.start_replication(
                slot_name=self.settings.slot,
                decode=False,
                start_lsn=start_lsn,
                options={"proto_version": "1", "publication_names": self.settings.publication},
                status_interval=max(1, round(self.settings.status_interval_s)),
            )
        except psycopg2.Error as error:
            raise ConnectError(
                f"cannot stream replication slot {self.settings.slot!r}: {_reason(error)}"
            ) from None
        self.streaming = True
        self.confirmed = start_lsn
        log.info("streaming slot %s from %s", self.settings.slot, format_lsn(start_lsn))

    def read(self, timeout_s: float) -> RawMessage | None:
        """The next message, waiting up to ``timeout_s``; None when none came."""
        message = self.cursor.read_message()
        if message is None:
            ready, _, _ = select.select([self.cursor], [], [], timeout_s)
            if not ready:
                return None
            message = self.cursor.read_message()
            if message is None:
                return None
        payload = message.payload
        data = payload if isinstance(payload, bytes) else payload.encode()
        return RawMessage(message.data_start, data)

    @property
    def wal_end(self) -> int:
        """The server's WAL position as of its last message (keepalives included)."""
        return int(self.cursor.wal_end)

    def confirm(self, lsn: int) -> None:
        """Report everything before ``lsn`` as flushed (the slot may then let that WAL go)."""
        if not self.streaming or lsn <= self.confirmed:
            return
        self.cursor.send_feedback(  # type: ignore[no-untyped-call]
            write_lsn=lsn, flush_lsn=lsn, force=True
        )
        self.confirmed = lsn
        log.debug("confirmed %s to slot %s", format_lsn(lsn), self.settings.slot)

    def close(self) -> None:
        """Close the connection (the server ends its walsender, freeing the slot)."""
        if not self.connection.closed:
            self.connection.close()


def _reason(error: psycopg2.Error) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
