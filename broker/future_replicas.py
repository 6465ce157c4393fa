"""Moving a replica between the log directories of one broker: AlterReplicaLogDirs's future
replicas (Kafka's ``-future`` log, copied by its ``ReplicaAlterLogDirsThread``, then swapped).

A move opens a **future log** in ``<dest>/<topic>-<n>.<uuid hex>-future/`` and a task copies the
partition's current log into it, a chunk (``replica.fetch.max.bytes``) at a time, from the
current log's start: ``Log.append_as_follower`` keeps the offsets, leader epochs, producer
state and transaction markers as they are. Appends to the current log go on meanwhile and the
copy follows them. Each round first checks that the copy still agrees with the current log (a
follower's truncation may have cut it): a copy ending past the current log, or whose latest
epoch ends earlier there, is cut back where they agree, as a follower truncates; a copy below
the current log start (retention, DeleteRecords) starts over there.

**The swap** happens once the copy reached the current log's end, in one go on the event loop,
so no append comes in between: both logs are closed (flushed), the future directory is renamed
``<dest>/<topic>-<n>``, the current one ``<topic>-<n>.<topic id hex>-delete`` and removed, and
the partition reopens its log in the destination with the current log's high watermark (in a
cluster), leader epoch and leader-epoch history. DescribeLogDirs shows a future replica in its
directory with ``is_future_key`` true and ``offset_lag`` = current log end − future log end.

**Crash behaviour.** Until the swap the current log is untouched; a restart removes leftover
``-future`` directories (Kafka resumes the copy; here the move must be asked again). A crash
between the swap's two renames leaves the partition in both directories, which the next start
refuses naming both (:class:`~sluice.broker.log_dirs.DuplicatePartitionDirError`): the copy in
the destination is complete, the other may go. A move into or out of a directory that fails,
and a move of a partition that is deleted or unhosted, is dropped with its future log.

Not thread-safe: used from the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sluice.broker.log import Log
from sluice.broker.log.epochs import LEADER_EPOCH, EpochEntry
from sluice.broker.log.errors import OffsetOutOfRangeError
from sluice.broker.log.partition_metadata import write_partition_metadata
from sluice.broker.log_dirs import LogDir
from sluice.errors import StorageError

if TYPE_CHECKING:
    from sluice.broker.topics import Partition, Topic

log = logging.getLogger(__name__)

FUTURE_SUFFIX = "-future"
CHUNK_BYTES = 1 << 20
"""Bytes copied per round (the loop serves requests between rounds)."""

Clock = Callable[[], int]


@dataclass(eq=False)
class FutureReplica:
    """A partition's copy on its way to another log directory."""

    topic: Topic
    partition: Partition
    log_dir: LogDir
    log: Log
    task: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def offset_lag(self) -> int:
        """How far the copy is behind the current log (DescribeLogDirs' ``offset_lag``)."""
        return max(self.partition.log.log_end_offset - self.log.log_end_offset, 0)


