"""``file-source``: tails files (one path or glob patterns), one record per line or per JSON line.

Kafka's ``FileStreamSourceConnector`` (``file``, ``topic``, ``batch.size``) grown into a log
tailer. Every path is its own source partition ``{"file": <path as configured or globbed>}``;
the offset after a line is ``{"position": <byte after its newline>, "fingerprint": <hex of the
first min(1024, position) bytes>, "inode": <int>}`` (see :mod:`._tailer`).

On disk: files are only read, never written or moved. Only whole lines become records; an
unterminated last line is held back until its newline is written. Rotation by rename
(``app.log`` → ``app.log.1``, new ``app.log``) is followed: the old file is read to its end first.
A truncated file is read again from 0. A glob is re-expanded on every poll, so new files are
picked up (from their start); a glob should not also match the rotated names (``*.log``, not
``*.log*``), else a rotated file is read again under its new name, as its own partition.

After a crash or kill: delivery is at-least-once from the last committed offset; lines after it
are read (and produced) again — exactly-once on a distributed worker with
``exactly.once.source.support=enabled``, where the lines and their offsets are committed in one
transaction (:mod:`sluice.connect.runtime.exactly_once`). If the file was rotated while the task was
down, the rotated-away file is found among its siblings by fingerprint and finished first (one
rotation is caught up; files rotated twice while the task was down are skipped).

>>> import os, tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "app.log")
>>> with open(path, "w") as f: _ = f.write("hello\\nworld\\n")
>>> task = FileSourceTask()
>>> task.start({"file": path, "topic": "logs", "watch": "false"})
>>> [(r.value, r.source_offset["position"]) for r in task.poll()]
[('hello', 6), ('world', 12)]
>>> task.stop()
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from sluice.connect import (
    ConfigDef,
    ConfigValue,
    ConverterError,
    Schema,
    SourceBatch,
    SourceConnector,
    SourceRecord,
    SourceTask,
    SourceTaskContext,
    Task,
    at_least,
    one_of,
)
from sluice.connectors.file._config import known_encoding
from sluice.connectors.file._tailer import Line, Tailer, rotation_candidates
from sluice.connectors.file._watch import ChangeNotifier
from sluice.errors import ConfigError

__all__ = ["FileSourceConnector", "FileSourceTask"]

log = logging.getLogger("sluice.connectors.file")

STRING = Schema("string")

CONFIG = (
    ConfigDef()
    .define("file", "string", None, doc="A file to tail (Kafka's FileStreamSource key).")
    .define("files", "list", [], doc="Files or glob patterns to tail (`**` recurses).")
    .define("topic", "string", doc="The topic to write to.", importance="high")
    .define(
        "format",
        "string",
        "line",
        doc="`line`: each line is a string value; `json`: each line is a JSON value.",
        validator=one_of("line", "json"),
    )
    .define("batch.size", "int", 2000, doc="Most records per poll.", validator=at_least(1))
    .define(
        "poll.interval.ms",
        "long",
        1000,
        doc="Longest wait for new lines; also the polling period when notifications fail.",
        validator=at_least(1),
    )
    .define(
        "encoding",
        "string",
        "utf-8",
        doc="Text encoding (ASCII-compatible).",
        validator=known_encoding,
    )
    .define(
        "rotation.grace.ms",
        "long",
        1000,
        doc="How long a rotated-away file must be unchanged before the new file is read.",
        validator=at_least(0),
    )
    .define("watch", "boolean", True, doc="Wake on file-system notifications (watchdog).")
    .define(
        "files.refresh.ms",
        "long",
        10000,
        doc="How often the connector looks for new glob matches to spread over its tasks.",
        validator=at_least(1),
    )
)


def _patterns(values: dict[str, Any]) -> list[str]:
    found = ([values["file"]] if values["file"] else []) + list(values["files"])
    return list(dict.fromkeys(found))


def _expand(patterns: list[str]) -> list[str]:
    """Explicit paths (existing or not) and the files glob patterns match now, in order."""
    paths: dict[str, None] = {}
    for pattern in patterns:
        if not glob.has_magic(pattern):
            paths[pattern] = None
            continue
        for path in sorted(glob.glob(pattern, recursive=True)):
            if os.path.isfile(path):
                paths[path] = None
    return list(paths)


def _watch_root(pattern: str) -> tuple[str, bool]:
    """The directory to watch for ``pattern`` and whether recursively."""
    directory = os.path.dirname(os.path.abspath(pattern))
    parts = directory.split(os.sep)
    for index, part in enumerate(parts):
        if glob.has_magic(part):
            return os.sep.join(parts[:index]) or os.sep, True
    return directory, False


class FileSourceConnector(SourceConnector):
    """Tails files into a topic (``file-source``); see the module docstring for the behaviour.

    Tasks share the paths: with ``tasks.max`` > 1 the current matches are dealt out round-robin,
    and new glob matches (looked for every ``files.refresh.ms``) ask for a reconfiguration.
    """

    CONFIG = CONFIG

    def __init__(self) -> None:
        self._config: dict[str, Any] = {}
        self._patterns: list[str] = []
        self._known: set[str] = set()
        self._refresh_s = 10.0
        self._stop = threading.Event()
        self._monitor: threading.Thread | None = None

    def start(self, config: dict[str, Any]) -> None:
        values = CONFIG.parse(config)
        self._patterns = _patterns(values)
        if not self._patterns:
            raise ConfigError("set `file` or `files`", key="files")
        self._config = {k: v for k, v in config.items() if k not in ("file", "files")}
        self._refresh_s = values["files.refresh.ms"] / 1000
        self._stop.clear()

    def task_class(self) -> type[Task]:
        return FileSourceTask

    def exactly_once_support(self, config: Mapping[str, Any]) -> bool | None:
        """Supported: an offset is the byte after a line, so a task resumed there reads the
        same lines again (exactly-once with ``exactly.once.source.support=enabled``)."""
        return True

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        paths = _expand(self._patterns)
        self._known = set(paths)
        if max_tasks <= 1 or len(paths) <= 1:
            groups = [self._patterns]
        else:
            count = min(max_tasks, len(paths))
            groups = [[glob.escape(p) for p in paths[index::count]] for index in range(count)]
        if max_tasks > 1 and any(glob.has_magic(p) for p in self._patterns):
            self._start_monitor()
        return [{**self._config, "files": group} for group in groups]

    def _start_monitor(self) -> None:
        if self._monitor is None or not self._monitor.is_alive():
            self._monitor = threading.Thread(
                target=self._watch_matches, name="file-source-monitor", daemon=True
            )
            self._monitor.start()

    def _watch_matches(self) -> None:
        while not self._stop.wait(self._refresh_s):
            new = set(_expand(self._patterns)) - self._known
            if new and hasattr(self, "context"):
                log.info("new files to tail (%s): reconfiguring the tasks", ", ".join(sorted(new)))
                self._known |= new
                self.context.request_task_reconfiguration()

    def stop(self) -> None:
        self._stop.set()
        if self._monitor is not None:
            self._monitor.join(timeout=2.0)
            self._monitor = None

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        results = super().validate(config)
        if not config.get("file") and not config.get("files"):
            for result in results:
                if result.name == "files":
                    result.errors.append("set `file` or `files`")
        return results


class FileSourceTask(SourceTask):
    """Tails its share of the paths; see the module docstring.

    :meth:`poll` returns at most ``batch.size`` records and waits at most ``poll.interval.ms``
    when there are none (woken early by watchdog); :meth:`stop` may be called from any thread
    and makes a waiting :meth:`poll` return at once.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._tailers: dict[str, Tailer] = {}
        self._seen: set[str] = set()
        self._notifier: ChangeNotifier | None = None
        self._error: ConverterError | None = None
        self._turn = 0

    def start(self, config: dict[str, Any]) -> None:
        values = CONFIG.parse(config)
        self._patterns = _patterns(values)
        if not self._patterns:
            raise ConfigError("set `file` or `files`", key="files")
        self._topic: str = values["topic"]
        self._json = values["format"] == "json"
        self._batch: int = values["batch.size"]
        self._interval = values["poll.interval.ms"] / 1000
        self._encoding: str = values["encoding"]
        self._grace = values["rotation.grace.ms"] / 1000
        self._absolute = [os.path.abspath(pattern) for pattern in self._patterns]
        self._roots = list(dict.fromkeys(_watch_root(pattern) for pattern in self._patterns))
        self._notifier = ChangeNotifier(self._interesting, enabled=values["watch"])
        self._stopping.clear()
        with self._lock:
            self._scan()

    def warnings(self) -> list[str]:
        """A configured file that does not exist (or a pattern nothing matches): the task
        keeps running and picks it up once it appears, and its status says it waits."""
        found = []
        for pattern in getattr(self, "_patterns", []):
            if not glob.has_magic(pattern):
                if not os.path.exists(pattern):
                    found.append(f"file {pattern} does not exist: waiting for it to appear")
            elif not _expand([pattern]):
                found.append(f"no file matches {pattern}: waiting for one to appear")
        return found

    def _interesting(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self._absolute)

    def _committed(self, path: str) -> dict[str, Any] | None:
        context: SourceTaskContext | None = getattr(self, "context", None)
        if context is None:
            return None
        return context.offset_storage_reader.offset({"file": path})

    def _scan(self) -> None:
        """Follow new matches, drop vanished ones, notice rotation and truncation."""
        assert self._notifier is not None
        for directory, recursive in self._roots:
            self._notifier.watch(directory, recursive=recursive)
        paths = _expand(self._patterns)
        for path in paths:
            if path in self._tailers:
                continue
            tailer = Tailer(path, grace=self._grace, clock=self.clock)
            offset = None if path in self._seen else self._committed(path)
            others = [p for p in paths if p != path]
            tailer.resume(offset, [*rotation_candidates(path), *others])
            self._tailers[path] = tailer
            self._seen.add(path)
        current = set(paths)
        for path, tailer in list(self._tailers.items()):
            tailer.check()
            if path not in current and not tailer.files:
                del self._tailers[path]

    def poll(self) -> list[SourceRecord] | None:
        polled = self.poll_batch()
        if polled is None:
            return None
        records: list[SourceRecord] = []
        for item in polled:
            if isinstance(item, SourceBatch):
                records += item.records()
            else:
                records.append(item)
        return records

    def poll_batch(self) -> list[SourceRecord | SourceBatch] | None:
        """:meth:`poll`, with the lines of each file as one :class:`SourceBatch` (not JSON)."""
        if self._error is not None:
            raise self._error
        assert self._notifier is not None
        deadline = self.clock() + self._interval
        while not self._stopping.is_set():
            with self._lock:
                if self._stopping.is_set():
                    break
                self._notifier.clear()
                self._scan()
                polled = self._read()
                waiting = any(tailer.waiting() for tailer in self._tailers.values())
            if polled:
                return polled
            if self._error is not None:
                raise self._error
            remaining = deadline - self.clock()
            if remaining <= 0:
                return None
            tick = min(remaining, max(self._grace / 4, 0.01)) if waiting else remaining
            self._notifier.wait(tick)
        return None

    def _read(self) -> list[SourceRecord | SourceBatch]:
        polled: list[SourceRecord | SourceBatch] = []
        count = 0
        tailers = list(self._tailers.items())
        self._turn = (self._turn + 1) % max(1, len(tailers))
        for path, tailer in tailers[self._turn :] + tailers[: self._turn]:
            if count >= self._batch:
                break
            chunk = tailer.chunk(self._batch - count)
            if chunk is None:
                continue
            if not self._json:
                texts = chunk.texts(self._encoding)
                polled.append(
                    SourceBatch(
                        {"file": path}, self._topic, STRING, texts, chunk.offset(), chunk.offsets
                    )
                )
                count += len(texts)
                tailer.advance(chunk.end)
                continue
            taken: Line | None = None
            for line in chunk.lines():
                text = line.data.decode(self._encoding, errors="replace")
                if not text.strip():
                    taken = line  # blank lines between JSON values
                    continue
                try:
                    value = orjson.loads(text)
                except ValueError as error:
                    where = tailer.where(line)
                    self._error = ConverterError(f"{where}: malformed JSON: {error}")
                    break
                taken = line
                offset = line.offset
                polled.append(SourceRecord({"file": path}, offset, self._topic, None, None, value))
                count += 1
            if taken is not None:
                tailer.advance(taken.offset["position"])
            if self._error is not None:
                break
        return polled

    def stop(self) -> None:
        self._stopping.set()
        if self._notifier is not None:
            self._notifier.close()
        with self._lock:
            for tailer in self._tailers.values():
                tailer.close()
            self._tailers.clear()
