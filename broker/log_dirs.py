"""The broker's log directories (``log.dirs``, JBOD): which are online, and where a new
partition goes. Kafka's ``LogManager`` directory bookkeeping and ``LogDirFailureChannel``.

Layout. Every directory of ``log.dirs`` holds its own ``meta.properties`` (cluster id, node id),
its own ``replication-offset-checkpoint`` (the high watermarks of the partitions it holds, as
Kafka keeps one checkpoint per log directory) and partition directories ``<topic>-<n>/``. The
broker-level files — topic metadata ``__topics/``, ``dynamic-broker-configs.json``,
``producer-id-block``, SCRAM credentials — live in the *first* directory only, the **metadata
directory** (KRaft's ``metadata.log.dir`` defaults to the first log directory the same way).

Choosing. A new partition goes to the online directory holding the fewest partitions, the first
listed on a tie (Kafka's ``LogManager.nextLogDirs``). At start a partition is opened in the
directory that holds it; a partition found in two directories is refused
(:class:`DuplicatePartitionDirError`), as Kafka refuses duplicate log directories.

Failure. An ``OSError`` while writing a partition's log (append, roll, flush, index, truncation)
marks its directory offline (:meth:`LogDirs.fail`): its partitions answer KAFKA_STORAGE_ERROR,
the broker stops following them, and the listeners registered with :meth:`LogDirs.on_failure`
learn it (the cluster member tells the controller). The failure of the metadata directory, or
of the last online directory, stops the broker, as Kafka halts when every log directory is
offline (and KRaft when the metadata directory is). A directory comes back online only by a
restart with the directory healthy.

Not thread-safe: used from the broker's event loop only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sluice.errors import ConfigError, StorageError

log = logging.getLogger(__name__)

__all__ = ["DuplicatePartitionDirError", "LogDir", "LogDirs"]


class DuplicatePartitionDirError(StorageError):
    """One partition has a directory in two log directories (refused at start, as Kafka)."""


@dataclass(eq=False)
class LogDir:
    """One directory of ``log.dirs``."""

    path: Path
    online: bool = True
    error: str | None = None
    """Why the directory went offline (None while online)."""

    def disk(self) -> tuple[int, int]:
        """``(total, usable)`` bytes of the directory's file system; ``(-1, -1)`` unknown."""
        try:
            stats = os.statvfs(self.path)
        except OSError:
            return -1, -1
        return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


class LogDirs:
    """The log directories of one broker, in the order of ``log.dirs``.

    >>> dirs = LogDirs([Path("/d1"), Path("/d2")])
    >>> dirs.choose({Path("/d1"): 3, Path("/d2"): 1}).path  # the fewest partitions
    PosixPath('/d2')
    >>> dirs.fail(dirs.dirs[1], "No space left on device")
    True
    >>> dirs.choose({Path("/d1"): 3}).path, dirs.must_stop()
    (PosixPath('/d1'), False)
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        if not paths:
            raise ConfigError("at least one log directory is needed", key="log.dirs")
        resolved = [Path(os.path.abspath(p)) for p in paths]
        if len(set(resolved)) != len(resolved):
            raise ConfigError(
                f"names a directory twice: {', '.join(map(str, paths))}", key="log.dirs"
            )
        self.dirs = [LogDir(p) for p in resolved]
        self._listeners: list[Callable[[LogDir], None]] = []

    def __iter__(self) -> Iterator[LogDir]:
        return iter(self.dirs)

    @property
    def metadata_dir(self) -> Path:
        """Where the broker-level files live: the first directory."""
        return self.dirs[0].path

    def online(self) -> list[LogDir]:
        return [d for d in self.dirs if d.online]

    def of(self, partition_dir: Path) -> LogDir:
        """The log directory holding ``partition_dir`` (a ``<topic>-<n>`` directory)."""
        parent = Path(os.path.abspath(partition_dir)).parent
        for candidate in self.dirs:
            if candidate.path == parent:
                return candidate
        raise KeyError(f"{partition_dir} is in no log directory")

    def locate(self, name: str) -> Path | None:
        """The existing ``name`` partition directory, in whichever online directory holds it;
        :class:`DuplicatePartitionDirError` when two hold it."""
        found = [d.path / name for d in self.online() if (d.path / name).is_dir()]
        if len(found) > 1:
            raise DuplicatePartitionDirError(
                f"duplicate log directories for partition {name}: {found[0]} and {found[1]}; "
                "remove one of them to start"
            )
        return found[0] if found else None

    def choose(self, counts: dict[Path, int]) -> LogDir:
        """The online directory for a new partition: the one holding the fewest partitions
        (``counts``: partitions per directory path), the first listed on a tie."""
        online = self.online()
        if not online:
            raise OSError("every log directory is offline")
        return min(online, key=lambda d: counts.get(d.path, 0))

    def on_failure(self, listener: Callable[[LogDir], None]) -> None:
        """Call ``listener`` with the directory each time one goes offline."""
        self._listeners.append(listener)

    def fail(self, directory: LogDir, error: str) -> bool:
        """Mark ``directory`` offline (once); tell the listeners. True when it was online."""
        if not directory.online:
            return False
        directory.online, directory.error = False, error
        log.error("log directory %s is offline: %s", directory.path, error)
        for listener in list(self._listeners):
            listener(directory)
        return True

    def must_stop(self) -> bool:
        """The broker cannot go on: the metadata directory or every directory is offline."""
        return not self.dirs[0].online or not self.online()

    def describe(self) -> str:
        """``path (online|offline: error)`` of each directory, for messages."""
        return ", ".join(
            f"{d.path} ({'online' if d.online else f'offline: {d.error}'})" for d in self.dirs
        )