class FutureReplicas:
    """The moves in progress, by ``(topic, partition)``."""

    def __init__(self, clock: Clock, flusher: Executor | None = None) -> None:
        self.clock = clock
        self.flusher = flusher
        """The broker's background flusher of rolled segments (the logs opened here use it)."""
        self.moves: dict[tuple[str, int], FutureReplica] = {}
        self.storage_failed: Callable[[Path, str], None] = lambda _path, _error: None
        """Told of a disk error in a directory (the broker takes it offline)."""
        self.swapped = 0
        """Moves completed (for tests and logs)."""

    def start(self, topic: Topic, partition: Partition, dest: LogDir) -> None:
        """Move ``partition`` to ``dest`` (a move elsewhere in progress is dropped first; a
        partition already there, or already moving there, changes nothing)."""
        key = (partition.topic, partition.index)
        current = self.moves.get(key)
        if current is not None and current.log_dir is dest:
            return
        self.drop(partition.topic, partition.index)
        if partition.log_dir is dest:
            return
        name = partition.log.directory.name
        directory = dest.path / f"{name}.{uuid.uuid4().hex}{FUTURE_SUFFIX}"
        future_log = Log.open(directory, topic.config, flusher=self.flusher)
        write_partition_metadata(directory, topic.topic_id)
        move = FutureReplica(topic, partition, dest, future_log)
        self.moves[key] = move
        move.task = asyncio.get_running_loop().create_task(self._copy(move), name=f"move-{name}")
        log.info("%s: moving to %s", name, dest.path)

    def future_of(self, topic: str, index: int) -> FutureReplica | None:
        return self.moves.get((topic, index))

    def drop(self, topic: str, index: int) -> None:
        """Stop the partition's move, if any, and remove its future log."""
        move = self.moves.pop((topic, index), None)
        if move is None:
            return
        if move.task is not None and move.task is not asyncio.current_task():
            move.task.cancel()
        directory = move.log.directory
        with contextlib.suppress(OSError, StorageError):
            move.log.close()
        shutil.rmtree(directory, ignore_errors=True)
        log.info("%s: move to %s dropped", directory.name, move.log_dir.path)

    def drop_touching(self, directory: LogDir) -> None:
        """``directory`` failed: drop the moves into it and out of it."""
        for key, move in list(self.moves.items()):
            if move.log_dir is directory or move.partition.log_dir is directory:
                self.drop(*key)

    def close(self) -> None:
        for key in list(self.moves):
            self.drop(*key)

    async def _copy(self, move: FutureReplica) -> None:
        try:
            while not self._copy_round(move):
                await asyncio.sleep(0)
        except _DiskError as failed:
            log.error("%s: move to %s failed: %s", failed.path.name, move.log_dir.path, failed)
            self.drop(move.partition.topic, move.partition.index)
            self.storage_failed(failed.path, str(failed))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s: move failed", move.log.directory.name)
            self.drop(move.partition.topic, move.partition.index)

    def _copy_round(self, move: FutureReplica) -> bool:
        """One chunk copied; True once swapped (or dropped)."""
        source, future = move.partition.log, move.log
        if move.partition.offline:
            self.drop(move.partition.topic, move.partition.index)
            return True
        with _disk(future.directory):
            self._agree(source, future)
        if future.log_end_offset >= source.log_end_offset:
            self._swap(move)
            return True
        try:
            with _disk(source.directory):
                data = source.read(future.log_end_offset, CHUNK_BYTES).data
        except OffsetOutOfRangeError:  # the current log start moved past the copy's end
            with _disk(future.directory):
                future.truncate_fully_and_start_at(source.log_start_offset)
            return False
        if data:
            with _disk(future.directory):
                future.append_as_follower(bytes(data), now_ms=self.clock())
        return False

    @staticmethod
    def _agree(source: Log, future: Log) -> None:
        """Cut the copy back where it and the current log agree (see the module docs)."""
        if future.log_end_offset < source.log_start_offset or (
            future.log_end_offset == future.log_start_offset
            and future.log_start_offset != source.log_start_offset
        ):
            future.truncate_fully_and_start_at(source.log_start_offset)
            return
        target = min(future.log_end_offset, source.log_end_offset)
        latest = future.leader_epochs.latest_epoch
        if latest is not None:
            epoch, end = source.end_offset_for_epoch(latest)
            if epoch != latest or end < target:
                target = min(target, end if end >= 0 else source.log_start_offset)
        if target < future.log_end_offset:
            if target < future.log_start_offset:
                future.truncate_fully_and_start_at(source.log_start_offset)
            else:
                future.truncate_to(target)

    def _swap(self, move: FutureReplica) -> None:
        """The copy caught up: it becomes the partition's log (see the module docs)."""
        partition, topic = move.partition, move.topic
        source, future = partition.log, move.log
        high_watermark = source._high_watermark  # None on one node: the log end
        history: tuple[EpochEntry, ...] = source.leader_epochs.entries
        start = source.log_start_offset
        name = source.directory.name
        final = move.log_dir.path / name
        with _disk(future.directory):
            future.close()
        with _disk(source.directory):
            source.close()
        with _disk(future.directory):
            os.replace(future.directory, final)
            epoch_file = source.directory / LEADER_EPOCH
            if epoch_file.exists():
                shutil.copy2(epoch_file, final / LEADER_EPOCH)
        doomed = source.directory.with_name(f"{name}.{topic.topic_id.hex}-delete")
        with _disk(source.directory):
            os.replace(source.directory, doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        with _disk(final):
            moved = Log.open(final, topic.config, flusher=self.flusher)
        for entry in history:
            moved.leader_epochs.assign(entry.epoch, entry.start_offset)
        if start > moved.log_start_offset:
            moved.delete_records_before(start, now_ms=self.clock())
        if high_watermark is not None:
            moved.set_high_watermark(high_watermark)
        partition.log, partition.log_dir = moved, move.log_dir
        del self.moves[(partition.topic, partition.index)]
        self.swapped += 1
        partition.notify()
        log.info("%s: moved to %s", name, move.log_dir.path)


class _DiskError(Exception):
    """A disk error under ``path`` (a partition directory, current or future)."""

    def __init__(self, path: Path, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.path = path


@contextlib.contextmanager
def _disk(path: Path) -> Iterator[None]:
    """Name the directory whose disk failed."""
    try:
        yield
    except (OSError, StorageError) as exc:
        raise _DiskError(path, exc) from exc
