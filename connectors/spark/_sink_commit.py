"""The exactly-once commit protocol of ``spark-sink``: Parquet files published with their offsets.

Layout of a table directory (``<warehouse.path>/<table>``)::

    <table>/
      date=2024-05-01/part-orders-0-1200-1350.parquet   data: part-<topic>-<partition>-<start>-<end>
      part-orders-1-0-90.parquet                        (unpartitioned tables: at the top)
      _common_metadata                                  the table's full schema (no rows)
      _sluice_table.json                                schema + partition columns (the truth)
      _sluice_lock                                      flock()ed while the schema changes
      _sluice_commits/<topic>/<partition>/<end>.json    commit records (end: 20 digits)
      _sluice_staging/<topic>/<partition>/<start>-<end>-<id>/f<i>.parquet   files being written

Spark (and any Parquet reader following Hadoop's convention) ignores names starting with ``_``
or ``.``, except ``_common_metadata``, which it reads for the schema: readers see data files
only, and the newest schema even though older files lack newer columns.

Each topic-partition of a table commits on its own. A commit of the records of offsets
``[start, end)`` (``end`` is the next offset to read; the range includes records that were
skipped as bad or as tombstones):

1. every data file of the commit (one per partition directory) is written and fsynced under
   ``_sluice_staging/``;
2. the commit record — the offset range and, for each file, its staged and its final path — is
   written to ``.tmp-<id>.json``, fsynced, and **renamed to** ``<end>.json``: **that rename is
   the commit point**;
3. each staged file is renamed to its final path (the directories are fsynced);
4. the staging directory and the partition's older commit records are deleted (a record is
   kept until a later one is complete, so the newest record always holds the resume offset).

Recovery (:meth:`TableDir.recover`, when a partition is assigned to a task): every commit
record of the partition is rolled forward — a listed file still staged is renamed into place —,
then everything left under the partition's staging directory and any ``.tmp-`` record is
deleted (it belongs to a commit that never reached step 2), and the newest record's ``end`` is
the offset to resume from. The task seeks the consumer there (the consumer group's committed
offset may lag: it is committed only after the sink said the data was published) and drops any
record below it, so that a ``kill -9`` at any point leaves every record in the table exactly
once once the partition is assigned again:

- before step 2: nothing was published; the records are read again from the last ``end``;
- between steps 2 and 3, or during 3: the commit is complete in the record; recovery moves the
  remaining files into place (until then readers may see part of the commit — never a record
  twice);
- after step 3: the commit is complete; the consumer offsets may not be, and do not matter.

Ranges of one partition never overlap (a task starts each commit at or after the previous
``end``), so a data file's name is unique. The protocol assumes one writer per topic-partition
at a time, which Kafka's group protocol gives (a partition is revoked, and its buffer committed,
before another task gets it); a *zombie* task that kept writing after losing its partition is
not fenced. Several tasks, in one process or many, may write one table: they write different
partitions, and schema changes happen under the ``flock`` of ``_sluice_lock``.

**Test hook.** ``SLUICE_SPARK_SINK_CRASH_AT=<point>[:<n>]`` makes the process ``kill -9``
itself at the n-th time (default 1) it reaches ``<point>`` — ``before-commit-record`` (files
staged), ``after-commit-record`` (record renamed, no file moved) or ``mid-publish`` (the first
file of a commit moved). For crash tests only; never set it in production.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type information
import pyarrow.parquet as pq  # type: ignore[import-untyped]  # no type information

from sluice.connect import ConnectError

__all__ = ["COMMITS", "STAGING", "Commit", "TableDir"]

COMMITS = "_sluice_commits"
STAGING = "_sluice_staging"
TABLE_META = "_sluice_table.json"
LOCK = "_sluice_lock"
COMMON_METADATA = "_common_metadata"
CRASH_ENV = "SLUICE_SPARK_SINK_CRASH_AT"

_crash_lock = threading.Lock()
_crash_counts: dict[str, int] = {}


def _crash_point(point: str) -> None:
    """The test hook of the module docstring."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    name, _, nth = wanted.partition(":")
    if name != point:
        return
    with _crash_lock:
        _crash_counts[point] = _crash_counts.get(point, 0) + 1
        if _crash_counts[point] >= int(nth or 1):
            os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class Commit:
    """A published commit of one topic-partition: offsets ``[start, end)`` and its files."""

    topic: str
    partition: int
    start: int
    end: int
    files: tuple[tuple[str, str, int], ...]  # (staged path, final path, rows), table-relative

    def to_json(self) -> dict[str, Any]:
        """The commit record's content."""
        return {
            "version": 1,
            "topic": self.topic,
            "partition": self.partition,
            "start": self.start,
            "end": self.end,
            "files": [{"staged": s, "path": p, "rows": n} for s, p, n in self.files],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Commit:
        """A commit read back from its record."""
        files = tuple((f["staged"], f["path"], int(f["rows"])) for f in data["files"])
        return cls(data["topic"], int(data["partition"]), data["start"], data["end"], files)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


class TableDir:
    """One table's directory; see the module docstring. Thread-safe per topic-partition: one
    thread at a time may publish or recover a given partition."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _commits(self, topic: str, partition: int) -> Path:
        return self.path / COMMITS / topic / str(partition)

    def _staging(self, topic: str, partition: int) -> Path:
        return self.path / STAGING / topic / str(partition)

    # -- publishing ---------------------------------------------------------------------------

    def publish(
        self, topic: str, partition: int, start: int, end: int, files: Mapping[str, pa.Table]
    ) -> Commit:
        """Publish ``files`` (final table-relative path → rows) for offsets ``[start, end)``."""
        staging = self._staging(topic, partition) / f"{start}-{end}-{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True, exist_ok=True)
        entries = []
        for i, (final, table) in enumerate(sorted(files.items())):
            staged = staging / f"f{i}.parquet"
            with open(staged, "wb") as handle:
                pq.write_table(table, handle)
                handle.flush()
                os.fsync(handle.fileno())
            entries.append((str(staged.relative_to(self.path)), final, table.num_rows))
        _fsync_dir(staging)
        commit = Commit(topic, partition, start, end, tuple(entries))
        _crash_point("before-commit-record")

        records = self._commits(topic, partition)
        records.mkdir(parents=True, exist_ok=True)
        temporary = records / f".tmp-{uuid.uuid4().hex}.json"
        _write_durably(temporary, json.dumps(commit.to_json()).encode())
        os.rename(temporary, records / f"{end:020d}.json")  # the commit point
        _fsync_dir(records)
        _crash_point("after-commit-record")

        self._move_into_place(commit)
        shutil.rmtree(staging, ignore_errors=True)
        self._drop_records_before(topic, partition, end)
        return commit

    def _move_into_place(self, commit: Commit) -> None:
        """Step 3: rename the staged files of ``commit`` to their final paths (idempotent)."""
        directories = set()
        for i, (staged, final, _rows) in enumerate(commit.files):
            source, target = self.path / staged, self.path / final
            if source.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                os.rename(source, target)
                directories.add(target.parent)
                if i == 0:
                    _crash_point("mid-publish")
            elif not target.exists():
                raise ConnectError(
                    f"spark-sink: table {self.path}: commit {commit.topic}[{commit.partition}] "
                    f"[{commit.start}, {commit.end}) lists {final}, which is neither staged "
                    f"({staged}) nor in place: the table directory was changed by hand"
                )
        for directory in directories:
            _fsync_dir(directory)

    def _drop_records_before(self, topic: str, partition: int, end: int) -> None:
        for path in self._records(topic, partition):
            if int(path.stem) < end:
                path.unlink(missing_ok=True)

    def _records(self, topic: str, partition: int) -> list[Path]:
        directory = self._commits(topic, partition)
        if not directory.is_dir():
            return []
        found = [p for p in directory.iterdir() if p.suffix == ".json" and p.stem.isdigit()]
        return sorted(found, key=lambda p: int(p.stem))

    # -- recovery -----------------------------------------------------------------------------

    def recover(self, topic: str, partition: int) -> int | None:
        """Finish the partition's published commits, delete its unpublished files; returns the
        offset to resume from (None: nothing of this partition was ever published)."""
        records = self._records(topic, partition)
        for path in records:
            self._move_into_place(Commit.from_json(json.loads(path.read_bytes())))
        directory = self._commits(topic, partition)
        if directory.is_dir():
            for leftover in directory.glob(".tmp-*"):
                leftover.unlink(missing_ok=True)
        shutil.rmtree(self._staging(topic, partition), ignore_errors=True)
        if not records:
            return None
        end = int(records[-1].stem)
        self._drop_records_before(topic, partition, end)
        return end

    # -- table metadata -----------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the table's schema lock (across processes and threads)."""
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / LOCK, "a+b") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def read_meta(self) -> dict[str, Any] | None:
        """The table's ``_sluice_table.json`` (None: no table yet)."""
        try:
            data: dict[str, Any] = json.loads((self.path / TABLE_META).read_bytes())
        except FileNotFoundError:
            return None
        return data

    def write_meta(self, meta: Mapping[str, Any], data_schema: pa.Schema) -> None:
        """Replace ``_sluice_table.json`` and ``_common_metadata`` (call under :meth:`locked`)."""
        for leftover in self.path.glob(".tmp-*"):  # of a writer that died holding the lock
            leftover.unlink(missing_ok=True)
        temporary = self.path / f".tmp-{uuid.uuid4().hex}.json"
        _write_durably(temporary, json.dumps(meta, indent=1).encode())
        os.rename(temporary, self.path / TABLE_META)
        temporary = self.path / f".tmp-{uuid.uuid4().hex}.parquet"
        pq.write_metadata(data_schema, temporary)
        os.rename(temporary, self.path / COMMON_METADATA)
        _fsync_dir(self.path)
