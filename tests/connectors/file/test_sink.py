"""file-sink: appends values or whole records, flushes on flush(), rotates by size, and repairs
a torn last line after a crash.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from sluice.connect.api.connector import TopicPartition
from sluice.connect.api.data import Field, Schema, SinkRecord, Struct
from sluice.connect.runtime.plugins import connector_class
from sluice.connectors.file import FileSinkConnector, FileSinkTask


def record(value: Any, offset: int = 0, **extra: Any) -> SinkRecord:
    key = extra.pop("key", None)
    return SinkRecord("t", 0, None, key, None, value, kafka_offset=offset, **extra)


@pytest.fixture
def sink() -> Iterator[Any]:
    """``sink(file=..., **settings)``: a started FileSinkTask (underscores become dots)."""
    started: list[FileSinkTask] = []

    def make(**config: Any) -> FileSinkTask:
        task = FileSinkTask()
        task.start({key.replace("_", "."): value for key, value in config.items()})
        started.append(task)
        return task

    yield make
    for task in started:
        task.stop()


def test_values_are_appended_one_per_line(tmp_path, sink):
    out = tmp_path / "sub" / "out.txt"
    task = sink(file=str(out))
    person = Schema.struct([Field("name", Schema("string"))])
    task.put(
        [
            record("text"),
            record(None),  # a tombstone: skipped
            record({"n": 1, "d": Decimal("1.50")}),
            record(b"raw bytes"),
            record(42),
            record(Struct(person, {"name": "Ada"})),
        ]
    )
    task.flush({TopicPartition("t", 0): 6})
    assert out.read_text().splitlines() == [
        "text",
        '{"n":1,"d":"1.50"}',
        "raw bytes",
        "42",
        '{"name":"Ada"}',
    ]


def test_json_writes_the_whole_record(tmp_path, sink):
    out = tmp_path / "out.jsonl"
    task = sink(file=str(out), format="json")
    task.put([record({"a": 1}, 7, key=b"k", timestamp=1000, headers=[("h", b"v")])])
    task.flush({})
    key, header = base64.b64encode(b"k").decode(), base64.b64encode(b"v").decode()
    assert out.read_text() == (
        f'{{"topic":"t","partition":0,"offset":7,"timestamp":1000,"key":"{key}",'
        f'"value":{{"a":1}},"headers":[["h","{header}"]]}}\n'
    )


def test_flush_makes_the_buffered_lines_visible(tmp_path, sink):
    out = tmp_path / "out.txt"
    task = sink(file=str(out))
    task.put([record("x" * 10)])
    assert out.read_text() == "", "buffered until flush"
    task.flush({})
    assert out.read_text() == "x" * 10 + "\n"


def test_an_existing_file_is_appended_to(tmp_path, sink):
    out = tmp_path / "out.txt"
    out.write_text("before\n")
    task = sink(file=str(out))
    task.put([record("after")])
    task.stop()
    assert out.read_text() == "before\nafter\n"


def test_rotation_by_size_numbers_files_oldest_first(tmp_path, sink):
    out = tmp_path / "out.txt"
    task = sink(file=str(out), rotate_bytes=10)
    task.put([record(f"line{n}") for n in range(5)])  # 6 bytes each: one per file
    task.put([record("a-line-longer-than-ten")])
    task.put([record("tail")])
    task.flush({})
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["out.txt", *(f"out.txt.{n}" for n in range(1, 7))]
    assert (tmp_path / "out.txt.1").read_text() == "line0\n"
    assert (tmp_path / "out.txt.6").read_text() == "a-line-longer-than-ten\n"
    assert out.read_text() == "tail\n"
    everything = "".join((tmp_path / f"out.txt.{n}").read_text() for n in range(1, 7))
    assert (
        everything + out.read_text()
        == "".join(
            f"{v}\n"
            for v in ["line0", "line1", "line2", "line3", "line4", "a-line-longer-than-ten"]
        )
        + "tail\n"
    )


def test_rotation_continues_the_numbering_after_a_restart(tmp_path, sink):
    out = tmp_path / "out.txt"
    (tmp_path / "out.txt.1").write_text("old\n")
    (tmp_path / "out.txt.7").write_text("old\n")
    task = sink(file=str(out), rotate_bytes=4)
    task.put([record("abc"), record("def")])
    task.flush({})
    assert (tmp_path / "out.txt.8").read_text() == "abc\n"
    assert out.read_text() == "def\n"


def test_a_torn_last_line_is_cut_off_on_start(tmp_path, sink):
    out = tmp_path / "out.txt"
    out.write_text("complete\nto")  # a crash cut the write of "torn" short
    task = sink(file=str(out))
    task.put([record("torn")])  # delivered again: its offset was never committed
    task.flush({})
    assert out.read_text() == "complete\ntorn\n"


def test_one_task_writes_the_file(tmp_path):
    assert connector_class("file-sink") is FileSinkConnector
    assert (
        connector_class("org.apache.kafka.connect.file.FileStreamSinkConnector")
        is FileSinkConnector
    )
    connector = FileSinkConnector()
    connector.start({"file": str(tmp_path / "out.txt"), "topics": "a,b"})
    assert connector.task_configs(4) == [{"file": str(tmp_path / "out.txt"), "topics": "a,b"}]
    assert connector.task_class() is FileSinkTask
    problems = {v.name: v.errors for v in connector.validate({"format": "csv"})}
    assert problems["file"] == ["missing required configuration (The file to append to.)"]
    assert problems["format"] == ["must be one of value, json, got 'csv'"]


def test_pre_commit_flushes_and_returns_the_offsets(tmp_path, sink):
    out = tmp_path / "out.txt"
    task = sink(file=str(out))
    task.put([record("x", 3)])
    positions = {TopicPartition("t", 0): 4}
    assert task.pre_commit(positions) == positions
    assert Path(out).read_text() == "x\n"
