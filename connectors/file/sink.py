"""``file-sink``: appends records to a file, one line each; flushes on ``flush``; rotates by size.

Kafka's ``FileStreamSinkConnector`` (``file``) with a format and rotation:

- ``format=value`` writes the value as text: strings as they are, bytes as they are, anything
  else (dicts, lists, numbers, structs) as JSON.
- ``format=json`` writes the whole record as one JSON object: ``topic``, ``partition``,
  ``offset``, ``timestamp``, ``key``, ``value``, ``headers`` (bytes as base64 text).

Records whose value is None (tombstones) are skipped. Values are not escaped: a string value
containing a newline spans two lines.

On disk: lines are appended to ``file`` (created with its directory). ``flush`` writes the buffer
and fsyncs, and only then may the runtime commit the consumer offsets. With ``rotate.bytes`` > 0,
a line that would take the file past that size first closes the file (fsynced) and renames it
``file.1`` — then ``file.2``, and so on: higher numbers are newer, existing ones are never renamed
— and a new ``file`` is started. One task writes the file (``tasks.max`` is ignored).

After a crash or kill: records after the last committed offset are delivered again and appended
again (at-least-once: the lines written since the last flush may appear twice). A torn last line
(the crash cut a write short; it has no newline) is cut off when the task starts again.

>>> import tempfile
>>> from pathlib import Path
>>> from sluice.connect import SinkRecord
>>> path = Path(tempfile.mkdtemp()) / "out.txt"
>>> task = FileSinkTask(); task.start({"file": str(path)})
>>> task.put([SinkRecord("t", 0, None, None, None, "hello", kafka_offset=0),
...           SinkRecord("t", 0, None, None, None, {"n": 1}, kafka_offset=1)])
>>> task.flush({}); path.read_text()
'hello\\n{"n":1}\\n'
>>> task.stop()
"""

from __future__ import annotations

import base64
import logging
import os
import re
from typing import IO, Any

import orjson

from sluice.connect import (
    ConfigDef,
    SinkBatch,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Struct,
    Task,
    TopicPartition,
    at_least,
    one_of,
)
from sluice.connectors.file._config import known_encoding

__all__ = ["FileSinkConnector", "FileSinkTask", "to_json"]

log = logging.getLogger("sluice.connectors.file")

CONFIG = (
    ConfigDef()
    .define("file", "string", doc="The file to append to.", importance="high")
    .define(
        "format",
        "string",
        "value",
        doc="value: the value as text (JSON unless a string); json: the whole record as JSON.",
        validator=one_of("value", "json"),
    )
    .define(
        "rotate.bytes",
        "long",
        0,
        doc="Rotate the file before it grows past this size (0: never).",
        validator=at_least(0),
    )
    .define("encoding", "string", "utf-8", doc="Text encoding.", validator=known_encoding)
)


def _default(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.values
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)  # Decimal and the like


def to_json(value: Any) -> bytes:
    """``value`` as compact JSON (structs as objects, bytes as base64, decimals as strings).

    >>> to_json({"a": [1, 2.5, None], "b": b"hi"})
    b'{"a":[1,2.5,null],"b":"aGk="}'
    """
    return orjson.dumps(
        value, default=_default, option=orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS
    )


class FileSinkConnector(SinkConnector):
    """Appends the records of ``topics`` to a file (``file-sink``); see the module docstring."""

    CONFIG = CONFIG

    def start(self, config: dict[str, Any]) -> None:
        CONFIG.parse(config)
        self._config = dict(config)

    def task_class(self) -> type[Task]:
        return FileSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, Any]]:
        return [dict(self._config)]  # one writer per file


def _cut_torn_tail(path: str) -> None:
    """Truncate the file after its last newline (a crash may have cut the last write short)."""
    with open(path, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - 65536)
            handle.seek(start)
            chunk = handle.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
        if end < size:
            log.warning("%s: cutting off a torn last line (%d bytes)", path, size - end)
            handle.truncate(end)


