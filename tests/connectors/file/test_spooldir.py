"""spooldir-source: a file moves to finished only once all its records are acknowledged; files
that cannot be parsed go to the error directory with a reason file; a restart never repeats
committed records.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sluice.connect.api.data import Struct
from sluice.connect.runtime.plugins import connector_class
from sluice.connectors.file import SpoolDirSourceConnector, SpoolDirSourceTask
from sluice.errors import ConfigError


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    found = {name: tmp_path / name for name in ("input", "finished", "error")}
    found["input"].mkdir()
    return found


@pytest.fixture
def settings(dirs: dict[str, Path]) -> dict[str, Any]:
    return {
        "input_path": str(dirs["input"]),
        "finished_path": str(dirs["finished"]),
        "error_path": str(dirs["error"]),
    }


def names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory)) if directory.exists() else []


def values(records: list[Any]) -> list[Any]:
    return [record.value for record in records]


def test_a_file_is_moved_only_after_all_its_records_are_acknowledged(
    dirs, settings, spool_task, drain
):
    (dirs["input"] / "a.txt").write_text("one\ntwo\nthree")
    task = spool_task(**settings)
    records = drain(task)
    assert values(records) == ["one", "two", "three"]
    assert records[0].source_partition == {"file": "a.txt"}
    assert [r.source_offset["record"] for r in records] == [1, 2, 3]
    assert records[0].headers == [("file.name", "a.txt")]
    for record in records[:2]:
        task.commit_record(record)
    task.poll()
    assert names(dirs["input"]) == ["a.txt"], "one record is not acknowledged yet"
    task.commit_record(records[2])
    assert names(dirs["input"]) == []
    assert names(dirs["finished"]) == ["a.txt"]
    assert (dirs["finished"] / "a.txt").read_text() == "one\ntwo\nthree"


def test_committed_offsets_also_complete_a_file(dirs, settings, spool_task, drain, offsets):
    (dirs["input"] / "a.txt").write_text("one\ntwo\n")
    task = spool_task(**settings)
    records = drain(task)
    task.commit()
    assert names(dirs["input"]) == ["a.txt"], "nothing committed yet"
    offsets.commit(records)  # e.g. a transform dropped records: no commit_record for them
    task.commit()
    assert names(dirs["finished"]) == ["a.txt"]


def test_files_are_read_in_name_order_and_batches(dirs, settings, spool_task):
    (dirs["input"] / "b.txt").write_text("b1\n")
    (dirs["input"] / "a.txt").write_text("a1\na2\na3\n")
    task = spool_task(**settings, batch_size=2)
    assert values(task.poll() or []) == ["a1", "a2"]
    assert values(task.poll() or []) == ["a3", "b1"]
    assert task.poll() is None


def test_csv_with_a_header_becomes_structs(dirs, settings, spool_task, drain):
    (dirs["input"] / "people.csv").write_text('id,name\n1,Ada\n\n2,"Turing, Alan"\n')
    records = drain(spool_task(**settings, format="csv"))
    assert [r.value.values for r in records] == [
        {"id": "1", "name": "Ada"},
        {"id": "2", "name": "Turing, Alan"},
    ]
    assert isinstance(records[0].value, Struct)
    schema = records[0].value_schema
    assert schema is not None and [f.name for f in schema.fields] == ["id", "name"]


def test_json_lines(dirs, settings, spool_task, drain):
    (dirs["input"] / "e.jsonl").write_text('{"a": 1}\n\n[2]\n')
    assert values(drain(spool_task(**settings, format="json"))) == [{"a": 1}, [2]]


@pytest.mark.parametrize(
    ("format", "content", "reason"),
    [
        ("json", '{"a": 1}\n{"a": \n', "line 2: malformed JSON"),
        ("csv", "a,b\n1,2\n1,2,3\n", "line 3: 3 fields, the header has 2"),
        ("csv", "a,a\n1,2\n", "line 1: column 'a' appears twice in the header"),
        ("line", b"ok\n\xff\xfe\n", "line 2: not utf-8 text"),
    ],
)
def test_a_file_that_cannot_be_parsed_goes_to_the_error_directory_with_a_reason(
    dirs, settings, spool_task, drain, format, content, reason
):
    bad = dirs["input"] / "bad.data"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content)
    good = {"json": '{"ok": 1}\n', "csv": "a\n1\n", "line": "fine\n"}[format]
    (dirs["input"] / "good.data").write_text(good)
    task = spool_task(**settings, format=format)
    came = drain(task)
    assert len(came) == 1, "no record of the bad file; the good file is read"
    assert names(dirs["error"]) == ["bad.data", "bad.data.error"]
    assert reason in (dirs["error"] / "bad.data.error").read_text()
    assert (dirs["error"] / "bad.data").read_bytes() == (
        content if isinstance(content, bytes) else content.encode()
    )


def test_a_restart_never_repeats_committed_records(dirs, settings, spool_task, offsets, drain):
    (dirs["input"] / "a.txt").write_text("1\n2\n3\n4\n5\n")
    first = spool_task(**settings, batch_size=2)
    offsets.commit(first.poll() or [])
    first.poll()  # records 3 and 4 were produced but never committed
    first.stop()
    second = spool_task(**settings)
    records = drain(second)
    assert values(records) == ["3", "4", "5"]
    for record in records:
        second.commit_record(record)
    assert names(dirs["finished"]) == ["a.txt"]


def test_a_restart_after_everything_was_committed_only_moves_the_file(
    dirs, settings, spool_task, offsets, drain
):
    (dirs["input"] / "a.txt").write_text("1\n2\n")
    first = spool_task(**settings)
    offsets.commit(drain(first))
    first.stop()  # killed before the acknowledgements reached the task
    second = spool_task(**settings)
    assert drain(second) == []
    assert names(dirs["finished"]) == ["a.txt"]


def test_a_new_file_with_an_old_name_is_read_from_its_start(
    dirs, settings, spool_task, offsets, drain
):
    (dirs["input"] / "a.txt").write_text("old\n")
    task = spool_task(**settings)
    records = drain(task)
    offsets.commit(records)
    task.commit_record(records[0])
    (dirs["input"] / "a.txt").write_text("new\n")
    assert values(drain(task)) == ["new"]
    task.commit_record(records[0])  # a late duplicate acknowledgement changes nothing
    assert names(dirs["input"]) == ["a.txt"]
    assert names(dirs["finished"]) == ["a.txt"]


def test_a_taken_name_in_the_finished_directory_gets_a_suffix(dirs, settings, spool_task, drain):
    dirs["finished"].mkdir()
    (dirs["finished"] / "a.txt").write_text("earlier\n")
    (dirs["input"] / "a.txt").write_text("x\n")
    task = spool_task(**settings)
    for record in drain(task):
        task.commit_record(record)
    assert names(dirs["finished"]) == ["a.txt", "a.txt.1"]


def test_an_empty_file_is_finished_at_once(dirs, settings, spool_task, drain):
    (dirs["input"] / "empty.csv").write_text("")
    (dirs["input"] / "header.csv").write_text("a,b\n")
    assert drain(spool_task(**settings, format="csv")) == []
    assert names(dirs["finished"]) == ["empty.csv", "header.csv"]


def test_cleanup_policy_delete(dirs, settings, spool_task, drain):
    (dirs["input"] / "a.txt").write_text("x\n")
    task = spool_task(**{**settings, "finished_path": None}, cleanup_policy="delete")
    for record in drain(task):
        task.commit_record(record)
    assert names(dirs["input"]) == []
    assert not dirs["finished"].exists()


def test_the_pattern_and_hidden_files(dirs, settings, spool_task, drain):
    for name in ("a.csv", "b.txt", ".c.csv"):
        (dirs["input"] / name).write_text("x\n")
    default = spool_task(**settings)
    assert [r.source_partition["file"] for r in drain(default)] == ["a.csv", "b.txt"]
    task = spool_task(**settings, input_file_pattern=r".*\.csv")
    assert [r.source_partition["file"] for r in drain(task)] == [".c.csv", "a.csv"]


def test_files_younger_than_the_minimum_age_are_left_alone(dirs, settings, spool_task, drain):
    young = dirs["input"] / "young.txt"
    young.write_text("x\n")
    task = spool_task(**settings, file_minimum_age_ms=60_000)
    assert drain(task) == []
    an_hour_ago = time.time() - 3600
    os.utime(young, (an_hour_ago, an_hour_ago))
    assert values(drain(task)) == ["x"]


def test_tasks_share_the_directory_without_overlap(dirs, settings, offsets):
    for n in range(20):
        (dirs["input"] / f"f{n:02}.txt").write_text(f"{n}\n")
    connector = SpoolDirSourceConnector()
    connector.start({key.replace("_", "."): v for key, v in settings.items()} | {"topic": "t"})
    configs = connector.task_configs(3)
    seen: list[list[str]] = []
    for config in configs:
        task = SpoolDirSourceTask()
        task.start({**config, "watch": "false", "poll.interval.ms": 10})
        seen.append(values(task.poll() or []))
        task.stop()
    assert sorted(v for share in seen for v in share) == sorted(str(n) for n in range(20))
    assert all(share for share in seen), f"every task has files: {seen}"


def test_settings_are_validated(dirs, settings):
    assert connector_class("spooldir-source") is SpoolDirSourceConnector
    raw = {key.replace("_", "."): v for key, v in settings.items()} | {"topic": "t"}
    problems = {
        v.name: v.errors
        for v in SpoolDirSourceConnector().validate(
            {**raw, "finished.path": None, "error.path": raw["input.path"], "format": "xml"}
        )
    }
    assert problems["finished.path"] == ["required with cleanup.policy=move"]
    assert problems["error.path"] == ["must not be input.path"]
    assert problems["format"] == ["must be one of csv, json, line, got 'xml'"]
    with pytest.raises(ConfigError, match=r"input\.path: no such directory"):
        SpoolDirSourceTask().start({**raw, "input.path": str(dirs["input"] / "missing")})


def test_stop_from_another_thread_ends_a_waiting_poll_at_once(settings, spool_task):
    task = spool_task(**settings, poll_interval_ms=10_000, watch="true")
    poller = threading.Thread(target=task.poll)
    poller.start()
    time.sleep(0.1)
    started = time.monotonic()
    task.stop()
    poller.join(2.0)
    assert not poller.is_alive()
    assert time.monotonic() - started < 1.0


def test_watchdog_wakes_a_waiting_poll_when_a_file_arrives(dirs, settings, spool_task):
    task = spool_task(**settings, poll_interval_ms=10_000, watch="true")
    result: list[Any] = []
    poller = threading.Thread(target=lambda: result.append(task.poll()))
    poller.start()
    time.sleep(0.1)
    started = time.monotonic()
    staging = dirs["input"].parent / "staging.txt"
    staging.write_text("arrived\n")
    staging.rename(dirs["input"] / "arrived.txt")  # complete files are renamed in
    poller.join(5.0)
    assert values(result[0]) == ["arrived"]
    assert time.monotonic() - started < 2.0
