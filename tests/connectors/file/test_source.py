"""file-source: tailing, held-back partial lines, rotation (live and across a restart),
truncation, JSON lines, globs, task splitting and a prompt stop().

Tasks are driven directly; committed offsets go through the fake offset store (conftest).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sluice.connect.api.errors import ConverterError
from sluice.connect.runtime.plugins import connector_class
from sluice.connectors.file import FileSourceConnector, FileSourceTask
from sluice.errors import ConfigError


def append(path: Path, data: str | bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data.encode() if isinstance(data, str) else data)


def values(records: list[Any]) -> list[Any]:
    return [record.value for record in records]


def positions(records: list[Any]) -> list[int]:
    return [record.source_offset["position"] for record in records]


class StepClock:
    """Monotonic seconds that advance a little on every read, and jump on demand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 0.001
        return self.now


def test_tails_appended_lines_with_byte_positions_as_offsets(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    log.write_text("hello\nworld\n")
    task = tail_task(file=str(log))
    first = drain(task, 2)
    assert values(first) == ["hello", "world"]
    assert positions(first) == [6, 12]
    assert first[0].source_partition == {"file": str(log)}
    assert first[0].topic == "logs"
    assert first[0].value_schema is not None and first[0].value_schema.type == "string"
    assert task.poll() is None
    append(log, "again\r\n")
    later = drain(task, 1)
    assert (values(later), positions(later)) == (["again"], [19])


def test_a_partial_last_line_is_held_back_until_its_newline(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    log.write_text("one\ntw")
    task = tail_task(file=str(log))
    assert values(drain(task)) == ["one"]
    append(log, "o\nthr")
    came = drain(task)
    assert (values(came), positions(came)) == (["two"], [8])


def test_a_file_that_does_not_exist_yet_is_read_once_created(tmp_path, tail_task, drain):
    log = tmp_path / "later.log"
    task = tail_task(file=str(log))
    assert task.poll() is None
    log.write_text("finally\n")
    assert values(drain(task, 1)) == ["finally"]


def test_batch_size_bounds_each_poll(tmp_path, tail_task):
    log = tmp_path / "app.log"
    log.write_text("".join(f"{n}\n" for n in range(5)))
    task = tail_task(file=str(log), batch_size=2)
    sizes = [len(task.poll() or []) for _ in range(4)]
    assert sizes == [2, 2, 1, 0]


def test_encoding(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    log.write_bytes("café\n".encode("latin-1"))
    assert values(drain(tail_task(file=str(log), encoding="latin-1"))) == ["café"]


def test_rotation_by_rename_loses_and_repeats_nothing(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    log.write_text("a\nb\n")
    task = tail_task(file=str(log))
    assert values(drain(task, 2)) == ["a", "b"]
    append(log, "c\n")
    log.rename(tmp_path / "app.log.1")
    append(tmp_path / "app.log.1", "d\n")  # the writer still had the old file open
    log.write_text("e\nf\n")
    came = drain(task, 4)
    assert values(came) == ["c", "d", "e", "f"]
    assert positions(came) == [6, 8, 2, 4]
    assert {r.source_partition["file"] for r in came} == {str(log)}
    assert came[1].source_offset["fingerprint"] != came[2].source_offset["fingerprint"]
    assert drain(task) == []


def test_a_rotated_file_is_read_until_quiet_for_the_grace_period(tmp_path, offsets):
    log = tmp_path / "app.log"
    log.write_text("a\n")
    clock = StepClock()
    task = FileSourceTask(clock=clock)
    task.start(
        {"file": str(log), "topic": "t", "watch": "false", "poll.interval.ms": 1}
        | {"rotation.grace.ms": 10_000}
    )
    try:
        assert values(task.poll() or []) == ["a"]
        log.rename(tmp_path / "app.log.1")
        log.write_text("new\n")
        append(tmp_path / "app.log.1", "late\n")
        assert values(task.poll() or []) == ["late"]
        append(tmp_path / "app.log.1", "later, no newline")
        assert task.poll() is None  # still within the grace period: the new file waits
        clock.now += 10
        # the rotated file is complete: its unterminated last line is handed out
        assert values(task.poll() or []) == ["later, no newline"]
        assert values(task.poll() or []) == ["new"]
    finally:
        task.stop()


@pytest.mark.parametrize("batch", [1, 100])
def test_a_restart_between_rotation_and_catch_up_finishes_the_rotated_file(
    tmp_path, tail_task, drain, offsets, batch
):
    log = tmp_path / "app.log"
    log.write_text("a\nb\n")
    first = tail_task(file=str(log))
    offsets.commit(drain(first, 2))
    first.stop()
    # while the task is down: more lines, then rotation, then a new file
    append(log, "c\nd\n")
    log.rename(tmp_path / "app.log.1")
    log.write_text("e\n")
    second = tail_task(file=str(log), batch_size=batch)
    came = second.poll() or []
    assert values(came) == ["c", "d"][:batch]
    offsets.commit(came)
    second.stop()  # killed again: in the middle of the catch-up (batch=1), or right after it
    third = tail_task(file=str(log), batch_size=batch)
    came += drain(third)
    assert values(came) == ["c", "d", "e"]
    assert positions(came) == [6, 8, 2]


def test_a_restart_after_copytruncate_finishes_the_copy(tmp_path, tail_task, drain, offsets):
    log = tmp_path / "app.log"
    log.write_text("a\nb\n")
    first = tail_task(file=str(log))
    offsets.commit(drain(first, 2))
    first.stop()
    append(log, "c\n")
    shutil.copy(log, tmp_path / "app.log.1")
    log.write_text("fresh\n")  # truncated and written again: same inode
    came = drain(tail_task(file=str(log)))
    assert values(came) == ["c", "fresh"]


def test_a_restart_resumes_at_the_committed_position(tmp_path, tail_task, drain, offsets):
    log = tmp_path / "app.log"
    log.write_text("a\nb\n")
    first = tail_task(file=str(log), batch_size=1)
    offsets.commit(drain(first, 1))
    first.stop()
    append(log, "c\n")
    assert values(drain(tail_task(file=str(log)))) == ["b", "c"]


def test_a_kafka_offset_without_fingerprint_resumes_at_its_position(
    tmp_path, tail_task, drain, offsets
):
    log = tmp_path / "app.log"
    log.write_text("old\nnew\n")
    offsets.committed[(("file", str(log)),)] = {"position": 4}
    assert values(drain(tail_task(file=str(log)))) == ["new"]


def test_truncation_restarts_at_zero(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    log.write_text("aaaa\nbbbb\n")
    task = tail_task(file=str(log))
    drain(task, 2)
    with open(log, "r+b") as handle:
        handle.truncate(0)
    append(log, "x\n")
    came = drain(task, 1)
    assert (values(came), positions(came)) == (["x"], [2])


def test_a_file_rewritten_in_place_past_the_position_is_read_from_zero(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    log.write_text("a\n")
    task = tail_task(file=str(log))
    drain(task, 1)
    log.write_text("zzzzzzz\nyy\n")  # same inode, longer, different first bytes
    assert values(drain(task, 2)) == ["zzzzzzz", "yy"]


def test_truncation_while_the_task_was_down_restarts_at_zero(tmp_path, tail_task, drain, offsets):
    log = tmp_path / "app.log"
    log.write_text("aaaa\nbbbb\n")
    first = tail_task(file=str(log))
    offsets.commit(drain(first, 2))
    first.stop()
    log.write_text("x\n")
    assert values(drain(tail_task(file=str(log)))) == ["x"]


def test_json_lines(tmp_path, tail_task, drain):
    log = tmp_path / "events.jsonl"
    log.write_text('{"a": 1}\n\n[1, 2]\n"text"\n')
    came = drain(tail_task(file=str(log), format="json"))
    assert values(came) == [{"a": 1}, [1, 2], "text"]
    assert came[0].value_schema is None


def test_malformed_json_names_file_and_line_after_the_good_lines(tmp_path, tail_task):
    log = tmp_path / "events.jsonl"
    log.write_text('{"a": 1}\n\n{"b": 2}\n{"bad\n{"c": 3}\n')
    task = tail_task(file=str(log), format="json")
    assert values(task.poll() or []) == [{"a": 1}, {"b": 2}]
    with pytest.raises(ConverterError, match=re.escape(f"{log}:4: malformed JSON")):
        task.poll()
    with pytest.raises(ConverterError, match=":4: "):
        task.poll()  # the task stays failed: the bad line is never skipped silently


def test_a_glob_follows_every_match_and_new_ones(tmp_path, tail_task, drain):
    (tmp_path / "a.log").write_text("a1\n")
    (tmp_path / "b.log").write_text("b1\nb2\n")
    (tmp_path / "c.txt").write_text("not me\n")
    task = tail_task(files=str(tmp_path / "*.log"))
    came = drain(task, 3)
    by_file = sorted((r.source_partition["file"], r.value) for r in came)
    assert by_file == [
        (str(tmp_path / "a.log"), "a1"),
        (str(tmp_path / "b.log"), "b1"),
        (str(tmp_path / "b.log"), "b2"),
    ]
    (tmp_path / "d.log").write_text("d1\n")
    came = drain(task, 1)
    assert [(r.source_partition["file"], r.value) for r in came] == [
        (str(tmp_path / "d.log"), "d1")
    ]


def test_a_recursive_glob_and_a_list_of_patterns(tmp_path, tail_task, drain):
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "y" / "deep.log").write_text("deep\n")
    (tmp_path / "top.txt").write_text("top\n")
    task = tail_task(files=[str(tmp_path / "**" / "*.log"), str(tmp_path / "top.txt")])
    assert sorted(values(drain(task, 2))) == ["deep", "top"]


def test_tasks_share_the_files(tmp_path):
    for name in ("a.log", "b.log", "c[1].log"):
        (tmp_path / name).write_text(f"{name}\n")
    connector = FileSourceConnector()
    connector.start({"files": str(tmp_path / "*.log"), "topic": "t", "tasks.max": "2"})
    try:
        assert connector.task_configs(1)[0]["files"] == [str(tmp_path / "*.log")]
        configs = connector.task_configs(2)
        assert len(configs) == 2
        assert all(c["topic"] == "t" for c in configs)
        seen: list[str] = []
        for config in configs:
            task = FileSourceTask()
            task.start({**config, "watch": "false", "poll.interval.ms": 10})
            seen += values(task.poll() or [])
            task.stop()
        assert sorted(seen) == ["a.log", "b.log", "c[1].log"]
        assert len(connector.task_configs(10)) == 3
    finally:
        connector.stop()


def test_new_matches_ask_for_a_task_reconfiguration(tmp_path):
    class Context:
        def __init__(self) -> None:
            self.requests = threading.Event()

        def request_task_reconfiguration(self) -> None:
            self.requests.set()

        def raise_error(self, error: Exception) -> None:
            raise error

    (tmp_path / "a.log").write_text("")
    (tmp_path / "b.log").write_text("")
    connector = FileSourceConnector()
    context = Context()
    connector.initialize(context)
    connector.start({"files": str(tmp_path / "*.log"), "topic": "t", "files.refresh.ms": 20})
    try:
        connector.task_configs(2)
        assert not context.requests.wait(0.1)
        (tmp_path / "c.log").write_text("")
        assert context.requests.wait(2.0)
    finally:
        connector.stop()


def test_kafka_filestream_source_keys_and_aliases(tmp_path):
    assert connector_class("org.apache.kafka.connect.file.FileStreamSourceConnector") is (
        FileSourceConnector
    )
    assert connector_class("file-source") is FileSourceConnector
    connector = FileSourceConnector()
    connector.start({"file": str(tmp_path / "in.txt"), "topic": "t"})
    assert connector.task_configs(3) == [{"topic": "t", "files": [str(tmp_path / "in.txt")]}]
    assert connector.task_class() is FileSourceTask


def test_settings_are_validated():
    problems = {v.name: v.errors for v in FileSourceConnector().validate({"topic": "t"})}
    assert problems["files"] == ["set `file` or `files`"]
    problems = {
        v.name: v.errors
        for v in FileSourceConnector().validate({"file": "x", "format": "xml", "encoding": "no"})
    }
    assert problems["topic"] == ["missing required configuration (The topic to write to.)"]
    assert problems["format"] == ["must be one of line, json, got 'xml'"]
    assert problems["encoding"] == ["unknown encoding 'no'"]
    with pytest.raises(ConfigError, match="files: set `file` or `files`"):
        FileSourceTask().start({"topic": "t"})


def test_stop_from_another_thread_ends_a_waiting_poll_at_once(tmp_path, tail_task):
    task = tail_task(file=str(tmp_path / "app.log"), poll_interval_ms=10_000, watch="true")
    result: list[Any] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    poller.start()
    time.sleep(0.1)
    started = time.monotonic()
    task.stop()
    poller.join(2.0)
    assert not poller.is_alive()
    assert time.monotonic() - started < 1.0
    assert result == [None]
    assert task.poll() is None  # and every later poll


def test_watchdog_wakes_a_waiting_poll_when_the_file_grows(tmp_path, tail_task):
    log = tmp_path / "app.log"
    log.write_text("")
    task = tail_task(file=str(log), poll_interval_ms=10_000, watch="true")
    result: list[Any] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    poller.start()
    time.sleep(0.1)
    started = time.monotonic()
    append(log, "now\n")
    poller.join(5.0)
    assert values(result[0]) == ["now"]
    assert time.monotonic() - started < 2.0, "woken by the notification, not the 10 s timer"


def test_the_polling_fallback_finds_changes_without_notifications(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    task = tail_task(file=str(log), watch="false", poll_interval_ms=20)
    assert task.poll() is None
    log.write_text("seen\n")
    assert values(drain(task, 1)) == ["seen"]


def test_files_are_never_written(tmp_path, tail_task, drain):
    log = tmp_path / "app.log"
    log.write_text("a\nb")
    before = (log.read_bytes(), os.stat(log).st_mtime_ns)
    drain(tail_task(file=str(log)))
    assert (log.read_bytes(), os.stat(log).st_mtime_ns) == before