class FileSinkTask(SinkTask):
    """Appends records to the configured file; see the module docstring. Not thread-safe."""

    def __init__(self) -> None:
        self._handle: IO[bytes] | None = None
        self._size = 0
        self._next_index = 1
        self._directory_changed = False

    def start(self, config: dict[str, Any]) -> None:
        values = CONFIG.parse(config)
        self._path = os.path.abspath(values["file"])
        self._json = values["format"] == "json"
        self._rotate: int = values["rotate.bytes"]
        self._encoding: str = values["encoding"]
        os.makedirs(os.path.dirname(self._path), exist_ok=True)
        directory, name = os.path.split(self._path)
        numbered = re.compile(re.escape(name) + r"\.(\d+)")
        indexes = [int(m.group(1)) for f in os.listdir(directory) if (m := numbered.fullmatch(f))]
        self._next_index = max(indexes, default=0) + 1
        self._open()

    def _open(self) -> None:
        if os.path.exists(self._path):
            _cut_torn_tail(self._path)
        else:
            self._directory_changed = True
        self._handle = open(self._path, "ab")  # noqa: SIM115 - kept open until stop()
        self._size = self._handle.tell()

    def _value_line(self, value: Any) -> bytes:
        if isinstance(value, bytes | bytearray):
            return bytes(value) + b"\n"
        if isinstance(value, str):
            return value.encode(self._encoding) + b"\n"
        return to_json(value) + b"\n"

    def _line(self, record: SinkRecord) -> bytes:
        if not self._json:
            return self._value_line(record.value)
        whole = {
            "topic": record.topic,
            "partition": record.kafka_partition,
            "offset": record.kafka_offset,
            "timestamp": record.timestamp,
            "key": record.key,
            "value": record.value,
            "headers": [[name, value] for name, value in record.headers],
        }
        return to_json(whole) + b"\n"

    def put(self, records: list[SinkRecord]) -> None:
        if not self._json:
            self._put_values([record.value for record in records])
            return
        self._write([self._line(record) for record in records if record.value is not None])

    def put_batch(self, batch: SinkBatch) -> None:
        if self._json:
            self.put(batch.records())
        else:
            self._put_values(batch.values)

    def _put_values(self, values: list[Any]) -> None:
        # Hot path: text values are joined and encoded in one call each, and written at once.
        try:
            text = "\n".join(values)  # TypeError unless every value is a str
        except TypeError:
            pass
        else:
            if not values:
                return
            data = (text + "\n").encode(self._encoding)
            if not self._rotate or self._size + len(data) <= self._rotate:
                self._append(data)
                return
        self._write([self._value_line(value) for value in values if value is not None])

    def _write(self, lines: list[bytes]) -> None:
        """Append ``lines``, rotating the file between two of them when it is due."""
        if self._rotate:
            for line in lines:
                if self._size and self._size + len(line) > self._rotate:
                    self._roll()
                self._append(line)
        elif lines:
            self._append(b"".join(lines))

    def _append(self, data: bytes) -> None:
        assert self._handle is not None
        self._handle.write(data)
        self._size += len(data)

    def _roll(self) -> None:
        self._sync()
        assert self._handle is not None
        self._handle.close()
        target = f"{self._path}.{self._next_index}"
        while os.path.lexists(target):  # never overwrite a rotated file
            self._next_index += 1
            target = f"{self._path}.{self._next_index}"
        os.rename(self._path, target)
        self._next_index += 1
        log.info("rotated %s to %s", self._path, target)
        self._open()

    def _sync(self) -> None:
        if self._handle is not None:
            self._handle.flush()
            os.fsync(self._handle.fileno())
        if self._directory_changed:  # a created or renamed file survives a power loss
            fd = os.open(os.path.dirname(self._path), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self._directory_changed = False

    def flush(self, offsets: dict[TopicPartition, int]) -> None:
        self._sync()

    def stop(self) -> None:
        if self._handle is not None:
            self._sync()
            self._handle.close()
            self._handle = None
