"""Waking a waiting ``poll`` early when a watched directory changes (watchdog), else on a timer.

A :class:`ChangeNotifier` is an event that a watchdog observer sets when a file the task cares
about is written, created, moved or deleted; ``poll`` clears it before it reads and waits on it
when there was nothing to read. When watchdog cannot watch a directory (inotify limits, a network
file system, a directory that does not exist yet) the timed wait alone is the polling fallback,
so no change is ever missed, only noticed later. Reading a file (``opened``, ``closed_no_write``)
and attribute changes do not wake: the task's own reads would wake it in a loop.

>>> notifier = ChangeNotifier(lambda path: True, enabled=False)
>>> notifier.wait(0.01)
False
>>> notifier.wake(); notifier.wait(10)
True
>>> notifier.close()
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from watchdog.events import (
    EVENT_TYPE_CLOSED,
    EVENT_TYPE_CREATED,
    EVENT_TYPE_DELETED,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_MOVED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

__all__ = ["ChangeNotifier"]

log = logging.getLogger("sluice.connectors.file")

_WAKING = frozenset(
    [
        EVENT_TYPE_MODIFIED,
        EVENT_TYPE_CREATED,
        EVENT_TYPE_MOVED,
        EVENT_TYPE_DELETED,
        EVENT_TYPE_CLOSED,
    ]
)


class _Handler(FileSystemEventHandler):
    def __init__(self, notifier: ChangeNotifier) -> None:
        self.notifier = notifier

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in _WAKING or event.is_directory:
            return
        paths = [os.fsdecode(event.src_path)]
        if event.dest_path:
            paths.append(os.fsdecode(event.dest_path))
        if any(self.notifier.interesting(path) for path in paths):
            self.notifier.wake()


class ChangeNotifier:
    """An event set by file-system changes under watched directories; see the module docstring.

    ``interesting(path)`` (an absolute path) says whether a change to ``path`` should wake the
    task. Thread-safe: :meth:`wake` and :meth:`close` may be called from any thread.
    """

    def __init__(self, interesting: Callable[[str], bool], *, enabled: bool = True) -> None:
        self.interesting = interesting
        self.enabled = enabled
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._observer: BaseObserver | None = None
        self._watched: set[str] = set()
        self._closed = False

    def watch(self, directory: str, *, recursive: bool = False) -> None:
        """Also watch ``directory`` (a no-op when it is watched already or does not exist)."""
        directory = os.path.abspath(directory)
        if not self.enabled or directory in self._watched or not os.path.isdir(directory):
            return
        with self._lock:
            if self._closed:
                return
            try:
                if self._observer is None:
                    observer = Observer()
                    observer.daemon = True
                    observer.start()
                    self._observer = observer
                self._observer.schedule(_Handler(self), directory, recursive=recursive)
            except OSError as error:
                log.warning("cannot watch %s (%s): polling it instead", directory, error)
            self._watched.add(directory)

    def clear(self) -> None:
        """Forget earlier changes (call before reading)."""
        self._event.clear()

    def wait(self, timeout: float) -> bool:
        """Block until a change, :meth:`wake` or ``timeout`` seconds; whether woken early."""
        return self._event.wait(max(0.0, timeout))

    def wake(self) -> None:
        """Wake the waiting task (a change, or ``stop()``)."""
        self._event.set()

    def close(self) -> None:
        """Stop watching (idempotent)."""
        with self._lock:
            self._closed = True
            observer, self._observer = self._observer, None
        self.wake()
        if observer is not None:
            observer.stop()
            observer.join(timeout=2.0)
