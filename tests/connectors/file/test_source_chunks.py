"""The file source reads lines in bulk (a chunk per file per poll): every line still becomes the
record, and carries the offset, that reading it on its own would give."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.connect.api.data import SourceBatch
from sluice.connectors.file import FileSourceTask
from sluice.connectors.file._fingerprint import fingerprint

lines = st.lists(
    st.one_of(
        st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")),
        st.sampled_from([b"", b"\r", b"a\r", b"\r\r", b"\xff\xfe", b"\xe2\x82", b"x" * 700]),
    ),
    max_size=40,
)


def _expected(content: bytes, encoding: str, inode: int) -> list[tuple[str, dict[str, Any]]]:
    found, position = [], 0
    for raw in content.split(b"\n")[:-1]:  # only whole lines
        position += len(raw) + 1
        text = raw.removesuffix(b"\r").decode(encoding, errors="replace")
        mark = fingerprint(content[: min(1024, position)])
        found.append((text, {"position": position, "fingerprint": mark, "inode": inode}))
    return found


@settings(max_examples=60, deadline=None)
@given(
    lines=lines,
    tail=st.binary(max_size=5).map(lambda b: b.replace(b"\n", b"")),
    batch=st.integers(1, 50),
    encoding=st.sampled_from(["utf-8", "latin-1", "utf-16-le", "shift_jis"]),
)
def test_bulk_reading_gives_each_line_and_its_offset(
    lines: list[bytes], tail: bytes, batch: int, encoding: str
) -> None:
    content = b"".join(line + b"\n" for line in lines) + tail
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "app.log")
        with open(path, "wb") as handle:
            handle.write(content)
        task = FileSourceTask()
        task.start(
            {
                "file": path,
                "topic": "logs",
                "watch": "false",
                "poll.interval.ms": 1,
                "batch.size": batch,
                "encoding": encoding,
            }
        )
        try:
            got = []
            while polled := task.poll_batch():
                assert sum(len(item) for item in polled) <= batch  # type: ignore[arg-type]
                for item in polled:
                    assert isinstance(item, SourceBatch)
                    records = item.records()
                    assert item.offset == records[-1].source_offset
                    got += [(r.value, r.source_offset) for r in records]
        finally:
            task.stop()
        assert got == _expected(content, encoding, os.stat(path).st_ino)


def test_a_line_longer_than_a_read_is_one_record(tmp_path: Any) -> None:
    path = tmp_path / "long.log"
    long = "é" * 100_000
    path.write_text(f"{long}\nshort\n", encoding="utf-8")
    task = FileSourceTask()
    task.start({"file": str(path), "topic": "logs", "watch": "false", "poll.interval.ms": 1})
    try:
        records = task.poll() or []
    finally:
        task.stop()
    assert [r.value for r in records] == [long, "short"]
    assert records[-1].source_offset["position"] == path.stat().st_size
