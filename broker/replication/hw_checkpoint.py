"""The high watermarks of a broker's replicas, kept across restarts: Kafka's
``replication-offset-checkpoint``.

In a cluster a replica's high watermark is what the in-sync replicas have, not its log end (the
tail may be uncommitted); a restarted broker must not take its log end for committed. So the
cluster member writes every hosted partition's high watermark to the data directory every
``replica.high.watermark.checkpoint.interval.ms`` and at close, and restores them at start. A
single node does not use it: there the high watermark is the log end offset.

On-disk format, ``<data_dir>/replication-offset-checkpoint`` (Kafka's ``OffsetCheckpointFile``,
text)::

    0                   version
    2                   number of entries
    orders 0 1500       "topic partition offset", one entry a line
    orders 1 1498

The file is replaced atomically (:func:`~sluice.broker.log.files.write_atomically`: temporary
file, fsync, rename, directory fsync), so a crash leaves the previous or the new checkpoint; a
high watermark read back may therefore be older than the one the broker last knew, never newer,
which is safe (a leader only moves it forward, a follower learns it from its leader). A missing
file means no checkpoint yet (every high watermark starts at 0). A file that does not parse —
torn, or edited by hand — is refused with its path and line
(:class:`HighWatermarkCheckpointError`), as Kafka refuses a malformed checkpoint, rather than
guessed at.

>>> import tempfile, pathlib
>>> data_dir = pathlib.Path(tempfile.mkdtemp())
>>> write_high_watermarks(data_dir, {("orders", 0): 1500, ("orders", 1): 1498})
>>> (data_dir / REPLICATION_OFFSET_CHECKPOINT).read_text()
'0\\n2\\norders 0 1500\\norders 1 1498\\n'
>>> read_high_watermarks(data_dir)
{('orders', 0): 1500, ('orders', 1): 1498}

Thread-safety: none needed; a file is written whole by one caller (the broker's loop).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sluice.broker.log.files import (
    format_kafka_checkpoint,
    kafka_checkpoint_entries,
    write_atomically,
)
from sluice.errors import StorageError

if TYPE_CHECKING:
    from sluice.broker.topics import Partition

__all__ = [
    "REPLICATION_OFFSET_CHECKPOINT",
    "HighWatermarkCheckpointError",
    "checkpoint_high_watermarks",
    "format_high_watermarks",
    "parse_high_watermarks",
    "read_high_watermarks",
    "write_high_watermarks",
]

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
VERSION = 0


class HighWatermarkCheckpointError(StorageError):
    """A ``replication-offset-checkpoint`` that cannot be read as Kafka's format."""


def format_high_watermarks(high_watermarks: Mapping[tuple[str, int], int]) -> bytes:
    """The bytes of a checkpoint holding ``high_watermarks`` (sorted by topic and partition)."""
    entries = sorted(high_watermarks.items())
    return format_kafka_checkpoint(VERSION, [f"{t} {p} {o}" for (t, p), o in entries])


def parse_high_watermarks(text: str, path: Path) -> dict[tuple[str, int], int]:
    """The entries of a checkpoint's ``text``; :class:`HighWatermarkCheckpointError` naming
    ``path`` and the line when it is not Kafka's format (version 0, a count, that many
    ``topic partition offset`` lines, partition and offset >= 0, each partition once)."""

    def bad(number: int, what: str) -> HighWatermarkCheckpointError:
        return HighWatermarkCheckpointError(
            f"{path}: line {number}: {what}; remove the file to start every high watermark "
            "at 0 (each is then learnt again from the partition's in-sync replicas)"
        )

    entries: dict[tuple[str, int], int] = {}
    for number, line in kafka_checkpoint_entries(text, VERSION, bad):
        fields = line.split()
        try:
            index, offset = (int(fields[1]), int(fields[2])) if len(fields) == 3 else (-1, -1)
        except ValueError:
            index, offset = -1, -1
        if index < 0 or offset < 0:
            raise bad(number, f"expected 'topic partition offset', found {line!r}")
        key = (fields[0], index)
        if key in entries:
            raise bad(number, f"partition {fields[0]}-{index} listed twice")
        entries[key] = offset
    return entries


def read_high_watermarks(data_dir: Path) -> dict[tuple[str, int], int]:
    """The high watermark of each ``(topic, partition)`` in ``data_dir``'s checkpoint (empty
    when there is none); :class:`HighWatermarkCheckpointError` when it cannot be read."""
    path = Path(data_dir) / REPLICATION_OFFSET_CHECKPOINT
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise HighWatermarkCheckpointError(f"{path}: cannot read: {exc}") from exc
    return parse_high_watermarks(text, path)


def write_high_watermarks(data_dir: Path, high_watermarks: Mapping[tuple[str, int], int]) -> None:
    """Replace ``data_dir``'s checkpoint with ``high_watermarks`` (atomically);
    :class:`~sluice.errors.StorageError` when the disk refuses."""
    path = Path(data_dir) / REPLICATION_OFFSET_CHECKPOINT
    try:
        write_atomically(path, format_high_watermarks(high_watermarks))
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc}") from exc


def checkpoint_high_watermarks(data_dir: Path, partitions: Iterable[Partition]) -> None:
    """Write the current high watermark of every partition in ``partitions`` (this broker's
    replicas) to ``data_dir``'s checkpoint, replacing the previous one."""
    write_high_watermarks(data_dir, {(p.topic, p.index): p.log.high_watermark for p in partitions})
