"""``spooldir-source``: publishes the files that appear in a directory, then moves them away.

Every file of ``input.path`` whose name matches ``input.file.pattern`` (a regular expression
matched against the whole name; by default any name not starting with a dot) is read in name
order, as CSV with a header, JSON lines or lines (:mod:`._formats`). Its source partition is
``{"file": <name>}``; the offset after its n-th record is ``{"record": n, "fingerprint": <hex>,
"size": <bytes>, "inode": <int>, "ctime_ns": <int>}`` — the file's identity, so that a new file
with an old name is read from its start.

On disk: a file is first read through once to check it parses; if it does not, it is moved to
``error.path`` with a ``<name>.error`` file stating the line and the reason, and no record of it
is produced. A file is moved to ``finished.path`` (or deleted, ``cleanup.policy=delete``) only
once *all* its records are acknowledged by the broker (``commit_record``) or covered by committed
offsets (``commit``). Files must be complete when they appear: write them elsewhere and rename
them into ``input.path``, or set ``file.minimum.age.ms``. A name already taken in the target
directory gets a ``.1``, ``.2``… suffix.

After a crash or kill: a file still in ``input.path`` is read again from its last committed
offset (its earlier records are skipped, so a file whose records were all committed is only
moved); a file already moved is not read again. Delivery is at-least-once: records produced
after the last committed offset are produced again.

>>> import os, tempfile
>>> root = tempfile.mkdtemp()
>>> for name in ("in", "done", "bad"): os.mkdir(os.path.join(root, name))
>>> with open(os.path.join(root, "in", "a.txt"), "w") as f: _ = f.write("x\\ny\\n")
>>> task = SpoolDirSourceTask()
>>> task.start({"input.path": f"{root}/in", "finished.path": f"{root}/done",
...             "error.path": f"{root}/bad", "topic": "t", "watch": "false"})
>>> records = task.poll(); [(r.value, r.source_offset["record"]) for r in records]
[('x', 1), ('y', 2)]
>>> for record in records: task.commit_record(record)
>>> os.listdir(os.path.join(root, "done"))
['a.txt']
>>> task.stop()
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from sluice.connect import (
    ConfigDef,
    ConfigValue,
    ConnectError,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    SourceTaskContext,
    Task,
    at_least,
    one_of,
)
from sluice.connectors.file._config import known_encoding
from sluice.connectors.file._fingerprint import FINGERPRINT_BYTES, fingerprint_path
from sluice.connectors.file._formats import FORMATS, ParseError, read_records
from sluice.connectors.file._watch import ChangeNotifier
from sluice.errors import ConfigError

__all__ = ["SpoolDirSourceConnector", "SpoolDirSourceTask"]

log = logging.getLogger("sluice.connectors.file")


def _regex(name: str, value: Any) -> None:
    try:
        re.compile(value)
    except re.error as error:
        raise ValueError(f"invalid regular expression: {error}") from None


CONFIG = (
    ConfigDef()
    .define("input.path", "string", doc="Directory to pick files up from.", importance="high")
    .define("finished.path", "string", None, doc="Directory for published files (policy move).")
    .define("error.path", "string", doc="Directory for files that cannot be parsed.")
    .define(
        "input.file.pattern",
        "string",
        r"[^.].*",
        doc="Regular expression the whole file name must match.",
        validator=_regex,
    )
    .define("format", "string", "line", doc="csv, json or line.", validator=one_of(*FORMATS))
    .define("topic", "string", doc="The topic to write to.", importance="high")
    .define("batch.size", "int", 1000, doc="Most records per poll.", validator=at_least(1))
    .define(
        "poll.interval.ms", "long", 1000, doc="Longest wait for new files.", validator=at_least(1)
    )
    .define(
        "cleanup.policy",
        "string",
        "move",
        doc="move: to finished.path; delete.",
        validator=one_of("move", "delete"),
    )
    .define("encoding", "string", "utf-8", doc="Text encoding.", validator=known_encoding)
    .define("csv.separator", "string", ",", doc="CSV field separator (one character).")
    .define(
        "file.minimum.age.ms",
        "long",
        0,
        doc="Leave files alone until they are this old (still being written).",
        validator=at_least(0),
    )
    .define("watch", "boolean", True, doc="Wake on file-system notifications (watchdog).")
)


def _problems(values: Mapping[str, Any]) -> dict[str, str]:
    """Problems that involve more than one setting, by key."""
    problems = {}
    source = values.get("input.path")
    if values.get("cleanup.policy", "move") == "move" and not values.get("finished.path"):
        problems["finished.path"] = "required with cleanup.policy=move"
    for key in ("finished.path", "error.path"):
        target = values.get(key)
        if source and target and os.path.abspath(target) == os.path.abspath(source):
            problems[key] = "must not be input.path"
    if len(str(values.get("csv.separator", ","))) != 1:
        problems["csv.separator"] = "must be one character"
    return problems


class SpoolDirSourceConnector(SourceConnector):
    """Publishes the files dropped into a directory (``spooldir-source``); see the module docstring.

    With ``tasks.max`` > 1 every task reads the same directory and takes the files whose name
    hashes to it (CRC-32 modulo the number of tasks).
    """

    CONFIG = CONFIG

    def start(self, config: dict[str, Any]) -> None:
        values = CONFIG.parse(config)
        for key, problem in _problems(values).items():
            raise ConfigError(problem, key=key)
        self._config = dict(config)

    def task_class(self) -> type[Task]:
        return SpoolDirSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        count = max(1, max_tasks)
        return [
            {**self._config, "task.index": index, "task.count": count} for index in range(count)
        ]

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        results = super().validate(config)
        problems = _problems(config)
        for result in results:
            if result.name in problems:
                result.errors.append(problems[result.name])
        return results


@dataclass
class _Spool:
    """One input file being published."""

    name: str
    path: str
    identity: dict[str, Any]
    base: int  # records committed by an earlier run (skipped)
    total: int  # records in the file
    emitted: int = 0  # records produced by this run
    acked: int = 0
    exhausted: bool = False
    finished: bool = False

    def complete(self) -> bool:
        return self.exhausted and not self.finished and self.base + self.acked >= self.total


def _identity(path: str) -> dict[str, Any] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    found = fingerprint_path(path, min(FINGERPRINT_BYTES, info.st_size))
    if found is None:
        return None
    return {
        "fingerprint": found,
        "size": info.st_size,
        "inode": info.st_ino,
        "ctime_ns": info.st_ctime_ns,
    }


def _free_name(directory: str, name: str) -> str:
    candidate, suffix = name, 0
    while os.path.lexists(os.path.join(directory, candidate)) or os.path.lexists(
        os.path.join(directory, candidate + ".error")
    ):
        suffix += 1
        candidate = f"{name}.{suffix}"
    return candidate


class SpoolDirSourceTask(SourceTask):
    """Publishes its share of a spool directory; see the module docstring.

    ``wall_clock`` (seconds since the epoch) is compared with file modification times for
    ``file.minimum.age.ms``; ``clock`` (monotonic seconds) bounds the wait in :meth:`poll`.
    """

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        self.wall_clock = wall_clock
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._spools: dict[str, _Spool] = {}
        self._current: tuple[_Spool, Iterator[tuple[Schema | None, Any]]] | None = None
        self._rejected: set[str] = set()
        self._notifier: ChangeNotifier | None = None

    def start(self, config: dict[str, Any]) -> None:
        values = CONFIG.parse(config)
        for key, problem in _problems(values).items():
            raise ConfigError(problem, key=key)
        self._input = os.path.abspath(values["input.path"])
        if not os.path.isdir(self._input):
            raise ConfigError(f"no such directory: {self._input}", key="input.path")
        self._delete = values["cleanup.policy"] == "delete"
        self._finished = os.path.abspath(values["finished.path"] or self._input)
        self._errors = os.path.abspath(values["error.path"])
        for directory in ([] if self._delete else [self._finished]) + [self._errors]:
            os.makedirs(directory, exist_ok=True)
        self._pattern = re.compile(values["input.file.pattern"])
        self._format: str = values["format"]
        self._topic: str = values["topic"]
        self._batch: int = values["batch.size"]
        self._interval = values["poll.interval.ms"] / 1000
        self._encoding: str = values["encoding"]
        self._separator: str = values["csv.separator"]
        self._min_age = values["file.minimum.age.ms"] / 1000
        self._index = int(config.get("task.index", 0))
        self._count = max(1, int(config.get("task.count", 1)))
        self._notifier = ChangeNotifier(self._interesting, enabled=values["watch"])
        self._notifier.watch(self._input)
        self._stopping.clear()

    def _interesting(self, path: str) -> bool:
        directory, name = os.path.split(path)
        return directory == self._input and self._mine(name)

    def _mine(self, name: str) -> bool:
        if not self._pattern.fullmatch(name):
            return False
        return self._count == 1 or zlib.crc32(name.encode()) % self._count == self._index

    def _committed(self, name: str) -> dict[str, Any] | None:
        context: SourceTaskContext | None = getattr(self, "context", None)
        if context is None:
            return None
        return context.offset_storage_reader.offset({"file": name})

    def poll(self) -> list[SourceRecord] | None:
        assert self._notifier is not None
        deadline = self.clock() + self._interval
        while not self._stopping.is_set():
            with self._lock:
                if self._stopping.is_set():
                    break
                self._notifier.clear()
                self._finish_completed()
                records = self._read()
            if records:
                return records
            remaining = deadline - self.clock()
            if remaining <= 0:
                return None
            self._notifier.wait(remaining)
        return None

    def _read(self) -> list[SourceRecord]:
        records: list[SourceRecord] = []
        while len(records) < self._batch:
            if self._current is None and not self._open_next():
                break
            assert self._current is not None
            spool, values = self._current
            wanted = self._batch - len(records)
            try:
                batch = list(islice(values, wanted))
            except (ParseError, OSError) as error:
                raise ConnectError(f"{spool.path} changed while it was read: {error}") from None
            for schema, value in batch:
                spool.emitted += 1
                offset = {"record": spool.base + spool.emitted, **spool.identity}
                records.append(
                    SourceRecord(
                        {"file": spool.name},
                        offset,
                        self._topic,
                        None,
                        schema,
                        value,
                        headers=[("file.name", spool.name)],
                    )
                )
            if len(batch) < wanted:
                spool.exhausted = True
                self._current = None
                self._finish_completed()
        return records

    def _open_next(self) -> bool:
        """Start on the next input file that parses; False when there is none."""
        try:
            names = sorted(os.listdir(self._input))
        except OSError as error:
            log.warning("cannot list %s: %s", self._input, error)
            return False
        now = self.wall_clock()
        for name in names:
            if name in self._spools or name in self._rejected or not self._mine(name):
                continue
            path = os.path.join(self._input, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            if not os.path.isfile(path) or now - info.st_mtime < self._min_age:
                continue
            identity = _identity(path)
            if identity is None:
                continue
            try:
                total = sum(1 for _ in self._records(path))
            except ParseError as error:
                self._reject(name, path, str(error))
                continue
            except OSError:
                continue  # vanished or unreadable: look again next time
            committed = self._committed(name) or {}
            same = all(committed.get(key) == value for key, value in identity.items())
            base = min(int(committed.get("record", 0)), total) if same else 0
            values = self._records(path)
            for _ in islice(values, base):
                pass
            if base:
                log.info("%s: resuming after record %d of %d", path, base, total)
            spool = _Spool(name, path, identity, base, total)
            self._spools[name] = spool
            self._current = (spool, values)
            return True
        return False

    def _records(self, path: str) -> Iterator[tuple[Schema | None, Any]]:
        return read_records(path, self._format, self._encoding, self._separator)

    def _reject(self, name: str, path: str, reason: str) -> None:
        target = _free_name(self._errors, name)
        try:
            with open(os.path.join(self._errors, target + ".error"), "w") as handle:
                handle.write(f"{name}: {reason}\n")
            shutil.move(path, os.path.join(self._errors, target))
        except OSError as error:
            log.error("cannot move %s to %s: %s", path, self._errors, error)
            self._rejected.add(name)
            return
        log.warning("%s cannot be parsed (%s): moved to %s", path, reason, self._errors)

    def _finish_completed(self) -> None:
        for spool in list(self._spools.values()):
            if spool.complete():
                self._finish(spool)

    def _finish(self, spool: _Spool) -> None:
        spool.finished = True
        try:
            if self._delete:
                os.remove(spool.path)
            else:
                target = os.path.join(self._finished, _free_name(self._finished, spool.name))
                shutil.move(spool.path, target)
        except OSError as error:
            log.error("cannot clean up %s (it stays in place): %s", spool.path, error)
            return
        del self._spools[spool.name]

    def commit_record(self, record: SourceRecord) -> None:
        with self._lock:
            spool = self._spools.get(record.source_partition.get("file", ""))
            offset = record.source_offset
            if spool is not None and offset.get("fingerprint") == spool.identity["fingerprint"]:
                spool.acked += 1
                if spool.complete():
                    self._finish(spool)

    def commit(self) -> None:
        with self._lock:
            for spool in list(self._spools.values()):
                if not spool.exhausted or spool.finished:
                    continue
                committed = self._committed(spool.name) or {}
                same = all(committed.get(k) == v for k, v in spool.identity.items())
                if same and int(committed.get("record", 0)) >= spool.total:
                    self._finish(spool)

    def stop(self) -> None:
        self._stopping.set()
        if self._notifier is not None:
            self._notifier.close()
        with self._lock:
            self._current = None
